"""What each claim costs: measured seconds per claim and scale, and a run's ETA from them.

``claim_costs.json`` (beside this module) is written by ``benchmarks/measure_claim_costs.py``,
which runs the claims of one scale as ``cflbounds verify`` does (in registry order, sharing
experiments in one context) and records each claim's seconds with when, where and under what
load it measured them. The ETA scales the recorded costs of the claims still to run by how
much slower (or faster) the finished claims ran than recorded, so it adapts to a busy machine.
"""
from __future__ import annotations

import json
from pathlib import Path

__all__ = ["COSTS_FILE", "claim_costs", "lower_bound_claims", "cost_cell", "cost_measurement", "measurement_text",
           "remaining_seconds", "duration", "rough_duration"]

COSTS_FILE = Path(__file__).with_name("claim_costs.json")


def _scale(scale: str, path: Path | None) -> dict:
    path = path or COSTS_FILE
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"scales": {}}
    return data["scales"].get(scale, {})


def claim_costs(scale: str, path: Path | None = None) -> dict[str, float]:
    """Recorded seconds per claim ID at ``scale`` (empty when that scale was never measured);
    ``path``: the costs file (default :data:`COSTS_FILE`)."""
    return dict(_scale(scale, path).get("seconds", {}))


def lower_bound_claims(scale: str, path: Path | None = None) -> set[str]:
    """Claims whose recorded cost at ``scale`` is only a lower bound (stopped at a time limit)."""
    return set(_scale(scale, path).get("at_least", []))


def cost_cell(claim: str, scale: str, path: Path | None = None) -> str:
    """A claim's recorded seconds for a table: ``12.3``, ``>300`` when stopped there, ``-`` if never measured."""
    costs = claim_costs(scale, path)
    if claim not in costs:
        return "-"
    return f">{costs[claim]:.0f}" if claim in lower_bound_claims(scale, path) else f"{costs[claim]:.1f}"


def cost_measurement(scale: str, path: Path | None = None) -> dict | None:
    """When, where and under what load ``scale`` was measured (None if it never was)."""
    return _scale(scale, path).get("measured")


def measurement_text(scale: str, path: Path | None = None) -> str:
    """When, where and under what load ``scale``'s costs were measured, as a phrase."""
    info = cost_measurement(scale, path)
    if info is None:
        return "not measured yet"
    load = (f", load average {info['load_before'][0]:.1f} before and {info['load_after'][0]:.1f} after"
            if "load_before" in info else "")  # a verify run's own costs record no load (measure_claim_costs.py)
    text = (f"measured {info['date'][:10]} on {info['cpus']} CPUs ({info['processor']}), {info['threads']} torch "
            f"thread(s){load}" + (f", {info['mode']}" if info.get("mode") else ""))
    text += f"; {info['note']}" if info.get("note") else ""
    for extra in _scale(scale, path).get("added", []):  # claims measured later, the rest kept (--add)
        text += (f"; {len(extra['claims'])} claims added {extra['date'][:10]} ({extra['threads']} torch thread(s)"
                 + (f", {extra['note']}" if extra.get("note") else "") + ")")
    return text


def remaining_seconds(costs: dict[str, float], finished: dict[str, float], pending: list[str],
                      running: tuple[str, float] | None = None) -> float | None:
    """Seconds still to go: the recorded ``costs`` of the ``pending`` claims (and the rest of
    the ``running`` one, given as ``(claim ID, seconds so far)``), each times the observed
    speed, sum(seconds taken) / sum(recorded costs) over the ``finished`` claims that have a
    recorded cost (1 before any has finished). A claim without a recorded cost is expected to
    take the mean time of the finished claims. None when nothing allows an estimate.
    """
    timed = [(seconds, costs[claim]) for claim, seconds in finished.items() if costs.get(claim, 0) > 0]
    speed = sum(s for s, _ in timed) / sum(c for _, c in timed) if timed else 1.0
    fallback = sum(finished.values()) / len(finished) if finished else None

    def expected(claim):
        return costs[claim] * speed if claim in costs else fallback

    claims = list(pending) + ([running[0]] if running else [])
    if any(expected(claim) is None for claim in claims):
        return None
    total = sum(expected(claim) for claim in pending)
    if running:
        total += max(expected(running[0]) - running[1], 0.0)
    return total


def rough_duration(seconds: float) -> str:
    """``seconds`` to two figures in the unit that suits it: 45 s, 12 min, 3.4 h."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.2g} h"


def duration(seconds: float | None) -> str:
    """``seconds`` for a person: 0:42, 12:05, 2:03:10; ``?`` when unknown."""
    if seconds is None:
        return "?"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
