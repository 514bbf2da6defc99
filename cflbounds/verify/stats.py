"""Statistics behind the verdicts (CLAIMS.md, "Verdicts" and "Universal constants").

* Probabilistic claims ("w.p. >= 1 - delta") are judged with exact binomial
  (Clopper-Pearson) intervals on the observed frequency.
* Rate claims with unspecified universal constants are judged by a log-log fit of the
  measured error against the predicted term g: ``log(error) = a + b log(g)``, with a
  bootstrap interval for the slope b obtained by resampling the trials at every point
  of the sweep, and the implied constant ``error / g`` along the sweep.
* Monotone trends of a success probability are judged pairwise with Fisher's exact test.
* Comparisons of methods run on the same seeds use the Student-t interval of the mean
  paired difference.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["clopper_pearson", "bonferroni_confidence", "RateFit", "fit_rate", "fisher_one_sided", "mean_interval",
           "PairedDifference", "paired_difference"]


def bonferroni_confidence(confidence: float, comparisons: int) -> float:
    """``1 - (1 - confidence) / comparisons``: each of ``comparisons`` tests at this level
    keeps the chance of any false rejection at most ``1 - confidence``."""
    return 1.0 - (1.0 - confidence) / comparisons


def clopper_pearson(successes, trials, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided binomial interval for ``successes / trials`` (arrays broadcast).

    The interval has coverage at least ``confidence`` for every true probability; with
    0 successes the lower end is 0, with all successes the upper end is 1.
    """
    successes = np.asarray(successes, dtype=float)
    trials = np.asarray(trials, dtype=float)
    if np.any(trials < 1) or np.any(successes < 0) or np.any(successes > trials):
        raise ValueError("clopper_pearson needs 0 <= successes <= trials and trials >= 1")
    if np.any(successes != np.round(successes)) or np.any(trials != np.round(trials)):
        raise ValueError("clopper_pearson needs whole numbers of successes and trials")
    if not 0 < confidence < 1:
        raise ValueError(f"clopper_pearson needs a confidence in (0, 1); got {confidence}")
    alpha = 1.0 - confidence
    with np.errstate(invalid="ignore"):
        lower = np.where(successes > 0, stats.beta.ppf(alpha / 2, successes, trials - successes + 1), 0.0)
        upper = np.where(successes < trials, stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes), 1.0)
    return lower, upper


@dataclass(frozen=True)
class RateFit:
    """A log-log fit of measured error against a predicted term along a sweep."""

    slope: float
    slope_interval: tuple[float, float]
    intercept: float
    predicted: np.ndarray  # g at each sweep point
    measured: np.ndarray  # the error statistic at each point (e.g. 90% quantile over trials)
    implied_constant: np.ndarray  # measured / predicted
    confidence: float
    quantile: float
    decades: float  # span of the swept variable (m n', say) in decades; of g if none is given

    @property
    def consistent(self) -> bool:
        """``rate-consistent``: the slope's interval reaches 1 or above (the error falls
        at least as fast as g), so the implied constant stays bounded."""
        return self.slope_interval[1] >= 1.0

    def as_evidence(self) -> dict:
        return {
            "slope": self.slope,
            "slope_low": self.slope_interval[0],
            "slope_high": self.slope_interval[1],
            "intercept": self.intercept,
            "decades": self.decades,
            "quantile": self.quantile,
            "implied_constant_min": float(np.min(self.implied_constant)),
            "implied_constant_max": float(np.max(self.implied_constant)),
            "implied_constant_first": float(self.implied_constant[0]),
            "implied_constant_last": float(self.implied_constant[-1]),
        }


def _slope(log_g, log_e):
    slope, intercept = np.polyfit(log_g, log_e, 1)
    return slope, intercept


def fit_rate(predicted, errors, *, scaling=None, quantile: float = 0.9, confidence: float = 0.95,
             n_boot: int = 2000, seed: int = 0) -> RateFit:
    """Fit ``log(q_quantile(error)) = a + b log(g)`` over the sweep points.

    ``predicted``: g at each of P points, ``(P,)``; ``errors``: a ``(P, N)`` array (or a
    list of P arrays) of per-trial errors. The bootstrap resamples the trials of every
    point independently and refits; the interval is the percentile interval of b.
    ``scaling``: the swept variable at each point (e.g. m n'), to report its span in decades.
    """
    predicted = np.asarray(predicted, dtype=float)
    samples = [np.asarray(e, dtype=float)[np.isfinite(e)] for e in errors]
    if predicted.ndim != 1 or len(samples) != predicted.size or predicted.size < 3:
        raise ValueError("fit_rate needs at least 3 sweep points with one error sample each")
    if np.any(predicted <= 0) or any(s.size == 0 or np.any(s <= 0) for s in samples):
        raise ValueError("fit_rate needs positive predicted terms and positive finite errors")
    log_g = np.log(predicted)
    measured = np.array([np.quantile(s, quantile) for s in samples])
    slope, intercept = _slope(log_g, np.log(measured))
    rng = np.random.default_rng(seed)
    boot = np.empty(n_boot)
    for i in range(n_boot):
        resampled = [np.quantile(rng.choice(s, size=s.size, replace=True), quantile) for s in samples]
        boot[i] = _slope(log_g, np.log(resampled))[0]
    alpha = 1.0 - confidence
    low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    span = predicted if scaling is None else np.asarray(scaling, dtype=float)
    return RateFit(
        slope=float(slope),
        slope_interval=(float(low), float(high)),
        intercept=float(intercept),
        predicted=predicted,
        measured=measured,
        implied_constant=measured / predicted,
        confidence=confidence,
        quantile=quantile,
        decades=float(np.log10(np.max(span) / np.min(span))),
    )


def fisher_one_sided(successes_a, trials_a, successes_b, trials_b) -> float:
    """p-value of Fisher's exact test that group b's success probability exceeds a's."""
    table = [[successes_b, trials_b - successes_b], [successes_a, trials_a - successes_a]]
    return float(stats.fisher_exact(table, alternative="greater").pvalue)


def mean_interval(samples, confidence: float = 0.95, axis: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mean of ``samples`` along ``axis`` and its two-sided Student-t interval at
    ``confidence``; an infinite sample (a diverged run) makes the whole interval infinite,
    and a single sample gives an unbounded interval. The interval is computed on the samples
    divided by their largest magnitude (it is scale-equivariant), so huge finite samples
    (runs on their way to diverging, 1e200) do not overflow the variance."""
    samples = np.asarray(samples, dtype=float)
    if not 0 < confidence < 1:
        raise ValueError(f"mean_interval needs a confidence in (0, 1); got {confidence}")
    n = samples.shape[axis]
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.nanmax(np.abs(samples), axis=axis, keepdims=True) if samples.size else np.ones(1)
        scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
        scaled = samples / scale
        scale = np.squeeze(scale, axis=axis) if samples.ndim else scale
        mean = scaled.mean(axis=axis) * scale
        if n < 2:
            return mean, np.full_like(mean, -np.inf), np.full_like(mean, np.inf)
        half = stats.t.ppf(0.5 + confidence / 2, n - 1) * scaled.std(axis=axis, ddof=1) * scale / np.sqrt(n)
        infinite = np.isinf(mean)
        low = np.where(infinite, mean, mean - np.nan_to_num(half, nan=0.0))
        high = np.where(infinite, mean, mean + np.nan_to_num(half, nan=0.0))
    return mean, low, high


@dataclass(frozen=True)
class PairedDifference:
    """The mean of ``a - b`` over paired samples (two methods run on the same seeds) and
    its two-sided Student-t interval at ``confidence``."""

    mean: float
    low: float
    high: float
    samples: int
    confidence: float


def paired_difference(a, b, confidence: float = 0.95) -> PairedDifference:
    """:func:`mean_interval` of the paired differences ``a - b`` (at least 2 finite pairs;
    identical differences give a point)."""
    differences = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if differences.ndim != 1 or differences.size < 2 or not np.all(np.isfinite(differences)):
        raise ValueError("paired_difference needs at least 2 finite pairs")
    mean, low, high = mean_interval(differences, confidence)
    return PairedDifference(float(mean), float(low), float(high), int(differences.size), confidence)
