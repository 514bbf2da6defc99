"""Statistics for a claim's check: the ones behind every verdict cflbounds issues, public so that
a plugin judges its theorem exactly as the five papers judge theirs.

* :func:`clopper_pearson`: exact binomial interval of an observed frequency ("w.p. >= 1 - delta"
  claims); :func:`bonferroni_confidence` for a family of such tests;
* :func:`fit_rate` (a :class:`RateFit`): the log-log slope of the measured error against a
  predicted term, with a bootstrap interval, for rates with unspecified universal constants;
* :func:`fisher_one_sided`: a monotone trend between two success frequencies;
* :func:`mean_interval` and :func:`paired_difference` (a :class:`PairedDifference`): Student-t
  intervals of a mean and of the mean paired difference of two methods run on the same seeds.

The implementations live in the engine (``cflbounds.verify.stats``, which the decision
:mod:`~cflbounds.claims.rules` use); this module is their stable public name.
"""
from ..verify.stats import (PairedDifference, RateFit, bonferroni_confidence, clopper_pearson, fisher_one_sided,
                            fit_rate, mean_interval, paired_difference)

__all__ = ["clopper_pearson", "bonferroni_confidence", "RateFit", "fit_rate", "fisher_one_sided", "mean_interval",
           "PairedDifference", "paired_difference"]
