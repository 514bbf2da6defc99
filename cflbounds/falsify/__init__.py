"""``cflbounds falsify``: search a claim's admissible domain for its worst case, shrink what it
finds, confirm it on fresh seeds and write it down (a replayable counterexample, a regression
test). A claim takes part by declaring a :class:`~cflbounds.verify.domain.Domain`. ``verify``
runs the same search after a claim's designed experiment and gives one final verdict
(:mod:`.judge`)."""
from .judge import MIN_COVERAGE_POINTS, SEARCH_PLANS, SearchPlan, default_plan, domain_verdict, judge, searched_verdict
from .records import emit_test, read_counterexample, replay_counterexample, write_counterexample
from .run import DEFAULT_BUDGET, OUTCOMES, falsifiable_claim, falsify_claim, falsify_domain

__all__ = ["falsify_claim", "falsify_domain", "falsifiable_claim", "replay_counterexample",
           "read_counterexample", "write_counterexample", "emit_test", "DEFAULT_BUDGET", "OUTCOMES",
           "judge", "SearchPlan", "default_plan", "domain_verdict", "searched_verdict", "SEARCH_PLANS",
           "MIN_COVERAGE_POINTS"]
