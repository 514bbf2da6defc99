"""FedAvg on non-iid data as code (Li, Huang, Yang, Wang, Zhang, "On the Convergence of FedAvg on
Non-IID Data", ICLR 2020, arXiv:1907.02189).

F(w) = sum_k p_k F_k(w) over N devices (sum_k p_k = 1); every active device runs E local SGD
*steps* (the arXiv text's introduction: "we denote by E the times of updates rather than
epochs"); T is the total number of steps, the bound is for the synchronised w_T (T a multiple
of E), started from w_1. Constants (Assumptions 1-4): each F_k L-smooth and mu-strongly convex,
stochastic-gradient variance sigma_k^2, E||grad F_k(w_t^k, xi)||^2 <= G^2 along the iterates,
Gamma = F* - sum_k p_k F_k* >= 0.

Provenance. The theorems' statements (Theorems 1-3, the unbalanced remark, Theorem 4) were not
reachable from this machine: the stored copies of the arXiv text (its LaTeX source, arxiv-vanity,
deeplearn.org) hold its abstract and introduction only. The formulas are CATALOGUE.md's (marked
[V] there: read in the paper's own text by its author); a secondary note (a GitHub markdown
summary) prints the step as ``eta_t = 1/(mu(gamma + t))``, CATALOGUE.md ``2/(mu(gamma + t))``:
the latter is encoded. The authors' code (github.com/lx10077/fedavgpy, src/trainers/fedavg4.py,
src/optimizers/gd.py, src/models/worker.py) differs from the theorems' algorithm in ways a claim
must name: the step decays per round as ``lr/(round + 1)`` (``inverse_prop_decay_learning_rate``),
not per step as ``eta_t``; a round runs ``10 E`` mini-batch steps (``num_epoch * 10``), each
gradient clipped to norm 60; Scheme II's aggregation multiplies by ``100/K``, N = 100 written in.
"""
from __future__ import annotations

from numbers import Integral

import numpy as np

from .._validation import Constraint, Options, check_param
from ._constraints import AT_LEAST_ONE, COUNT, NONNEGATIVE, POSITIVE, PROPORTION, bound_params, within
from ._docstring import appended, parameters
from ._report import BoundResult, Inequality

__all__ = ["variance_term", "unbalance", "gamma", "step_size", "b_term", "scheme1_c", "scheme2_c", "assumptions",
           "theorem1", "theorem2", "theorem3", "theorem3_unbalanced", "theorem4_rate", "NOISE_SCALINGS"]

NOISE_SCALINGS = ("printed", "linear")
_SUM_TOLERANCE = 1e-9


def _probability_vector(value) -> bool:
    array = np.asarray(value, dtype=float)
    return (array.ndim == 1 and array.size > 0 and bool(np.all(np.isfinite(array))) and bool(np.all(array >= 0))
            and abs(float(array.sum()) - 1.0) <= _SUM_TOLERANCE)


_WEIGHTS = [Constraint(_probability_vector, f"a 1-d array of device weights p_k >= 0 summing to 1 (within "
                                            f"{_SUM_TOLERANCE:g})")]
_NONNEGATIVE_ARRAY = [Constraint(lambda v: np.ndim(v) == 1 and np.size(v) > 0
                                 and bool(np.all(np.isfinite(np.asarray(v, dtype=float))))
                                 and bool(np.all(np.asarray(v, dtype=float) >= 0)),
                                 "a 1-d array of non-negative finite numbers")]
_PROBLEM = {"L": POSITIVE, "mu": POSITIVE, "E": COUNT}
_BOUND = {**_PROBLEM, "T": COUNT, "G": NONNEGATIVE, "Gamma": NONNEGATIVE, "initial_distance_sq": NONNEGATIVE}
_ENTRIES = {
    "p": ("array", "the device weights p_k (non-negative, summing to 1)"),
    "sigma": ("array", "each device's stochastic-gradient standard deviation sigma_k (Assumption 3), one per device"),
    "t": ("int", "the step's index (the first step is t = 1)"),
    "L": ("float", "smoothness of every F_k (Assumption 1)"),
    "mu": ("float", "strong convexity of every F_k (Assumption 2), mu <= L"),
    "E": ("int", "local SGD steps per round"),
    "T": ("int", "total SGD steps, a multiple of E (the bound is for the synchronised w_T)"),
    "G": ("float", "the bound of Assumption 4, E||grad F_k(w_t^k, xi)||^2 <= G^2 along the iterates"),
    "Gamma": ("float", "the heterogeneity Gamma = F* - sum_k p_k F_k* >= 0"),
    "weighted_variance": ("float", "sum_k p_k^2 sigma_k^2 (variance_term(p, sigma) computes it from the weights and "
                                   "the sigma_k)"),
    "sigma_sq_sum": ("float", "sum_k sigma_k^2, the sum of the devices' stochastic-gradient variances (Assumption 3)"),
    "initial_distance_sq": ("float", "E||w_1 - w*||^2, the squared distance of the start from the optimum"),
    "K": ("int", "devices sampled per round (K <= N)"),
    "N": ("int", "number of devices"),
    "nu": ("float", "nu = N max_k p_k (>= 1; 1 for balanced data)"),
    "varsigma": ("float", "varsigma = N min_k p_k (in (0, 1]; 1 for balanced data)"),
    "noise_scaling": ("str", '"printed" (sigma~_k = sqrt(nu) sigma_k, G~ = sqrt(nu) G, as the remark prints) or '
                             '"linear" (nu sigma_k, nu G: the gradients of F~_k = p_k N F_k scaled by at most nu)'),
    "eta": ("float", "the constant step size"),
    "c": ("float", "the constant hidden in the Omega (problem-dependent, unspecified by the theorem)"),
}
_THEOREM1 = ("L", "mu", "E", "T", "G", "Gamma", "weighted_variance", "initial_distance_sq")


def _times(*factors):
    """The product, 0 when a factor is exactly 0 (an overflowed other factor is inf, and the
    term it multiplies is still 0, not NaN)."""
    return 0.0 if any(factor == 0 for factor in factors) else float(np.prod(factors))


@appended(parameters(_ENTRIES, "p", "sigma"))
@bound_params({"p": _WEIGHTS, "sigma": _NONNEGATIVE_ARRAY})
def variance_term(p, sigma) -> float:
    """``sum_k p_k^2 sigma_k^2``, the first term of Theorem 1's B."""
    p, sigma = np.asarray(p, dtype=float), np.asarray(sigma, dtype=float)
    check_param("sigma", sigma, [Constraint(lambda v: np.shape(v) == p.shape, f"one sigma_k per device weight "
                                                                              f"({p.size} of them)")], "variance_term")
    return float(np.sum(p**2 * sigma**2))


@appended(parameters(_ENTRIES, "p"))
@bound_params({"p": _WEIGHTS})
def unbalance(p) -> tuple[float, float]:
    """``(nu, varsigma) = (N max_k p_k, N min_k p_k)``, the factors of the unbalanced Scheme II
    (Theorem 3's remark on F~_k = p_k N F_k); both are 1 for balanced data.
    """
    p = np.asarray(p, dtype=float)
    return float(p.size * p.max()), float(p.size * p.min())


@appended(parameters(_ENTRIES, "L", "mu", "E"))
@bound_params(_PROBLEM)
def gamma(L, mu, E) -> float:
    """``gamma = max{8 kappa, E}`` with ``kappa = L/mu``, the offset of the step ``eta_t`` of
    Theorems 1-3.
    """
    _check_mu(mu, L, "gamma")
    return max(8.0 * (L / mu), float(E))


@appended(parameters(_ENTRIES, "t", "L", "mu", "E"))
@bound_params({"t": COUNT, **_PROBLEM})
def step_size(t, L, mu, E) -> float:
    """``eta_t = 2 / (mu (gamma + t))``, the step of Theorems 1-3 at step t = 1, 2, ..."""
    _check_mu(mu, L, "step_size")
    return _step(t, L, mu, E)


def _step(t, L, mu, E):
    return 2.0 / (max(8.0 * L, mu * E) + mu * t)  # mu (gamma + t), without kappa's overflow


@appended(parameters(_ENTRIES, "weighted_variance", "L", "Gamma", "E", "G"))
@bound_params({"weighted_variance": NONNEGATIVE, "L": POSITIVE, "Gamma": NONNEGATIVE, "E": COUNT, "G": NONNEGATIVE})
def b_term(weighted_variance, L, Gamma, E, G) -> float:
    """Theorem 1's ``B = sum_k p_k^2 sigma_k^2 + 6 L Gamma + 8 (E - 1)^2 G^2``."""
    return sum(_b_terms(weighted_variance, L, Gamma, E, G).values())


def _b_terms(weighted_variance, L, Gamma, E, G) -> dict:
    return {"variance": float(weighted_variance), "heterogeneity": _times(6.0, L, Gamma),
            "drift": _times(8.0, float(E - 1) ** 2, G, G)}


@appended(parameters(_ENTRIES, "E", "G", "K"))
@bound_params({"E": COUNT, "G": NONNEGATIVE, "K": COUNT})
def scheme1_c(E, G, K) -> float:
    """Theorem 2's ``C = (4/K) E^2 G^2`` (Scheme I: K devices drawn with replacement with
    probabilities p_k, plain average).
    """
    return _times(4.0 / K, float(E) ** 2, G, G)


@appended(parameters(_ENTRIES, "E", "G", "K", "N"))
@bound_params({"E": COUNT, "G": NONNEGATIVE, "K": COUNT, "N": COUNT})
def scheme2_c(E, G, K, N) -> float:
    """Theorem 3's ``C = ((N - K)/(N - 1)) (4/K) E^2 G^2`` (Scheme II: K of N devices drawn
    uniformly without replacement, weights N/K p_k; balanced data). 0 at K = N.
    """
    within("K", K, "scheme2_c", 1, N, kind=Integral, rule="K <= N")
    return _scheme2_c(E, G, K, N)


def _scheme2_c(E, G, K, N):
    return 0.0 if K == N else _times((N - K) / (N - 1), 4.0 / K, float(E) ** 2, G, G)


def _check_mu(mu, L, caller):
    within("mu", mu, caller, 0, L, closed="right", rule="mu <= L: a mu-strongly convex F_k is at most L-smooth")


def _check_rounds(T, E, caller):
    check_param("T", T, [Constraint(lambda t: t % E == 0, f"a multiple of E = {E} (the bound is for the "
                                                          f"synchronised w_T)")], caller)


@appended(parameters(_ENTRIES, "L", "mu", "E", "K", "N"))
@bound_params({**_PROBLEM, "K": COUNT, "N": COUNT})
def assumptions(*, L, mu, E, K=1, N=1) -> tuple[Inequality, ...]:
    """The conditions of Theorems 1-3 that constants decide, each with both sides: A1-A2's
    ``mu <= L``, the proof's step conditions that ``gamma = max{8 kappa, E}`` is chosen to meet
    (``eta_1 <= 1/(4L)`` and ``eta_t <= 2 eta_(t+E)``, i.e. ``E <= gamma + 1`` at t = 1, where
    it is tightest), and ``K <= N``. A3, A4 and Gamma are properties of the problem and the run.
    """
    offset = max(8.0 * (L / mu), float(E))
    return (Inequality("mu <= L (A1, A2)", mu, L, "<=", "FedAvg Assumptions 1-2"),
            Inequality("eta_1 = 2/(mu (gamma + 1)) <= 1/(4L)", _step(1, L, mu, E), 0.25 / L, "<=",
                       "FedAvg Theorem 1's proof (gamma >= 8 kappa)"),
            Inequality("E <= gamma + 1 (eta_t <= 2 eta_(t+E))", float(E), offset + 1.0, "<=",
                       "FedAvg Theorem 1's proof (gamma >= E)"),
            Inequality("K <= N", float(K), float(N), "<=", "FedAvg Theorems 2-3"))


def _convergence(claim, doc, *, L, mu, E, T, B, initial_distance_sq, C=None, K=1, N=1, derived=None) -> BoundResult:
    """``kappa/(gamma + T - 1) (2 (B + C)/mu + (mu gamma/2) E||w_1 - w*||^2)``, the form all of
    Theorems 1-3 share, written so that no overflow makes it NaN."""
    kappa = L / mu
    # kappa/(gamma + T - 1) = 1/(max(8, E/kappa) + (T - 1)/kappa): finite (at most 1/8) for any kappa
    factor = 1.0 / (max(8.0, E / kappa) + (T - 1) / kappa)
    mu_gamma = max(8.0 * L, mu * E)
    terms = {"noise_heterogeneity_drift": factor * (2.0 * (B["variance"] + B["heterogeneity"] + B["drift"]) / mu),
             "initial_distance": factor * _times(mu_gamma / 2.0, initial_distance_sq)}
    if C is not None:  # Theorems 2-3: B + C
        terms["sampling"] = factor * 2.0 * C / mu
    derived = {"kappa": kappa, "gamma": max(8.0 * kappa, float(E)), "B": sum(B.values()),
               **{f"B_{name}": value for name, value in B.items()}, **({"C": C} if C is not None else {}),
               "first_step": _step(1, L, mu, E), "last_step": _step(T, L, mu, E), "rounds": T // E, **(derived or {})}
    return BoundResult(claim, sum(terms.values()), terms, derived, assumptions(L=L, mu=mu, E=E, K=K, N=N), doc)


@appended(parameters(_ENTRIES, *_THEOREM1))
@bound_params({**_BOUND, "weighted_variance": NONNEGATIVE})
def theorem1(*, L, mu, E, T, G, Gamma, weighted_variance, initial_distance_sq) -> BoundResult:
    """Theorem 1 (full device participation, w_(t+E) = sum_k p_k w^k_(t+E)): with
    ``kappa = L/mu``, ``gamma = max{8 kappa, E}`` and ``eta_t = 2/(mu (gamma + t))``,

        E[F(w_T)] - F* <= kappa/(gamma + T - 1) (2B/mu + (mu gamma/2) E||w_1 - w*||^2),
        B = sum_k p_k^2 sigma_k^2 + 6 L Gamma + 8 (E - 1)^2 G^2.

    As CATALOGUE.md states it ([V]); the primary text was not reachable here (module docstring).
    ``terms`` splits the bound into its B part and its initial-distance part; ``derived`` has
    kappa, gamma, B and its three terms, the first and last steps and the rounds T/E.
    """
    _check_mu(mu, L, "theorem1")
    _check_rounds(T, E, "theorem1")
    B = _b_terms(weighted_variance, L, Gamma, E, G)
    return _convergence("FEDAVG.T1", theorem1.__doc__, L=L, mu=mu, E=E, T=T, B=B,
                        initial_distance_sq=initial_distance_sq)


@appended(parameters(_ENTRIES, *_THEOREM1, "K", "N"))
@bound_params({**_BOUND, "weighted_variance": NONNEGATIVE, "K": COUNT, "N": COUNT})
def theorem2(*, L, mu, E, T, G, Gamma, weighted_variance, initial_distance_sq, K, N) -> BoundResult:
    """Theorem 2 (Scheme I: K indices drawn with replacement with probabilities p_k,
    w <- (1/K) sum_(k in S) w^k): Theorem 1's bound with B replaced by B + C,

        C = (4/K) E^2 G^2.

    As CATALOGUE.md states it ([V]); the primary text was not reachable here. ``terms`` adds
    C's share (``sampling``); E = 1 leaves C = 4G^2/K, the price of sampling alone.
    """
    _check_mu(mu, L, "theorem2")
    _check_rounds(T, E, "theorem2")
    within("K", K, "theorem2", 1, N, kind=Integral, rule="K <= N")
    return _convergence("FEDAVG.T2", theorem2.__doc__, L=L, mu=mu, E=E, T=T, K=K, N=N,
                        B=_b_terms(weighted_variance, L, Gamma, E, G), C=_times(4.0 / K, float(E) ** 2, G, G),
                        initial_distance_sq=initial_distance_sq)


@appended(parameters(_ENTRIES, *_THEOREM1, "K", "N"))
@bound_params({**_BOUND, "weighted_variance": NONNEGATIVE, "K": COUNT, "N": COUNT})
def theorem3(*, L, mu, E, T, G, Gamma, weighted_variance, initial_distance_sq, K, N) -> BoundResult:
    """Theorem 3 (Scheme II, balanced data p_k = 1/N: K indices drawn uniformly without
    replacement, w <- (N/K) sum_(k in S) p_k w^k): Theorem 1's bound with B replaced by B + C,

        C = ((N - K)/(N - 1)) (4/K) E^2 G^2   (0 at K = N).

    As CATALOGUE.md states it ([V]); the primary text was not reachable here. With p_k = 1/N,
    ``weighted_variance`` is (1/N^2) sum_k sigma_k^2.
    """
    _check_mu(mu, L, "theorem3")
    _check_rounds(T, E, "theorem3")
    within("K", K, "theorem3", 1, N, kind=Integral, rule="K <= N")
    return _convergence("FEDAVG.T3", theorem3.__doc__, L=L, mu=mu, E=E, T=T, K=K, N=N,
                        B=_b_terms(weighted_variance, L, Gamma, E, G), C=_scheme2_c(E, G, K, N),
                        initial_distance_sq=initial_distance_sq)


@appended(parameters(_ENTRIES, "L", "mu", "E", "T", "G", "Gamma", "sigma_sq_sum", "initial_distance_sq", "nu",
                     "varsigma", "K", "N", "noise_scaling"))
@bound_params({**_BOUND, "sigma_sq_sum": NONNEGATIVE, "nu": AT_LEAST_ONE, "varsigma": PROPORTION, "K": COUNT,
               "N": COUNT, "noise_scaling": [Options(NOISE_SCALINGS)]})
def theorem3_unbalanced(*, L, mu, E, T, G, Gamma, sigma_sq_sum, initial_distance_sq, nu, varsigma, K, N,
                        noise_scaling="printed") -> BoundResult:
    """Theorem 3 for unbalanced data (Scheme II on F~_k = p_k N F_k, so that F = (1/N) sum_k F~_k):
    "Theorem 3 still holds if L, mu, sigma_k, G are replaced by

        L~ = nu L, mu~ = varsigma mu, sigma~_k = sqrt(nu) sigma_k, G~ = sqrt(nu) G",
        nu = N max_k p_k, varsigma = N min_k p_k,

    with the balanced weights 1/N: B~ = (nu/N^2) sum_k sigma_k^2 + 6 nu L Gamma + 8 (E - 1)^2 nu G^2
    (Gamma is unchanged: F~ = F and (1/N) sum_k F~_k* = sum_k p_k F_k*), kappa~ = (nu/varsigma)
    kappa. As CATALOGUE.md states it ([V]; its sigma~_k = sqrt(nu) sigma read with the index k).

    ``noise_scaling="printed"`` (default) is that substitution; ``"linear"`` scales sigma_k and G
    by nu, as the gradients of F~_k = p_k N F_k are p_k N <= nu times F_k's (their variance and
    second moment by (p_k N)^2 <= nu^2, where the remark's sqrt(nu) gives nu): a reading derived
    here from the remark's own definition of F~_k, not the paper's (its proof was not read).
    nu and varsigma must be those of some weights p (``unbalance(p)`` computes them):
    nu + (N - 1) varsigma <= N <= (N - 1) nu + varsigma. G, sigma_k and L are the F_k's.
    """
    caller = "theorem3_unbalanced"
    within("K", K, caller, 1, N, kind=Integral, rule="K <= N")
    within("nu", nu, caller, 1, N, rule="nu = N max_k p_k <= N")
    if N == 1:
        within("varsigma", varsigma, caller, 1, 1, rule="one device: nu = varsigma = 1")
    else:  # some p with N max p = nu and N min p = varsigma exists iff both inequalities hold; both sides are
        # sums of N float weights (at N = 2 the range is one point): a rounding of them is allowed
        rounding = _SUM_TOLERANCE * N
        within("varsigma", varsigma, caller, max(0.0, N - (N - 1) * nu - rounding), (N - nu) / (N - 1) + rounding,
               closed="right" if N - (N - 1) * nu - rounding <= 0 else "both",
               rule="the weights p of nu and N: nu + (N - 1) varsigma <= N <= (N - 1) nu + varsigma")
    L_tilde, mu_tilde = nu * L, varsigma * mu
    _check_mu(mu, L, caller)
    _check_rounds(T, E, caller)
    scale = np.sqrt(nu) if noise_scaling == "printed" else nu
    B = _b_terms(_times(scale, scale, sigma_sq_sum) / N**2, L_tilde, Gamma, E, scale * G)
    return _convergence("FEDAVG.T3U", theorem3_unbalanced.__doc__, L=L_tilde, mu=mu_tilde, E=E, T=T, K=K, N=N,
                        B=B, C=_scheme2_c(E, scale * G, K, N), initial_distance_sq=initial_distance_sq,
                        derived={"L_tilde": L_tilde, "mu_tilde": mu_tilde, "noise_scale": scale})


@appended(parameters(_ENTRIES, "E", "eta", "c"))
@bound_params({"E": COUNT, "eta": POSITIVE, "c": POSITIVE})
def theorem4_rate(E, eta, c=1.0) -> float:
    """Theorem 4 (necessity of decaying steps), a rate: with E > 1 and a constant step eta, even
    with full gradients FedAvg's limit is

        Omega((E - 1) eta)   away from w*,  read as  c (E - 1) eta.

    As CATALOGUE.md states it ([R]: the problem's constants are hidden in the Omega; ``c`` is
    that hidden constant, never fitted here). E = 1 (gradient descent) gives 0.
    """
    return _times(c, float(E - 1), eta)
