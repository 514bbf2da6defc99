"""Local GD's claims (cflbounds.papers.localgd) against a planted wrong constant: the domain of
LOCALGD.T1 flags Theorem 1 with one constant changed (the algorithm's closed forms are
tests/test_localgd_algorithm.py's; each claim's verdict at smoke tests/test_smoke_verdicts.py's)."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

from cflbounds.bounds import localgd as localgd_bounds
from cflbounds.papers.localgd import domain as localgd_domain, runs as localgd_runs

CTX = SimpleNamespace(device="cpu")


def test_a_planted_wrong_constant_in_local_gd_theorem1_is_flagged_by_its_domain(monkeypatch):
    """LOCALGD.T1's domain: Theorem 1's
    2 ||x_0 - x*||^2/(gamma T) planted as 0.002 ||x_0 - x*||^2/(gamma T) is exceeded at the domain's
    simplest point, the printed constant is not."""
    source = inspect.getsource(localgd_bounds)
    old = '"optimisation": 2.0 * initial_distance_sq / (gamma * T)'
    assert source.count(old) == 1
    namespace = {"__name__": "cflbounds.bounds.localgd_planted", "__package__": "cflbounds.bounds"}
    exec(compile(source.replace(old, old.replace("2.0", "0.002")), localgd_bounds.__file__, "exec"), namespace)
    d = localgd_domain.t1_domain()
    point = {p.name: p.simplest for p in d.parameters}
    honest = d.evaluate([point], [0], CTX)[0]
    monkeypatch.setattr(localgd_runs, "bounds", SimpleNamespace(**namespace))
    wrong = d.evaluate([point], [0], CTX)[0]
    assert honest.admissible and d.ratio(honest) <= 1
    assert wrong.admissible and d.ratio(wrong) > 1, (wrong.measured, wrong.bound)
