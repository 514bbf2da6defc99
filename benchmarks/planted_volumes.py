"""How often ``cflbounds falsify`` finds a violating region of known volume, and that a tight
claim is never called violated (issue 25, section 4).

    python benchmarks/planted_volumes.py                      # 20 seeds x 8 claims at 6,000 evaluations
    python benchmarks/planted_volumes.py --seeds 3 --evaluations 2000   # a quick look

Planted claims on a 4-parameter domain (two linear, two log-scale parameters), each judged as
falsify judges a plugin's claim (:func:`cflbounds.falsify.falsify_domain`):

* ``needle``: violated exactly in an axis-aligned box of the search's unit cube of volume
  1e-2, 1e-3 or 1e-4 (side ``volume^(1/4)``, centred off the middle and off the corners),
  and flat outside it, so that no slope leads the search there: what only covering the space
  finds. ``deterministic``: measured / bound 1.02 inside, 0.5 outside. ``probability``: the
  event has probability 0.3 inside, 0.05 outside, against the allowed 0.1, 200 trials an
  evaluation.
* ``tight``: true, with equality on half the cube (the first coordinate above 1/2) and below
  elsewhere. ``deterministic``: measured = bound up to 1e-12 relative rounding (rtol 1e-9);
  ``probability``: the event's probability equals the allowed 0.1 there. A confirmation at
  95 % calls a probability claim violated by chance at most 5 % of the time (two points may
  be confirmed, each at one-sided 2.5 %): over 20 seeds, 0 to 3 are within that.

"Found": the outcome is ``violated`` (confirmed on fresh seeds). The table gives, per claim,
found / seeds, how many of those the coverage phase hit itself, the median evaluation of the
first violating point, and the coverage statement's bound ``X`` (the violating share of the
admissible volume ruled out at 95 %, from the first fifth of the evaluations).

The evaluation count stands for the default budget (``--budget 120``) as a user meets it: on
TEXTBOOK.GD, the cheapest claim a plugin ships (examples/textbook), a 120 s search made 5,760
evaluations on this machine (2 cores shared, load 6-10, 2026-11-28), so the table runs 6,000.
A count, not seconds, so that the table is reproducible on any machine; and a count, because
these planted claims cost almost nothing (120 s of search on one made 422,952 evaluations:
``--measure`` repeats that), which would make 120 s a budget no real claim gets.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

VOLUMES = (1e-2, 1e-3, 1e-4)
RULES = ("deterministic", "probability")
CENTRE = np.array([0.62, 0.31, 0.77, 0.45])  # the box's centre on the unit cube
TRIALS = 200  # per evaluation of a probability claim
ALLOWED = 0.1
EVALUATIONS = 6_000  # the default budget's equivalent on a cheap claim (module docstring)


def parameters():
    from cflbounds.claims import Parameter

    return [Parameter("a", 0.0, 1.0), Parameter("b", 1e-3, 1.0, log=True), Parameter("c", -1.0, 1.0),
            Parameter("d", 1.0, 100.0, log=True)]


def _units(domain, points) -> np.ndarray:
    return np.array([domain.encode(point) for point in points])


def inside(units: np.ndarray, volume: float) -> np.ndarray:
    """Which unit points fall in the box of ``volume`` around :data:`CENTRE`."""
    half = volume ** (1 / len(CENTRE)) / 2
    return np.all(np.abs(units - CENTRE) <= half, axis=-1)


def needle_domain(volume: float, rule: str):
    """Violated exactly in the box of ``volume`` (module docstring)."""
    from cflbounds.claims import Domain, Instance

    def evaluate(points, seeds, ctx):
        hit = inside(_units(domain, points), volume)
        if rule == "deterministic":
            return [Instance(1.02 if h else 0.5, 1.0) for h in hit]
        return [_coin(0.3 if h else 0.05, seed) for h, seed in zip(hit, seeds)]

    domain = Domain(parameters(), evaluate, rule=rule, note=f"a box of volume {volume:g}")
    return domain


def tight_domain(rule: str):
    """True, with equality where the first coordinate is above 1/2 (module docstring)."""
    from cflbounds.claims import Domain, Instance

    def evaluate(points, seeds, ctx):
        share = np.minimum(1.0, 0.5 + _units(domain, points)[:, 0])
        if rule == "deterministic":
            rounding = [1 + 1e-12 * np.random.default_rng(seed).uniform(-1, 1) for seed in seeds]
            return [Instance(float(s * r), 1.0) for s, r in zip(share, rounding)]
        return [_coin(ALLOWED * s, seed) for s, seed in zip(share, seeds)]

    domain = Domain(parameters(), evaluate, rule=rule, note="tight on half the cube")
    return domain


def _coin(probability: float, seed: int):
    from cflbounds.claims import Instance

    hits = int(np.random.default_rng(seed).binomial(TRIALS, probability))
    return Instance(hits / TRIALS, ALLOWED, exceedances=hits, trials=TRIALS)


def planted() -> dict:
    """Every planted claim of the table by name: the needles, then the tight ones."""
    claims = {f"needle {volume:g} {rule}": needle_domain(volume, rule) for rule in RULES for volume in VOLUMES}
    claims.update({f"tight {rule}": tight_domain(rule) for rule in RULES})
    return claims


# a score only the box gives: log(1.02) inside against log(0.5); a frequency over 0.2 (0.3 expected inside)
# against 0.05 outside, where 200 trials exceed 0.2 with probability below 1e-12
INSIDE_SCORE = {"deterministic": 0.0, "probability": 0.1}


def run(name: str, domain, seed: int, evaluations: int | None = None, budget: float | None = None) -> dict:
    """One falsify run of a planted claim: its outcome, the first evaluation inside the region
    (from the search's best-so-far trace: the first step to a score only the region gives),
    whether the coverage phase made it, and the coverage statement's bound."""
    from cflbounds.falsify import falsify_domain

    started = time.monotonic()
    result = falsify_domain(domain, claim_id=name, seed=seed, budget=budget, max_evaluations=evaluations)
    trace, coverage = result["search"]["trace"], result["coverage"]
    first = None if name.startswith("tight") else next(  # a tight claim has no region to enter
        (number for number, score in zip(trace["best"]["evaluation"], trace["best"]["score"])
         if score > INSIDE_SCORE[domain.rule]), None)
    return {"name": name, "seed": seed, "found": result["outcome"] == "violated", "first": first,
            "covered": first is not None and first <= coverage["points"], "evaluations": result["evaluations"],
            "volume_bound": coverage["volume_bound"], "statement": coverage["statement"],
            "seconds": time.monotonic() - started}


def table(rows: list[dict], seeds: int) -> str:
    """The markdown table of ``rows`` (one per run), one line per planted claim."""
    lines = ["| planted claim | called violated | of which the coverage phase hit | first violating evaluation "
             "(median) | coverage bound X (median) |", "|---|---|---|---|---|"]
    for name in dict.fromkeys(row["name"] for row in rows):
        mine = [row for row in rows if row["name"] == name]
        firsts = [row["first"] for row in mine if row["first"] is not None]
        lines.append(f"| {name} | {sum(r['found'] for r in mine)} / {len(mine)} | {sum(r['covered'] for r in mine)} | "
                     f"{statistics.median(firsts) if firsts else '-'} | "
                     f"{statistics.median(r['volume_bound'] for r in mine):.2g} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--evaluations", type=int, default=EVALUATIONS)
    parser.add_argument("--only", default="", help="run the planted claims whose name contains this")
    parser.add_argument("--measure", action="store_true",
                        help="measure the evaluations a default-budget (120 s) search makes on a needle, and stop")
    args = parser.parse_args(argv)
    if args.measure:
        row = run("needle 0.01 deterministic", needle_domain(1e-2, "deterministic"), 0, budget=120.0)
        print(f"120 s of search: {row['evaluations']} evaluations ({row['seconds']:.0f} s with the confirmation)")
        return 0
    rows = []
    for name, domain in planted().items():
        if args.only not in name:
            continue
        for seed in range(args.seeds):
            rows.append(run(name, domain, seed, evaluations=args.evaluations))
            row = rows[-1]
            print(f"{name} seed {seed}: {'violated' if row['found'] else 'none'} (first {row['first']}, "
                  f"{row['seconds']:.0f} s)", file=sys.stderr, flush=True)
    print(f"{args.seeds} seeds, {args.evaluations} evaluations each\n")
    print(table(rows, args.seeds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
