"""What the catalogue's FedAvg, local GD and SCAFFOLD claims share: their quadratic problems, starts
at a stated distance from the optimum, replicated runs, rounds to an accuracy, and rates read in
the direction a theorem states them.

Problems are :func:`~cflbounds.synthetic.heterogeneous_quadratics.make_heterogeneous_quadratics`
with ``L = 1`` (every claim here is invariant under ``F -> c F``: both sides of each bound scale
alike, and the rates' terms are ratios of such constants), one problem per seed: problem ``b``
depends on ``seeds[b]`` alone, so a domain's instance is the same evaluated alone or in a batch.

Rates: :func:`cflbounds.claims.rules.rate` judges ``error = O(x^p)`` as ``x -> 0`` from the slope
of ``log error`` against ``log x^p``. The catalogue's rates run other ways: rounds that may grow at
most like ``y^p`` as ``y`` grows (``R = O(y^p)``: :func:`growth_rate`) and quantities that may fall
no faster than ``x^p`` as ``x -> 0`` (``Omega(x^p)``: :func:`floor_rate`). Both are that rule on a
transformed error whose slope is 1 exactly at the stated rate (``R x^(2p)`` against ``x^p`` with
``x = 1/y``; ``x^(2p) / value`` against ``x^p``), so the rule's bootstrap interval and its verdict
words are reused unchanged; the summaries give the slope back in the claim's own terms.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from cflbounds.claims import rules
from cflbounds.synthetic.heterogeneous_quadratics import make_heterogeneous_quadratics
from cflbounds.synthetic.seeding import stream

__all__ = ["geometric_weights", "quadratic_problems", "starts", "stack", "replicate", "rounds_to", "growth_rate",
           "floor_rate"]

_STREAM_START = 61


def geometric_weights(clients: int, ratio: float) -> np.ndarray:
    """Client weights ``p_k`` proportional to ``ratio^(-k/(N-1))``: ``p_max/p_min = ratio`` (uniform at 1)."""
    weights = float(ratio) ** (-np.arange(clients) / max(clients - 1, 1))
    return weights / weights.sum()


def quadratic_problems(seeds, *, clients: int, d: int, mu_over_L: float, heterogeneity: float,
                       hessian_spread: float, noise=0.0, weights=None, device: str = "cpu"):
    """One heterogeneous quadratic problem per seed (``L = 1``, ``mu = mu_over_L``; ``noise`` the
    sigma_k, one value or one per client; ``weights`` the p_k, uniform by default)."""
    return make_heterogeneous_quadratics(
        clients, d, strong_convexity=float(mu_over_L), smoothness=1.0, heterogeneity=float(heterogeneity),
        hessian_spread=float(hessian_spread), noise_std=noise, weights=weights, batch_size=len(seeds),
        seed=[int(s) for s in seeds], device=device)


def starts(problem, distance, seeds) -> np.ndarray:
    """Starts ``w* + distance u`` ``(B, d)``, ``u`` uniform on the unit sphere from ``seeds[b]``'s
    own stream: ``||w_start - w*||^2 = distance^2`` exactly (the bounds' initial distance)."""
    directions = np.stack([stream(int(s), _STREAM_START).standard_normal(problem.d) for s in seeds])
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return problem.minimizer + np.asarray(distance, dtype=float).reshape(-1, 1) * directions


def stack(problems):
    """Problems of one shape (and one ``weights``, ``noise_std``) as one batch, in order: each keeps
    its own seed, so its runs are those it has alone."""
    first = problems[0]
    return replace(first, hessians=torch.cat([p.hessians for p in problems]), optima=torch.cat([p.optima for p in problems]),
                   hessians_exact=np.concatenate([p.hessians_exact for p in problems]),
                   optima_exact=np.concatenate([p.optima_exact for p in problems]),
                   seeds=tuple(s for p in problems for s in p.seeds))


def replicate(problem, copies: int):
    """Each problem of the batch ``copies`` times, problem-major: runs of one problem that differ
    only by their run seed (``seed=np.tile(np.arange(copies), B)``)."""
    return problem.subset(np.repeat(np.arange(problem.batch_size), copies).tolist())


def rounds_to(gaps: np.ndarray, accuracy) -> np.ndarray:
    """The first round (index along the last axis) whose gap is at most ``accuracy``; ``inf`` when
    none is (never reached, or diverged)."""
    below = np.asarray(gaps) <= np.asarray(accuracy)[..., None]
    return np.where(below.any(axis=-1), below.argmax(axis=-1), np.inf)


def _translated(decision, exponent, flip: bool):
    """The slope of the claim's own quantity from the rule's: ``s = p (2 - b)``."""
    evidence = decision.evidence
    slope = exponent * (2.0 - evidence["slope"])
    low, high = exponent * (2.0 - evidence["slope_high"]), exponent * (2.0 - evidence["slope_low"])
    constants = np.array([evidence["implied_constant_min"], evidence["implied_constant_max"]])
    if flip:
        constants = 1.0 / constants[::-1]
    return slope, (low, high), constants


def _rate_plot(variable_values, values, quantile, exponent, constant, quantity, variable, allowed) -> dict:
    """The claim's quantity (its quantile over trials) against its variable, log-log, beside the
    stated rate through the median implied constant."""
    measured = [float(np.quantile(np.asarray(v, dtype=float), quantile)) for v in values]
    x = np.asarray(variable_values, dtype=float)
    return {"kind": "rate", "title": f"{quantity} against {variable} ({allowed} its power {exponent:g})",
            "xlabel": variable, "ylabel": f"{quantity} ({quantile:.0%} quantile)", "logx": True, "logy": True,
            "x": x.tolist(), "series": [{"label": "measured", "y": measured},
                                        {"label": f"({variable})^{exponent:g} (median constant {constant:.3g})",
                                         "y": (constant * x**exponent).tolist(), "style": "dashed"}]}


def _directed_rate(points, x, errors, values, *, exponent: float, flip: bool, quantile: float, allowed: str,
                   quantity: str, variable: str, seed: int, min_decades: float, n_boot: int):
    """The rule on the transformed ``errors`` against ``x^exponent`` (module docstring), its slope
    in the claim's own terms with its interval and implied constants, and the plot of ``values``
    (their ``quantile``) against ``points`` beside the stated rate."""
    decision = rules.rate(x, errors, exponent=exponent, seed=seed, min_decades=min_decades, n_boot=n_boot)
    slope, interval, constants = _translated(decision, exponent, flip=flip)
    constant = float(np.median([np.quantile(np.asarray(v, float), quantile) / p**exponent
                                for v, p in zip(values, points)]))
    plot = [_rate_plot(points, values, quantile, exponent, constant, quantity, variable, allowed)]
    return decision, slope, interval, constants, plot


def growth_rate(y, values, *, exponent: float, quantity: str, variable: str, seed: int = 0,
                min_decades: float = 1.5, n_boot: int = 2000):
    """``values = O(y^exponent)`` as ``y`` grows (rounds that may grow at most so fast): the rule on
    ``values x^(2 exponent)`` against ``x^exponent``, ``x = 1/y`` (module docstring). ``values``:
    ``(points, trials)`` or a list of arrays, positive and finite. Returns the decision (its summary
    in the claim's terms, its evidence with ``growth_slope`` and its interval) and the slope."""
    y = np.asarray(y, dtype=float)
    x = 1.0 / y
    errors = [np.asarray(v, dtype=float) * xi ** (2 * exponent) for v, xi in zip(values, x)]
    decision, slope, (low, high), constants, plot = _directed_rate(
        y, x, errors, values, exponent=exponent, flip=False, quantile=0.9, allowed="growing at most like",
        quantity=quantity, variable=variable, seed=seed, min_decades=min_decades, n_boot=n_boot)
    summary = (f"{decision.verdict}: the 90% quantile of {quantity} grows as the power {slope:.3g} "
               f"[{low:.3g}, {high:.3g}] of {variable} over {decision.evidence['decades']:.2f} decades (allowed: at "
               f"most the power {exponent:g}); implied constant {quantity} / ({variable})^{exponent:g} from "
               f"{constants[0]:.3g} to {constants[1]:.3g}")
    evidence = {**decision.evidence, "growth_slope": slope, "growth_slope_low": low, "growth_slope_high": high,
                "allowed_exponent": float(exponent)}
    return rules.Decision(decision.verdict, evidence, summary, decision.confidence, decision.trials, plot), slope


def floor_rate(x, values, *, exponent: float, quantity: str, variable: str, seed: int = 0,
               min_decades: float = 1.5, n_boot: int = 2000):
    """``values = Omega(x^exponent)`` as ``x -> 0`` (a floor that may fall no faster): the rule on
    ``x^(2 exponent) / values`` against ``x^exponent`` (module docstring). Returns the decision
    (evidence ``floor_slope`` with its interval, ``floor_constant_min``: the smallest measured
    ``values / x^exponent``, the Omega's constant the runs support) and the slope."""
    x = np.asarray(x, dtype=float)
    errors = [xi ** (2 * exponent) / np.asarray(v, dtype=float) for v, xi in zip(values, x)]
    decision, slope, (low, high), constants, plot = _directed_rate(
        x, x, errors, values, exponent=exponent, flip=True, quantile=0.1, allowed="falling no faster than",
        quantity=quantity, variable=variable, seed=seed, min_decades=min_decades, n_boot=n_boot)
    summary = (f"{decision.verdict}: the 10% quantile of {quantity} falls as the power {slope:.3g} "
               f"[{low:.3g}, {high:.3g}] of {variable} over {decision.evidence['decades']:.2f} decades (allowed: no "
               f"faster than the power {exponent:g}); {quantity} / ({variable})^{exponent:g} from {constants[0]:.3g} to "
               f"{constants[1]:.3g}")
    evidence = {**decision.evidence, "floor_slope": slope, "floor_slope_low": low, "floor_slope_high": high,
                "floor_constant_min": float(constants[0]), "floor_constant_max": float(constants[1]),
                "allowed_exponent": float(exponent)}
    return rules.Decision(decision.verdict, evidence, summary, decision.confidence, decision.trials, plot), slope
