"""FedProx as code (Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, "Federated Optimization in
Heterogeneous Networks", MLSys 2020, arXiv:1812.06127).

Round t: K devices chosen, each with probability p_k; each returns a gamma-inexact minimiser of
h_k(w; w^t) = F_k(w) + (mu/2)||w - w^t||^2 (||grad h_k(w_k; w^t)|| <= gamma ||grad F_k(w^t)||,
gamma in [0, 1]); w^(t+1) = (1/K) sum_k w_k. Each F_k L-smooth with grad^2 F_k >= -L_minus I,
mu_bar = mu - L_minus > 0; B-local dissimilarity B(w) = sqrt(E_k ||grad F_k(w)||^2 /
||grad f(w)||^2) <= B (B(w) >= 1 always).

Provenance: the statements are CATALOGUE.md's (marked [V] there); the primary text was not
reachable from this machine (the stored copies hold the abstract only). Two secondary
restatements read here (fl-sim's documentation, docs/source/algorithms.rst in
github.com/wenh06/fl-sim, and a markdown summary of the paper) print Theorem 4's rho exactly as
CATALOGUE.md does; a third (a Chinese note) prints its fifth term with mu^2 instead of
mu_bar^2 (mu_bar^2 is encoded: the two agree for convex F_k). The summary numbers the
bounded-variance result Corollary 10 and the variable-gamma one Corollary 9 (arXiv numbering);
CATALOGUE.md's "Theorem 11" is that bounded-variance result. fl-sim writes B(w) without the
square root; the definition with it is encoded. The authors' code (github.com/litian96/FedProx,
flearn/trainers/fedbase.py and fedprox.py) computes no bound, and runs the experiments' scheme,
not the analysis': K devices drawn uniformly without replacement (``select_clients``, whose
docstring says "weighted by number of samples"), solutions averaged with weights n_k; its
"gradient difference", the variance of Theorem 11, is an unweighted mean over devices of
||grad f - grad F_k||^2 (the paper's E_k is over k ~ p_k).
"""
from __future__ import annotations

import numpy as np

from ._constraints import AT_LEAST_ONE, COUNT, NONNEGATIVE, POSITIVE, UNIT, bound_params, within
from ._docstring import appended, parameters
from ._report import BoundResult, Inequality

__all__ = ["rho_terms", "rho", "assumptions", "theorem4", "corollary7", "corollary7_follows", "theorem6_rounds",
           "dissimilarity_from_variance", "theorem11"]

_ENTRIES = {
    "mu": ("float", "the proximal weight mu of h_k(w; w^t) = F_k(w) + (mu/2)||w - w^t||^2 (mu > L_minus)"),
    "gamma": ("float", "the local solves' inexactness, ||grad h_k(w_k; w^t)|| <= gamma ||grad F_k(w^t)||, "
                       "0 <= gamma <= 1"),
    "B": ("float", "the B-local dissimilarity at w^t, B(w^t) = sqrt(E_k ||grad F_k(w^t)||^2 / ||grad f(w^t)||^2) <= B "
                   "(B >= 1)"),
    "L": ("float", "smoothness of every F_k"),
    "L_minus": ("float", "the curvature bound grad^2 F_k >= -L_minus I (0 for convex F_k)"),
    "K": ("int", "devices chosen per round"),
    "Delta": ("float", "Delta = f(w^0) - f*, the initial gap"),
    "epsilon": ("float", "the threshold epsilon (Theorem 6: the target (1/T) sum_(t<T) E||grad f(w^t)||^2 <= epsilon, "
                         "B being B_epsilon, B(w) <= B wherever ||grad f(w)||^2 > epsilon; Theorem 11: Theorem 4 "
                         "applies where ||grad f(w^t)||^2 >= epsilon)"),
    "sigma_sq": ("float", "sigma^2, the bound on the devices' gradient variance E_k ||grad F_k(w) - grad f(w)||^2"),
}
_RHO = ("mu", "gamma", "B", "L", "L_minus", "K")
_COROLLARY7 = parameters({**_ENTRIES, "L": ("float", "smoothness of every (convex) F_k"),
                          "B": ("float", "the B-local dissimilarity bound (1 << B <= 0.5 sqrt(K))")}, "L", "B", "K")
_CONSTANTS = {"mu": POSITIVE, "gamma": UNIT, "L": POSITIVE, "L_minus": NONNEGATIVE, "K": COUNT}


def _check_mu(mu, L_minus, caller):
    within("mu", mu, caller, L_minus, None, closed="neither", rule="mu > L_minus: mu_bar = mu - L_minus > 0")


def _scaled_terms(mu, gamma, B, L, L_minus, K) -> dict:
    """Theorem 4's six terms times mu (> 0), so that none is inf/inf or 0 * inf and their sum is
    never inf - inf: ``mu rho = 1 - gamma B - ...``."""
    mu_bar = mu - L_minus
    ratio = mu / mu_bar  # >= 1
    spread = B * (1.0 + gamma)
    return {"proximal": 1.0,
            "inexactness": gamma * B,
            "sampling": np.sqrt(2.0) * spread / np.sqrt(K) * ratio,
            "smoothness": L * spread / mu_bar,
            "second_order": L * spread**2 / (2.0 * mu_bar) * ratio,
            "sampling_second_order": L * spread**2 * (2.0 * np.sqrt(2.0 * K) + 2.0) / (mu_bar * K) * ratio}


@appended(parameters(_ENTRIES, *_RHO))
@bound_params({**_CONSTANTS, "B": AT_LEAST_ONE})
def rho_terms(*, mu, gamma, B, L, L_minus, K) -> dict:
    """Theorem 4's rho term by term, signed, summing to rho: ``1/mu``, ``-gamma B/mu``,
    ``-sqrt(2) B (1 + gamma)/(mu_bar sqrt(K))``, ``-L B (1 + gamma)/(mu_bar mu)``,
    ``-L (1 + gamma)^2 B^2/(2 mu_bar^2)``, ``-L B^2 (1 + gamma)^2 (2 sqrt(2K) + 2)/(mu_bar^2 K)``.
    """
    _check_mu(mu, L_minus, "rho_terms")
    return _signed_terms(mu, gamma, B, L, L_minus, K)


def _signed_terms(mu, gamma, B, L, L_minus, K) -> dict:
    scaled = _scaled_terms(mu, gamma, B, L, L_minus, K)
    return {name: (1.0 if name == "proximal" else -1.0) * value / mu for name, value in scaled.items()}


def _rho(mu, gamma, B, L, L_minus, K) -> float:
    scaled = _scaled_terms(mu, gamma, B, L, L_minus, K)
    return (scaled.pop("proximal") - sum(scaled.values())) / mu


@appended(parameters(_ENTRIES, *_RHO))
@bound_params({**_CONSTANTS, "B": AT_LEAST_ONE})
def rho(*, mu, gamma, B, L, L_minus, K) -> float:
    """Theorem 4's ``rho = 1/mu - gamma B/mu - sqrt(2) B (1 + gamma)/(mu_bar sqrt(K))
    - L B (1 + gamma)/(mu_bar mu) - L (1 + gamma)^2 B^2/(2 mu_bar^2)
    - L B^2 (1 + gamma)^2 (2 sqrt(2K) + 2)/(mu_bar^2 K)``, mu_bar = mu - L_minus.
    """
    _check_mu(mu, L_minus, "rho")
    return _rho(mu, gamma, B, L, L_minus, K)


@appended(parameters(_ENTRIES, *_RHO))
@bound_params({**_CONSTANTS, "B": AT_LEAST_ONE})
def assumptions(*, mu, gamma, B, L, L_minus, K) -> tuple[Inequality, ...]:
    """Theorem 4's conditions with both sides: ``mu_bar = mu - L_minus > 0`` and, where mu_bar
    is positive, ``rho > 0`` (a non-positive rho promises no decrease: the theorem says
    nothing). Unlike the theorem, these rows do not refuse mu <= L_minus: they report it.
    """
    return _rows(mu, gamma, B, L, L_minus, K)


def _rows(mu, gamma, B, L, L_minus, K) -> tuple[Inequality, ...]:
    rows = [Inequality("mu_bar = mu - L_minus > 0", mu, L_minus, ">", "FedProx Theorem 4")]
    if mu > L_minus:
        rows.append(Inequality("rho > 0", _rho(mu, gamma, B, L, L_minus, K), 0.0, ">", "FedProx Theorem 4"))
    return tuple(rows)


@appended(parameters(_ENTRIES, *_RHO))
@bound_params({**_CONSTANTS, "B": AT_LEAST_ONE})
def theorem4(*, mu, gamma, B, L, L_minus, K) -> BoundResult:
    """Theorem 4 (non-convex FedProx, one round): if w^t is not stationary, B(w^t) <= B, every
    local solve is gamma-inexact and rho > 0, then E_(S_t) f(w^(t+1)) <= f(w^t) - rho ||grad f(w^t)||^2,

        rho = 1/mu - gamma B/mu - sqrt(2) B (1 + gamma)/(mu_bar sqrt(K)) - L B (1 + gamma)/(mu_bar mu)
              - L (1 + gamma)^2 B^2/(2 mu_bar^2) - L B^2 (1 + gamma)^2 (2 sqrt(2K) + 2)/(mu_bar^2 K).

    As CATALOGUE.md states it ([V]); the primary text was not reachable here (module
    docstring). ``value`` is rho, ``terms`` its six signed terms; mu <= L_minus is refused
    (mu_bar > 0 is the theorem's standing assumption), rho <= 0 is reported by its row.
    """
    _check_mu(mu, L_minus, "theorem4")
    return BoundResult("FEDPROX.T4", _rho(mu, gamma, B, L, L_minus, K), _signed_terms(mu, gamma, B, L, L_minus, K),
                       {"mu_bar": mu - L_minus}, _rows(mu, gamma, B, L, L_minus, K), theorem4.__doc__)


def _check_corollary7(B, K, caller):
    within("B", B, caller, 1, 0.5 * np.sqrt(K), rule="Corollary 7's regime 1 << B <= 0.5 sqrt(K)")


@appended(_COROLLARY7)
@bound_params({"L": POSITIVE, "B": AT_LEAST_ONE, "K": COUNT})
def corollary7(*, L, B, K) -> BoundResult:
    """Corollary 7 (convex F_k, exact local solves gamma = 0): "if 1 << B <= 0.5 sqrt(K), then we
    can choose mu ~ 6 L B^2 from which it follows that rho ~ 1/(24 L B^2)":

        mu = 6 L B^2,   rho = 1/(24 L B^2).

    As CATALOGUE.md states it ([V]); the primary text was not reachable here. ``value`` is the
    corollary's rho, ``derived["mu"]`` its mu; B outside [1, 0.5 sqrt(K)] is refused ("1 << B"
    is no inequality: it is left to the claim). corollary7_follows compares it with Theorem 4.
    """
    _check_corollary7(B, K, "corollary7")
    return BoundResult("FEDPROX.C7", 1.0 / (24.0 * L * B**2), {}, {"mu": 6.0 * L * B**2},
                       (Inequality("B <= 0.5 sqrt(K)", B, 0.5 * np.sqrt(K), "<=", "FedProx Corollary 7"),),
                       corollary7.__doc__)


@appended(_COROLLARY7)
@bound_params({"L": POSITIVE, "B": AT_LEAST_ONE, "K": COUNT})
def corollary7_follows(*, L, B, K) -> BoundResult:
    """Corollary 7 from Theorem 4: Theorem 4's rho at the corollary's choices (gamma = 0,
    L_minus = 0, mu = 6 L B^2) against the corollary's rho = 1/(24 L B^2), for B in its range.

    ``value`` is Theorem 4's rho there; ``derived["corollary"]`` the corollary's,
    ``derived["ratio"]`` theorem/corollary. The row "Theorem 4's rho >= 1/(24 L B^2)" says
    whether the corollary's "rho ~ 1/(24 L B^2)" is a lower bound the theorem guarantees; as B
    grows with B/sqrt(K) = r fixed, Theorem 4's rho times L B^2 tends to (1 - sqrt(2) r)/6 - 1/72
    (1/24 at r = sqrt(2)/3, about 0.471; 0.0349 at r = 0.5, the range's edge).
    """
    _check_corollary7(B, K, "corollary7_follows")
    mu = 6.0 * L * B**2
    scale_free = _rho(6.0 * B**2, 0.0, B, 1.0, 0.0, K)  # at mu = 6 L B^2 every term of rho is 1/L times its L = 1 value
    theorem, corollary = scale_free / L, 1.0 / (24.0 * B**2) / L  # no inf/inf at extreme L
    rows = (Inequality("L x Theorem 4's rho at mu = 6 L B^2, gamma = 0 >= 1/(24 B^2) (L > 0 divided out)", scale_free,
                       1.0 / (24.0 * B**2), ">=", "FedProx Corollary 7 from Theorem 4"),)
    return BoundResult("FEDPROX.C7", theorem, {}, {"mu": mu, "corollary": corollary, "ratio": 24.0 * B**2 * scale_free},
                       rows, corollary7_follows.__doc__)


@appended(parameters(_ENTRIES, "Delta", "epsilon", *_RHO))
@bound_params({**_CONSTANTS, "B": AT_LEAST_ONE, "Delta": NONNEGATIVE, "epsilon": POSITIVE})
def theorem6_rounds(*, Delta, epsilon, mu, gamma, B, L, L_minus, K) -> BoundResult:
    """Theorem 6 (rounds to an epsilon-stationary average): with B(w) <= B_epsilon wherever
    ||grad f(w)||^2 > epsilon and Delta = f(w^0) - f*, after T = O(Delta/(rho epsilon)) rounds
    (1/T) sum_(t<T) E||grad f(w^t)||^2 <= epsilon; encoded with the constant the telescoping
    of Theorem 4 gives,

        T = max(1, ceil(Delta / (rho epsilon))),   rho = Theorem 4's at B = B_epsilon.

    As CATALOGUE.md states it ([V]); the constant 1 is this encoding's (sum_(t<T) rho
    E||grad f(w^t)||^2 <= Delta). ``value`` is T, inf when rho <= 0 (the theorem then says
    nothing: its row fails); ``derived["average_gradient_bound"]`` is Delta/(rho T).
    """
    _check_mu(mu, L_minus, "theorem6_rounds")
    value = _rho(mu, gamma, B, L, L_minus, K)
    if value <= 0:
        rounds, average = np.inf, np.inf
    elif Delta == 0:  # already optimal: any T >= 1 has average gradient 0
        rounds, average = 1.0, 0.0
    else:
        rounds = max(1.0, float(np.ceil(Delta / (value * epsilon))))
        average = Delta / (value * rounds)
    return BoundResult("FEDPROX.T6", rounds, {}, {"rho": value, "average_gradient_bound": average},
                       _rows(mu, gamma, B, L, L_minus, K), theorem6_rounds.__doc__)


@appended(parameters(_ENTRIES, "sigma_sq", "epsilon"))
@bound_params({"sigma_sq": NONNEGATIVE, "epsilon": POSITIVE})
def dissimilarity_from_variance(sigma_sq, epsilon) -> float:
    """``B = sqrt(1 + sigma^2/epsilon)``: a bound on B(w) wherever ||grad f(w)||^2 >= epsilon when
    E_k||grad F_k(w) - grad f(w)||^2 <= sigma^2 (E_k||grad F_k||^2 = ||grad f||^2 +
    E_k||grad F_k - grad f||^2, grad f being E_k grad F_k).
    """
    return np.sqrt(1.0 + sigma_sq / epsilon)


@appended(parameters(_ENTRIES, "mu", "gamma", "sigma_sq", "epsilon", "L", "L_minus", "K"))
@bound_params({**_CONSTANTS, "sigma_sq": NONNEGATIVE, "epsilon": POSITIVE})
def theorem11(*, mu, gamma, sigma_sq, epsilon, L, L_minus, K) -> BoundResult:
    """Theorem 11 (bounded variance E_k||grad F_k(w) - grad f(w)||^2 <= sigma^2): Theorem 4's rho
    holds with

        B = sqrt(1 + sigma^2/epsilon)   whenever ||grad f(w^t)||^2 >= epsilon.

    As CATALOGUE.md states it ([V]; a secondary summary numbers it Corollary 10). ``value`` is
    that rho, ``derived["B"]`` that B; the rows are Theorem 4's.
    """
    _check_mu(mu, L_minus, "theorem11")
    B = np.sqrt(1.0 + sigma_sq / epsilon)
    return BoundResult("FEDPROX.T11", _rho(mu, gamma, B, L, L_minus, K), _signed_terms(mu, gamma, B, L, L_minus, K),
                       {"B": B}, _rows(mu, gamma, B, L, L_minus, K), theorem11.__doc__)
