"""TEXTBOOK.HOEFFDING: the mean of n i.i.d. samples in [0, 1] rarely exceeds its expectation.

Hoeffding (1963, Thm 2): for ``X_1, ..., X_n`` i.i.d. in ``[0, 1]`` and ``t > 0``,

    P(mean - E X >= t) <= exp(-2 n t^2).

A probability bound: each configuration ``(n, t, distribution)`` runs many independent
trials and the exceedance rule judges the frequency of ``mean - E X >= t`` against the
bound (Clopper–Pearson). TEXTBOOK.HOEFFDING-PLANTED claims ``exp(-4 n t^2)``, which a fair
coin refutes at ``n = 1, t = 1/2`` (probability 1/2 against ``e^-1``).
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import pandas as pd
import torch

from cflbounds.claims import Claim, Domain, Instance, Interval, Parameter, rules, validate_params

CONSTANTS = {"n": [Interval(Integral, 1, None, closed="left")], "t": [Interval(Real, 0, 1, closed="right")]}
SAMPLES = (1, 2, 5, 10, 20, 50)
DEVIATIONS = (0.05, 0.1, 0.2, 0.3, 0.5)
# distributions on [0, 1] with their exact means; the fair coin is the extremal case of the inequality
DISTRIBUTIONS = {"fair coin": 0.5, "coin p = 0.1": 0.1, "uniform": 0.5, "beta(1/2, 1/2)": 0.5}
TRIALS = {"smoke": 4_000, "default": 40_000, "paper": 400_000}
# "mean - E >= t" decided with 1e-12 of leeway towards the event: k/n - p is not exact in floats
# (0.6 - 0.5 = 0.0999...), and a boundary case is an exceedance; a continuous law puts ~0 mass there
LEEWAY = 1e-12

PARAMETERS = """
    Parameters
    ----------
    n : int
        number of i.i.d. samples, each in [0, 1]
    t : float
        deviation of the sample mean above its expectation, 0 < t <= 1
"""


@validate_params(CONSTANTS)
def hoeffding_bound(n, t) -> float:
    return math.exp(-2.0 * n * t * t)


@validate_params(CONSTANTS)
def planted_hoeffding_bound(n, t) -> float:
    return math.exp(-4.0 * n * t * t)


hoeffding_bound.__doc__ = """``exp(-2 n t^2)``: Hoeffding's bound on P(mean - E X >= t) (Hoeffding 1963, Thm 2).
""" + PARAMETERS
planted_hoeffding_bound.__doc__ = """A planted error: ``exp(-4 n t^2)``, below the truth for a fair coin at small n.
""" + PARAMETERS


def _draw(name: str, shape, generator) -> torch.Tensor:
    uniform = torch.rand(shape, generator=generator, dtype=torch.float64)
    if name == "fair coin":
        return (uniform < 0.5).double()
    if name == "coin p = 0.1":
        return (uniform < 0.1).double()
    if name == "uniform":
        return uniform
    return torch.sin(0.5 * math.pi * uniform) ** 2  # arcsine law = beta(1/2, 1/2), exactly by inversion


def deviations(ctx) -> pd.DataFrame:
    """One row per configuration (distribution, n, t) with its exceedances out of the trials;
    drawn in one batch per (distribution, n) on the CPU generator (the same on every device).
    Shared by both claims."""
    return ctx.shared(("textbook-hoeffding", ctx.scale, ctx.seed), lambda: _run(ctx))


def _run(ctx) -> pd.DataFrame:
    trials, rows = TRIALS[ctx.scale], []
    generator = torch.Generator().manual_seed(ctx.seed)
    thresholds = torch.tensor(DEVIATIONS, dtype=torch.float64, device=ctx.device)
    for name, mean in DISTRIBUTIONS.items():
        for n in SAMPLES:
            excess = _draw(name, (trials, n), generator).to(ctx.device).mean(dim=1) - mean  # (trials,)
            counts = (excess[:, None] >= thresholds - LEEWAY).sum(dim=0).cpu().numpy()
            rows += [{"distribution": name, "mean": mean, "n": n, "t": t, "trials": trials, "exceedances": int(k)}
                     for t, k in zip(DEVIATIONS, counts)]
    return pd.DataFrame(rows)


def _checker(claim_id: str, bound):
    def check(ctx):
        table = deviations(ctx)
        table = table.assign(bound=[bound(int(n), float(t)) for n, t in zip(table["n"], table["t"])])
        ctx.save_table(claim_id.lower().replace(".", "_").replace("-", "_"), table)
        labels = [f"{d}, n={n}, t={t:g}" for d, n, t in zip(table["distribution"], table["n"], table["t"])]
        decision = rules.exceedance_counts(table["exceedances"], table["trials"], table["bound"], labels=labels,
                                    title=f"{claim_id}: frequency of mean - E >= t against the bound")
        return decision.as_verdict(claim_id, ctx, details={
            "configurations": f"distributions {', '.join(DISTRIBUTIONS)}; n in {SAMPLES}; t in {DEVIATIONS}; "
                              f"{TRIALS[ctx.scale]} trials each",
            "event": f"mean - E X >= t, decided with {LEEWAY:g} of leeway towards the event (float rounding of k/n)"})

    return check


# -- the admissible domain, for `cflbounds falsify`: the extremal laws of Hoeffding's inequality --------
SEARCH_TRIALS = 4000  # trials per evaluation; confirmation pools 20 fresh seeds of them


def _instance(point: dict, seed: int, bound) -> Instance:
    """SEARCH_TRIALS means of n Bernoulli(p) samples: how often mean - p >= t."""
    generator = torch.Generator().manual_seed(seed)
    n, t, p = point["n"], point["t"], point["p"]
    draws = (torch.rand((SEARCH_TRIALS, n), generator=generator, dtype=torch.float64) < p).double()
    exceedances = int(((draws.mean(dim=1) - p) >= t - LEEWAY).sum())
    return Instance(exceedances / SEARCH_TRIALS, bound(n, t), exceedances=exceedances, trials=SEARCH_TRIALS)


def _domain(bound) -> Domain:
    return Domain([Parameter("n", 1, 200, integer=True, log=True, description="samples"),
                   Parameter("t", 0.01, 1.0, log=True, simple=0.5, description="deviation"),
                   Parameter("p", 0.01, 0.99, simple=0.5, description="the coin's bias: Bernoulli(p) samples")],
                  lambda points, seeds, ctx: [_instance(q, s, bound) for q, s in zip(points, seeds)],
                  rule="probability", note="coins of bias p, n samples, deviation t")


HOEFFDING = Claim("TEXTBOOK.HOEFFDING", "For n i.i.d. samples in [0, 1]: P(mean - E >= t) <= exp(-2 n t^2).",
                  check=_checker("TEXTBOOK.HOEFFDING", hoeffding_bound), bound=hoeffding_bound,
                  domain=_domain(hoeffding_bound),
                  reference="Hoeffding, J. Amer. Statist. Assoc. 58 (1963), Thm 2")
HOEFFDING_PLANTED = Claim("TEXTBOOK.HOEFFDING-PLANTED", "A planted error: the same with exp(-4 n t^2).",
                          check=_checker("TEXTBOOK.HOEFFDING-PLANTED", planted_hoeffding_bound),
                          bound=planted_hoeffding_bound, domain=_domain(planted_hoeffding_bound),
                          reference="planted (false) twin of TEXTBOOK.HOEFFDING")
