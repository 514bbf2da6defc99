"""The ``cflbounds`` pytest plugin (entry point ``pytest11``): bound compliance as test items.

``pytest --cflbounds 'PATTERN' [--cflbounds-scale smoke|default|paper] [--cflbounds-seed S]``
adds one test item per claim matching a pattern (``MGD.*``, ``TEXTBOOK.GD``; the option may
be repeated); they are counted in the "collected N items" line like any test. An item runs the
claim's check and, for a claim with a domain, its search, as ``cflbounds verify`` does
(:func:`cflbounds.falsify.judge`, with the scale's search) and passes when the verdict is ``holds``
or ``rate-consistent``; otherwise its failure report shows the verdict, the summary, the
evidence and the command that reproduces it. A claim whose own code raised (verdict ``error``)
fails with that code's traceback, as pytest shows a test that raised.

What ``--cflbounds`` adds to pytest's collection:

* with no file or directory named (``pytest --cflbounds 'TEXTBOOK.*'``), the claims **alone**:
  pytest collects no test file (``testpaths`` and the current directory are not searched) and
  loads no ``conftest.py``, so the command means the same in any directory: in a plugin's folder
  (whose tests, such as a regression test ``cflbounds falsify --emit-test`` wrote, fail by design
  while the claim is violated) and in cflbounds' checkout (whose ``tests/conftest.py`` hides
  installed plugins from its own suite) alike;
* with files or directories named (``pytest tests --cflbounds 'TEXTBOOK.*'``), the claims beside
  the tests collected from them, as any pytest run collects them (their ``conftest.py`` files
  included).

For custom tests, the fixture ``cflbounds_verify`` returns :func:`cflbounds.falsify.judge`
(the final verdict, as the command gives it) with the session's scale and seed as defaults; :func:`cflbounds.verify.assert_claim` and
:func:`cflbounds.verify.assert_within_bound` assert on a verdict or on your own measurements.

Without ``--cflbounds`` the plugin adds nothing, and at collection it imports nothing of
cflbounds (torch and the checks are imported only when an item or the fixture runs).
"""
from __future__ import annotations

import shlex

import pytest

SCALES = ("smoke", "default", "paper")  # cflbounds.verify.context.SCALES, without importing it


def pytest_addoption(parser):
    group = parser.getgroup("cflbounds", "check convergence-theorem claims with cflbounds")
    group.addoption("--cflbounds", action="append", default=[], metavar="PATTERN",
                    help="add one test per cflbounds claim matching PATTERN (a claim ID, PAPER.NAME, or a shell "
                         "pattern such as 'PAPER.*'; repeatable); `cflbounds claims` lists the IDs. With no file or "
                         "directory named, pytest collects these claims alone (no test file, no conftest.py); name "
                         "paths to collect their tests as well")
    group.addoption("--cflbounds-scale", choices=SCALES, default="smoke",
                    help="size of each claim's experiment: smoke (seconds, default), default (the `cflbounds "
                         "verify` default, minutes in all) or paper (the papers' sizes)")
    group.addoption("--cflbounds-seed", type=_seed, default=0, metavar="S",
                    help="seed of every claim's experiment, an int in [0, 2^63 - 1] (a verdict is reproducible "
                         "from it; default 0)")


def _seed(text: str) -> int:
    """``--cflbounds-seed``: an int in [0, 2^63 - 1], as ``cflbounds verify --seed`` takes."""
    import argparse

    from cflbounds._schemas import MAX_SEED

    try:
        seed = int(text)
    except ValueError:
        seed = None
    if seed is None or not 0 <= seed <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be an int in [0, 2^63 - 1]. Got {text!r:.60} instead")
    return seed


class ClaimFailed(Exception):
    """A claim's verdict is not a passing one; carries the verdict for the report."""

    def __init__(self, verdict):
        super().__init__(verdict.summary)
        self.verdict = verdict


class ClaimItem(pytest.Item):
    """One claim checked at the session's scale and seed."""

    def __init__(self, *, claim_id: str, **kwargs):
        super().__init__(**kwargs)
        self.claim_id = claim_id
        self.add_marker("cflbounds")

    def _settings(self):
        return self.config.getoption("cflbounds_scale"), self.config.getoption("cflbounds_seed")

    def reproduction(self) -> str:
        scale, seed = self._settings()
        return shlex.join(["cflbounds", "verify", self.claim_id, "--scale", scale, "--seed", str(seed)])

    def runtest(self):
        from cflbounds.falsify import judge
        from cflbounds.verify import PASSING

        scale, seed = self._settings()
        verdict = judge(self.claim_id, scale=scale, seed=seed)
        self.user_properties.append(("cflbounds_verdict", verdict.verdict))
        if verdict.verdict == "error":
            self.add_report_section("call", "the claim's traceback", verdict.details.get("error_traceback", ""))
        else:
            self.add_report_section("call", "cflbounds evidence", _evidence(verdict))
        if verdict.verdict not in PASSING:
            raise ClaimFailed(verdict)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ClaimFailed):
            return _describe(excinfo.value.verdict, self.reproduction())
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"cflbounds claim {self.claim_id}"


def _describe(verdict, reproduction: str) -> str:
    """The failure's headline: verdict, statement, summary, sample and the command to rerun it."""
    if verdict.verdict == "error":
        return (f"{verdict.id}: error: the claim's own code failed, so it was not judged\n"
                f"statement: {verdict.statement}\n"
                f"{verdict.summary}\n"
                f"reproduce: {reproduction} --raise   (stops with the traceback)")
    return (f"{verdict.id}: {verdict.verdict} (passing verdicts: holds, rate-consistent)\n"
            f"statement: {verdict.statement}\n"
            f"summary: {verdict.summary}\n"
            f"seed {verdict.seed}, scale {verdict.scale}, {verdict.trials} trials, confidence {verdict.confidence}\n"
            f"reproduce: {reproduction}")


def _evidence(verdict) -> str:
    """The verdict's evidence, one number per line (a report section of the item)."""
    return "\n".join(f"{key} = {value:.6g}" if isinstance(value, float) else f"{key} = {value}"
                     for key, value in verdict.evidence.items())


def _claims_alone(options) -> bool:
    """``--cflbounds`` given and no file or directory: the session collects the claims alone
    (module docstring). ``options``: the parsed command line (``config.option`` or, before it
    is parsed in full, ``early_config.known_args_namespace``)."""
    return bool(getattr(options, "cflbounds", None)) and not getattr(options, "file_or_dir", None)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    # pytest loads the conftest.py files of testpaths (or of the current directory and its
    # test* folders) before it collects anything; a claims-alone session collects no test file,
    # so it loads none: one of them may change what cflbounds sees (cflbounds' own hides plugins)
    if _claims_alone(early_config.known_args_namespace):
        early_config.known_args_namespace.noconftest = True


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    if not _claims_alone(session.config.option):
        return None
    session.perform_collect([])  # no path: pytest_collection_modifyitems below adds the claims
    return True


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so those filter the claims too
def pytest_collection_modifyitems(session, config, items):
    patterns = config.getoption("cflbounds")
    if not patterns:
        return
    from cflbounds import InvalidParameterError
    from cflbounds.verify.run import expand_claim_ids

    try:
        claim_ids = expand_claim_ids(patterns)
    except InvalidParameterError as error:
        raise pytest.UsageError(f"--cflbounds: {error}") from None
    claim_items = [ClaimItem.from_parent(session, name=claim_id, claim_id=claim_id) for claim_id in claim_ids]
    # reported as collected, so that "collected N items" (and --co) count them like any test
    config.hook.pytest_collectreport(report=pytest.CollectReport(f"{session.nodeid}::cflbounds", "passed", None,
                                                                 claim_items))
    items.extend(claim_items)


def pytest_configure(config):
    config.addinivalue_line("markers", "cflbounds: a claim checked by the cflbounds plugin (--cflbounds)")


@pytest.fixture
def cflbounds_verify(request):
    """:func:`cflbounds.falsify.judge` (the final verdict, as ``cflbounds verify`` gives it) with
    this session's ``--cflbounds-scale`` and ``--cflbounds-seed`` as defaults::

        def test_my_claim(cflbounds_verify):
            verdict = cflbounds_verify("TEXTBOOK.GD")
            assert verdict.evidence["violations"] == 0
    """
    from cflbounds.falsify import judge

    scale, seed = request.config.getoption("cflbounds_scale"), request.config.getoption("cflbounds_seed")

    def run(claim_id: str, *, scale: str = scale, seed: int = seed, **options):
        return judge(claim_id, scale=scale, seed=seed, **options)

    return run
