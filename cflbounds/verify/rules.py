"""Decision rules: the statistics of a verdict as reusable pieces.

A claim's check measures something and hands it to one of these rules; the rule returns
a :class:`Decision` (a verdict word, its evidence as numbers, a one-line summary, the
confidence and sample size it rests on, and figure specs), which :meth:`Decision.as_verdict`
turns into the claim's :class:`~cflbounds.claims.Verdict`. So a new claim never rewrites the
statistics:

* :func:`deterministic` — a bound that must hold on every instance, up to a stated
  numerical tolerance (``measured <= bound (1 + rtol) + atol``);
* :func:`exceedance` — a bound that must hold with probability at least ``1 - delta``:
  Clopper–Pearson intervals of the exceedance frequency, per configuration;
* :func:`expectation` — a bound on an expected value, ``E[measured] <= bound``: Student-t
  intervals of the mean excess over the bound, per configuration;
* :func:`rate` — a rate with an unspecified constant, ``error = O(x^p)``: the log–log slope
  of an error quantile against ``x`` with a bootstrap interval, against the exponent ``p``;
* :func:`ordering` — ``A >= B`` (or ``A > B``) from paired samples, with a paired interval.

Each builds on :mod:`cflbounds.claims.stats` (and :mod:`cflbounds.claims.orderings`), where the
intervals live. The plugin API's name of this module is ``cflbounds.claims.rules``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._words import plural
from .domain import deterministic_allowed, format_ratio
from .orderings import judge_ordering
from .stats import bonferroni_confidence, clopper_pearson, fit_rate, mean_interval
from .verdict import VERDICTS, Verdict

__all__ = ["Decision", "deterministic", "exceedance", "exceedance_counts", "expectation", "rate", "ordering"]


@dataclass(frozen=True)
class Decision:
    """What a decision rule concluded from a claim's measurements, before it is a claim's verdict.

    ``verdict`` is the verdict word (``holds``, ``violated``, ``vacuous``, ``inconclusive``, or
    for :func:`rate` ``rate-consistent`` / ``rate-inconsistent``); ``evidence`` the numbers it
    rests on, by name (counts, ratios, interval ends: what the report and ``verdicts.json``
    show); ``summary`` one line saying the same in words, with those numbers; ``confidence``
    the confidence of the statistics behind it (1.0 for a deterministic rule); ``trials`` the
    sample size (instances, trials or paired runs); ``plot`` the figure specs the report draws,
    the one that decided first. A check returns :meth:`as_verdict`'s :class:`~cflbounds.claims.Verdict`.
    """

    verdict: str
    evidence: dict
    summary: str
    confidence: float
    trials: int
    plot: list = field(default_factory=list)

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}; expected one of {VERDICTS}")

    def as_verdict(self, claim_id: str, ctx, *, summary: str | None = None, evidence: dict | None = None,
                   assumptions=(), details: dict | None = None) -> Verdict:
        """The claim's :class:`Verdict`: this decision with the context's seed; ``summary``
        replaces the rule's one (keep the rule's numbers in it), ``evidence`` adds entries."""
        return Verdict(claim_id, self.verdict, {**self.evidence, **(evidence or {})}, ctx.seed, self.trials,
                       self.confidence, summary or self.summary, assumptions=[dict(row) for row in assumptions],
                       plot=list(self.plot), details=dict(details or {}))


def _finite_or_inf(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if np.isnan(array).any():
        raise ValueError(f"{name} holds NaN: a rule needs every instance measured (a diverged run is +inf)")
    return array


def _ratio_figure(measured, bound, title, ylabel, reference, nonpositive, *, low=None, high=None,
                  xlabel="bound") -> dict:
    """A figure spec of ``measured / bound`` per instance on a log axis with the deciding line
    at 1: against the bound where every bound is positive (else against the instance's index),
    the axis clipped to where the ratios are (at most 1e-6 to 1e3), points beyond it and
    non-positive bounds (drawn as ``nonpositive``) marked at the edge and counted."""
    positive = bound > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(positive, measured / np.where(positive, bound, 1.0), np.inf)
        ends = [None if end is None else np.where(positive, end / np.where(positive, bound, 1.0), np.nan).tolist()
                for end in (low, high)]
    shown = ratio[np.isfinite(ratio) & (ratio > 0)]
    bottom = float(np.clip(shown.min() / 2, 1e-6, 0.5)) if shown.size else 1e-6
    top = float(np.clip(shown.max() * 2, 2.0, 1e3)) if shown.size else 2.0
    against_bound = bool(positive.all() and np.isfinite(bound).all())
    return {"kind": "rate", "title": title, "xlabel": xlabel if against_bound else "instance",
            "ylabel": ylabel, "logx": against_bound, "logy": True,
            "x": (bound if against_bound else np.arange(bound.size)).tolist(), "ylim": [bottom, top],
            "nonfinite_label": nonpositive, "reference": [{"y": 1.0, "label": reference}],
            "series": [{"label": ylabel, "y": ratio.tolist(), "low": ends[0], "high": ends[1], "style": "points"}]}


# -- deterministic ----------------------------------------------------------------------------
def deterministic(measured, bound, *, rtol: float = 1e-9, atol: float = 0.0, trivial=None,
                  quantity: str = "measured", title: str = "") -> Decision:
    """``measured <= bound`` on every instance, up to ``rtol |bound| + atol`` (floating-point
    rounding of two routes to one number: state why your tolerance is what it is), and float64's
    smallest normal number more, which no ``rtol`` covers (:data:`~.domain.UNDERFLOW`: a bound that
    underflowed to 0 beside a measured subnormal is not exceeded).

    ``measured`` and ``bound`` broadcast (one bound per instance or one for all); a diverged
    instance is ``+inf`` (a violation unless its bound is ``+inf``), NaN is refused. Verdict:
    ``violated`` if any instance exceeds its bound beyond the tolerance; else ``vacuous``
    if ``trivial`` is given and no bound is below it (e.g. a factor bound >= 1 on a
    distance that never grows), else ``holds``. Confidence 1: nothing is sampled.
    """
    measured, bound = np.broadcast_arrays(_finite_or_inf(measured, "measured"), _finite_or_inf(bound, "bound"))
    if measured.size == 0:
        raise ValueError("deterministic needs at least one instance")
    if rtol < 0 or atol < 0:
        raise ValueError(f"deterministic needs rtol, atol >= 0; got {rtol}, {atol}")
    allowed = deterministic_allowed(bound, rtol, atol)
    with np.errstate(invalid="ignore", over="ignore"):
        excess = measured - bound
        ratio = np.divide(measured, bound, out=np.full(measured.shape, np.nan), where=bound != 0)
    violations = int(np.sum(measured > allowed))
    informative = None if trivial is None else int(np.sum(bound < trivial))
    verdict = "violated" if violations else "vacuous" if informative == 0 else "holds"
    finite_ratio = ratio[np.isfinite(ratio)]
    evidence = {"instances": int(measured.size), "violations": violations, "rtol": float(rtol), "atol": float(atol),
                "max_excess": float(np.max(excess)),
                "max_ratio": float(finite_ratio.max()) if finite_ratio.size else float("nan"),
                "median_ratio": float(np.median(finite_ratio)) if finite_ratio.size else float("nan")}
    if informative is not None:
        evidence.update(trivial=float(trivial), informative_instances=informative)
    summary = (f"{verdict}: {quantity} exceeds the bound on {violations} of {measured.size} instances "
               f"(tolerance rtol {rtol:g}, atol {atol:g}); largest {quantity}/bound "
               f"{format_ratio(evidence['max_ratio'])}, median {format_ratio(evidence['median_ratio'])}"
               + (f"; the bound is below the trivial {trivial:g} on {informative} instances" if trivial is not None
                  else ""))
    plot = [_ratio_figure(measured.ravel(), bound.ravel(), title or f"{quantity} over the bound, per instance",
                          f"{quantity} / bound", "the bound (ratio 1)", "bound <= 0")]
    return Decision(verdict, evidence, summary, 1.0, int(measured.size), plot)


# -- exceedance -------------------------------------------------------------------------------
def exceedance(events, allowed, *, confidence: float = 0.95, labels=None, title: str = "") -> Decision:
    """``P(event) <= allowed`` in every configuration: ``events`` is a boolean array
    ``(configurations, trials)`` (or ``(trials,)`` for one configuration) of independent
    trials, ``allowed`` the claimed probability per configuration (a bound that must hold
    w.p. ``>= 1 - delta`` has events ``measured > bound`` and ``allowed = delta``). Judged by
    :func:`exceedance_counts` on the number of events per configuration."""
    events = np.asarray(events)
    if events.dtype != bool:
        raise ValueError("exceedance needs boolean events (e.g. measured > bound)")
    events = events.reshape(1, -1) if events.ndim == 1 else events
    if events.ndim != 2 or events.shape[1] < 1:
        raise ValueError(f"exceedance needs events of shape (configurations, trials); got {events.shape}")
    return exceedance_counts(events.sum(axis=1), events.shape[1], allowed, confidence=confidence, labels=labels,
                             title=title)


def exceedance_counts(exceedances, trials, allowed, *, confidence: float = 0.95, labels=None,
                      title: str = "") -> Decision:
    """``P(event) <= allowed`` per configuration, from ``exceedances`` events out of ``trials``
    independent trials each (arrays over configurations, broadcast with ``allowed``).

    Per configuration the exact (Clopper–Pearson) interval of the frequency: ``violated``
    when some configuration's lower end at the Bonferroni level over the configurations
    (:func:`.stats.bonferroni_confidence`) is above its ``allowed`` (any one configuration
    refutes the claim, a union: the correction keeps false alarms at ``1 - confidence``);
    ``holds`` when every *testable* configuration's upper end at ``confidence`` is below it
    (an intersection-union test needs no correction) and at least one is testable;
    ``vacuous`` when every ``allowed >= 1``; ``inconclusive`` otherwise. A configuration is
    testable when its trials could show the claim at all: even with no exceedance the
    upper end ``1 - ((1 - confidence)/2)^(1/N)`` must be below ``allowed`` (a claim of
    ``P <= 1e-9`` needs billions of trials); untestable ones still count for ``violated``
    and are reported.
    """
    exceed, trials, allowed = np.broadcast_arrays(np.asarray(exceedances), np.asarray(trials),
                                                  np.asarray(allowed, dtype=float))
    exceed, trials, allowed = np.atleast_1d(exceed), np.atleast_1d(trials), np.atleast_1d(allowed)
    if np.isnan(allowed).any() or (allowed < 0).any():
        raise ValueError("exceedance needs allowed probabilities >= 0")
    configurations = exceed.size
    low, high = clopper_pearson(exceed, trials, confidence)
    family_low, _ = clopper_pearson(exceed, trials, bonferroni_confidence(confidence, configurations))
    testable = 1.0 - ((1.0 - confidence) / 2.0) ** (1.0 / trials) < allowed
    refuted = family_low > allowed
    if refuted.any():
        verdict = "violated"
    elif (allowed >= 1).all():
        verdict = "vacuous"
    elif testable.any() and (high[testable] < allowed[testable]).all():
        verdict = "holds"
    else:
        verdict = "inconclusive"
    frequency = exceed / trials
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        over = np.where(allowed > 0, frequency / allowed, np.where(frequency > 0, np.inf, 0.0))
    # the configuration to name: the refuting one with the largest frequency/allowed, else the closest call
    worst = int(np.argmax(np.where(refuted, over, -1.0))) if refuted.any() else int(np.argmax(over))
    evidence = {"configurations": configurations, "trials": int(trials.sum()),
                "testable_configurations": int(testable.sum()), "refuted_configurations": int(refuted.sum()),
                "exceedances": int(exceed.sum()), "worst_frequency": float(frequency[worst]),
                "worst_allowed": float(allowed[worst]), "worst_rate_low": float(family_low[worst]),
                "worst_rate_high": float(high[worst]), "largest_frequency_over_allowed": float(over.max()),
                "bonferroni_confidence": bonferroni_confidence(confidence, configurations)}
    name = f" ({labels[worst]})" if labels is not None else ""
    summary = (f"{verdict}: over {plural(configurations, 'configuration')}, the exceedance frequency reaches "
               f"{frequency[worst]:.4g} against the allowed {allowed[worst]:.4g}{name} (ratio "
               f"{format_ratio(over[worst])}; Bonferroni lower end "
               f"{family_low[worst]:.4g}); {plural(int(testable.sum()), 'configuration')} with enough trials to show the "
               f"claim, {int(refuted.sum())} refuting it")
    plot = [_ratio_figure(frequency, allowed, title or "exceedance frequency over the allowed probability, per "
                          "configuration (95% Clopper-Pearson interval)", "frequency / allowed",
                          "the allowed probability (ratio 1)", "allowed = 0", low=low, high=high,
                          xlabel="allowed probability")]
    return Decision(verdict, evidence, summary, confidence, int(trials.sum()), plot)


# -- expectation ------------------------------------------------------------------------------
def expectation(samples, bound, *, confidence: float = 0.95, labels=None, quantity: str = "measured",
                title: str = "") -> Decision:
    """``E[measured] <= bound`` in every configuration, from independent trials: ``samples`` is
    ``(configurations, trials)`` (or ``(trials,)`` for one configuration), or a list of one
    1-d array per configuration (any lengths, at least 2 trials each); ``bound`` is one value per
    configuration, or one per trial (the shape of ``samples``: a bound that depends on the trial's
    draw; the mean of the bounds is then the bound on the mean).

    Per configuration the two-sided Student-t interval of the mean excess ``measured - bound``
    (:func:`cflbounds.claims.stats.mean_interval`): ``violated`` when some configuration's lower
    end, at the Bonferroni level over the configurations
    (:func:`cflbounds.claims.stats.bonferroni_confidence`: any one
    configuration refutes the claim), is above 0; ``holds`` when every configuration's upper end
    at ``confidence`` is at most 0 (an intersection-union test needs no correction);
    ``vacuous`` when every bound is ``+inf``; ``inconclusive`` otherwise (a true bound that is
    tight, ``E[measured] = bound``, is never called violated but cannot be shown to hold either).
    A diverged trial (``+inf``) makes its configuration's mean infinite: violated unless its bound
    is ``+inf``. The same statistics confirm an expectation claim's counterexample on fresh seeds
    (:mod:`cflbounds.falsify.confirm`)."""
    groups = [np.ravel(np.asarray(group, dtype=float)) for group in
              (samples if isinstance(samples, (list, tuple)) else np.atleast_2d(np.asarray(samples, dtype=float)))]
    if not groups or any(group.size < 2 for group in groups):
        raise ValueError("expectation needs at least 2 trials in each configuration (a t interval needs a spread)")
    if any(np.isnan(group).any() for group in groups):
        raise ValueError("samples hold NaN: a rule needs every trial measured (a diverged trial is +inf)")
    bounds = np.asarray(bound, dtype=float)
    per_trial = bounds.ndim > 0 and bounds.size == sum(group.size for group in groups) and bounds.size != len(groups)
    if per_trial:
        bounds = np.split(np.ravel(bounds), np.cumsum([group.size for group in groups])[:-1])
    else:
        bounds = [np.full(group.size, value) for group, value in
                  zip(groups, np.broadcast_to(np.ravel(bounds) if bounds.ndim else bounds, (len(groups),)))]
    if any(np.isnan(b).any() for b in bounds):
        raise ValueError("bound holds NaN")
    configurations = len(groups)
    family = bonferroni_confidence(confidence, configurations)
    means, bound_means, lows, highs, family_lows = [], [], [], [], []
    for group, group_bound in zip(groups, bounds):
        with np.errstate(invalid="ignore", over="ignore"):
            infinite_bound = np.isinf(group_bound) & (group_bound > 0)
            excess = np.where(infinite_bound, -np.inf, group - np.where(infinite_bound, 0.0, group_bound))
        if infinite_bound.all():  # promises nothing: never exceeded
            mean = low = high = family_low = -np.inf
        else:
            mean, low, high = (float(v) for v in mean_interval(excess[~infinite_bound], confidence))
            family_low = float(mean_interval(excess[~infinite_bound], family)[1])
        means.append(float(np.mean(group)))
        bound_means.append(float(np.mean(group_bound)))
        lows.append(low), highs.append(high), family_lows.append(family_low)
    means, bound_means, lows, highs, family_lows = map(np.array, (means, bound_means, lows, highs, family_lows))
    refuted = family_lows > 0
    if refuted.any():
        verdict = "violated"
    elif np.isinf(bound_means).all():
        verdict = "vacuous"
    elif (highs <= 0).all():
        verdict = "holds"
    else:
        verdict = "inconclusive"
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        over = np.where(bound_means > 0, means / bound_means, np.where(means > bound_means, np.inf, 0.0))
        over = np.where(np.isinf(bound_means) & (bound_means > 0), 0.0, over)
    worst = int(np.argmax(np.where(refuted, over, -1.0))) if refuted.any() else int(np.argmax(over))
    trials = int(sum(group.size for group in groups))
    evidence = {"configurations": configurations, "trials": trials, "refuted_configurations": int(refuted.sum()),
                "worst_mean": float(means[worst]), "worst_bound": float(bound_means[worst]),
                "worst_excess_low": float(family_lows[worst]), "worst_excess_high": float(highs[worst]),
                "largest_mean_over_bound": float(over.max()), "bonferroni_confidence": family}
    name = f" ({labels[worst]})" if labels is not None else ""
    summary = (f"{verdict}: over {configurations} configuration{'s' * (configurations != 1)} ({trials} trials), the "
               f"mean {quantity} reaches {means[worst]:.4g} against the bound {bound_means[worst]:.4g}{name} (ratio "
               f"{format_ratio(over[worst])}; mean excess in [{family_lows[worst]:.4g}, {highs[worst]:.4g}]); "
               f"{int(refuted.sum())} refute it")
    with np.errstate(invalid="ignore", over="ignore"):
        ends = (bound_means + lows, bound_means + highs)  # the interval of the mean measured
    plot = [_ratio_figure(means, bound_means, title or f"mean {quantity} over the bound, per configuration "
                          f"({confidence:.0%} Student-t interval)", f"mean {quantity} / bound",
                          "the bound (ratio 1)", "bound <= 0", low=ends[0], high=ends[1])]
    return Decision(verdict, evidence, summary, confidence, trials, plot)


# -- rate -------------------------------------------------------------------------------------
def rate(scaling, errors, *, exponent: float, quantile: float = 0.9, confidence: float = 0.95,
         min_decades: float = 1.5, seed: int = 0, n_boot: int = 2000, title: str = "") -> Decision:
    """``error = O(x^exponent)`` with an unspecified constant: the ``quantile`` of the errors
    at each of P points ``x = scaling`` is fitted as ``log error = a + b log x^exponent``
    (:func:`.stats.fit_rate`, bootstrap over the trials of every point); ``rate-consistent``
    when the slope's interval reaches 1 (the error falls at least as fast as predicted, so
    the implied constant ``error / x^exponent`` stays bounded), ``rate-inconsistent``
    otherwise, ``inconclusive`` when ``x`` spans fewer than ``min_decades`` decades.
    ``errors``: ``(P, trials)`` or a list of P arrays of positive errors.
    """
    scaling = np.asarray(scaling, dtype=float)
    if exponent == 0 or not np.isfinite(exponent):
        raise ValueError(f"rate needs a finite non-zero exponent; got {exponent}")
    if scaling.ndim != 1 or np.any(~np.isfinite(scaling)) or np.any(scaling <= 0):
        raise ValueError("rate needs positive finite scaling values, one per point")
    fit = fit_rate(scaling**exponent, errors, scaling=scaling, quantile=quantile, confidence=confidence,
                   seed=seed, n_boot=n_boot)
    verdict = ("inconclusive" if fit.decades < min_decades
               else "rate-consistent" if fit.consistent else "rate-inconsistent")
    evidence = {**fit.as_evidence(), "exponent": float(exponent), "points": int(scaling.size),
                "min_decades": float(min_decades)}
    trials = int(sum(np.size(e) for e in errors))
    summary = (f"{verdict}: the {quantile:.0%} quantile of the error against x^{exponent:g} has slope {fit.slope:.3g} "
               f"[{fit.slope_interval[0]:.3g}, {fit.slope_interval[1]:.3g}] (1 = the predicted rate) over "
               f"{fit.decades:.2f} decades of x; implied constant {fit.implied_constant.min():.3g} to "
               f"{fit.implied_constant.max():.3g}")
    anchor = float(np.median(fit.implied_constant))
    plot = [{"kind": "rate", "title": title or f"error against the predicted x^{exponent:g}", "xlabel": "x",
             "ylabel": f"error ({quantile:.0%} quantile)", "logx": True, "logy": True, "x": scaling.tolist(),
             "series": [{"label": "measured", "y": fit.measured.tolist()},
                        {"label": f"predicted rate (median constant {anchor:.3g})",
                         "y": (anchor * scaling**exponent).tolist(), "style": "dashed"}]}]
    return Decision(verdict, evidence, summary, confidence, trials, plot)


# -- ordering ---------------------------------------------------------------------------------
def ordering(a, b, *, relation: str = ">=", tolerance: float = 0.0, confidence: float = 0.95,
             name: str = "A >= B", title: str = "") -> Decision:
    """``A relation B`` (``>=`` or ``>``) from paired samples (the same seeds for both):
    the Student-t interval of the mean difference ``a - b`` (:func:`.orderings.judge_ordering`).
    ``holds`` when the whole interval is above 0, or for ``>=`` when it excludes a reversal
    larger than ``tolerance``; ``violated`` when it is below 0; ``inconclusive`` otherwise."""
    if relation not in (">=", ">"):
        raise ValueError(f"ordering needs relation '>=' or '>'; got {relation!r}")
    judgment = judge_ordering(name, a, b, relation=relation, tolerance=tolerance, confidence=confidence)
    verdict = ("violated" if judgment.status == "contradicted" else "holds" if judgment.consistent
               else "inconclusive")
    evidence = {"difference": judgment.mean, "difference_low": judgment.low, "difference_high": judgment.high,
                "pairs": judgment.samples, "tolerance": float(tolerance)}
    summary = f"{verdict}: {judgment.describe()} over {judgment.samples} paired samples at confidence {confidence}"
    plot = [{"kind": "bar", "title": title or f"{name}: mean paired difference", "ylabel": "A - B",
             "x": [name], "series": [{"label": "mean difference", "y": [judgment.mean], "low": [judgment.low],
                                      "high": [judgment.high]}],
             "reference": [{"y": 0.0, "label": "no difference"}]}]
    return Decision(verdict, evidence, summary, confidence, judgment.samples, plot)
