"""FedProx's measured instances: one round's exact expectation over the sampling, and the exact
expected gradient norms of a whole run.

Problems are heterogeneous quadratics without gradient noise (``L = 1`` before any curvature:
every claim here is invariant under ``F -> c F``, ``mu -> c mu``), convex or with non-convex
clients (``negative_curvature``; ``L_minus`` the problem's exact ``curvature_floor``, ``L`` the
largest ``|eigenvalue|`` of any ``A_k``, both sides of L-smoothness). Every constant is exact.

One round (Theorems 4, 11, Corollary 7): from ``w^t`` every device's local solution ``w_k`` is
computed by the algorithm's own solver (:func:`~cflbounds.algorithms.fedprox.local_solutions`:
the exact proximal point, or gradient descent on ``h_k`` until gamma-inexact). Under the paper's
sampling (``K`` slots drawn i.i.d. from ``p_k``, plain average) ``w^(t+1)`` has mean
``wbar = sum_k p_k w_k`` and covariance ``(1/K) sum_k p_k (w_k - wbar)(w_k - wbar)^T``, so on a
quadratic ``f``

    E_(S_t) f(w^(t+1)) - f* = f(wbar) - f* + (1/(2K)) sum_k p_k (w_k - wbar)^T Abar (w_k - wbar),

exactly (no Monte Carlo; ``tests/test_fedprox_claims.py`` checks it against the mean of
:func:`~cflbounds.algorithms.fedprox.fedprox` runs). Under the experiments' sampling with uniform
weights (``K`` of ``N`` without replacement, equal weights) the covariance has the finite
population factor ``(N - K)/(K (N - 1))`` instead of ``1/K`` (reported beside, never judged: the
theorem is proved for the paper's sampling).

A whole run (Theorem 6): with exact local solves ``w_k = P_k w^t + q_k`` (the problem's
``proximal_map``) the round is an affine map drawn at random, so the mean ``m_t`` and second
moment ``S_t`` of ``u_t = w^t - w*`` follow a linear recursion (:func:`moment_map`), and
``E||grad f(w^t)||^2 = tr(Abar^2 S_t)``: the average over ``t < T`` is a geometric sum of that
map, computed by doubling in ``O(log T)`` products (:func:`average_gradient_norm_sq`), exact for
any ``T``.
"""
from __future__ import annotations

import numpy as np

from cflbounds.algorithms.fedprox import local_solutions
from cflbounds.bounds import fedprox as bounds
from cflbounds.claims import Inequality
from cflbounds.synthetic.heterogeneous_quadratics import make_heterogeneous_quadratics
from cflbounds.synthetic.seeding import stream

__all__ = ["RTOL", "GD_STEPS", "problems", "starts", "constants", "smallest_mu", "largest_mu_rho", "one_round",
           "moment_map", "average_gradient_norm_sq", "rho_rows", "convexity_row", "resolution_row", "MU_RESOLUTION"]

# measured and bound are float64 formulas of exact constants and at most a few thousand local steps
# (their rounding: relative 1e-12 at most, tests/test_fedprox_claims.py); far below any planted error
RTOL = 1e-9
GD_STEPS = 5000  # the most local gradient steps a gamma-inexact solve may take
_STREAM_START = 63
# a round with exact solves contracts by 1 - O(lambda/mu): float64 resolves it to about 1e-16 mu/lambda, and
# the T6 sums over ~mu/lambda rounds carry that relative error (1e-6 at the limit; far inside the verdicts' margins)
MU_RESOLUTION = 1e10


def problems(seeds, *, clients: int, d: int, mu_over_L: float, heterogeneity: float, hessian_spread: float,
             negative_curvature: float = 0.0, device: str = "cpu"):
    """One noise-free heterogeneous quadratic problem per seed (uniform weights, spectrum ends
    ``mu_over_L`` and 1, non-convex clients with ``negative_curvature > 0``)."""
    return make_heterogeneous_quadratics(
        clients, d, strong_convexity=float(mu_over_L), smoothness=1.0, heterogeneity=float(heterogeneity),
        hessian_spread=float(hessian_spread), negative_curvature=float(negative_curvature), noise_std=0.0,
        batch_size=len(seeds), seed=[int(s) for s in seeds], device=device)


def starts(problem, distance) -> np.ndarray:
    """``w* + distance u`` ``(B, d)``, ``u`` uniform on the sphere from each problem's own seed
    (``distance`` one value or one per problem)."""
    directions = np.stack([stream(int(s), _STREAM_START).standard_normal(problem.d) for s in problem.seeds])
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return problem.minimizer + np.asarray(distance, dtype=float).reshape(-1, 1) * directions


def constants(problem) -> dict:
    """The exact ``L`` (largest ``|eigenvalue|`` of any ``A_k``) and ``L_minus`` per problem."""
    L_minus = np.asarray(problem.curvature_floor, dtype=float)
    return {"L": np.maximum(np.asarray(problem.smoothness, dtype=float), L_minus), "L_minus": L_minus}


def smallest_mu(*, gamma, B, L, L_minus, K, rho=bounds.rho) -> float:
    """The smallest ``mu`` with ``rho(mu) >= 0`` (``mu rho`` increases with ``mu``: every term but
    the first two falls as ``mu`` grows), by bisection on ``rho`` itself; ``nan`` when no ``mu``
    makes ``rho`` positive (``mu rho -> 1 - gamma B - sqrt(2) B (1 + gamma)/sqrt(K)`` as
    ``mu -> inf``: that limit must be positive). ``rho``: the formula (a planted one in tests)."""
    def positive(mu):
        return rho(mu=mu, gamma=gamma, B=B, L=L, L_minus=L_minus, K=K) > 0

    high = max(2.0 * L_minus, L, 1e-300) * 2.0
    for _ in range(200):
        if positive(high):
            break
        high *= 4.0
    else:
        return float("nan")
    low = L_minus
    for _ in range(200):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        low, high = (low, middle) if positive(middle) else (middle, high)
    return float(high)


def largest_mu_rho(*, gamma, B, L, L_minus, K, rho=bounds.rho) -> float:
    """The ``mu`` where ``rho`` is largest (a golden-section search on ``log mu`` above
    :func:`smallest_mu`: ``rho`` rises from 0 there and falls like ``1/mu`` far away); ``nan``
    when no ``mu`` makes ``rho`` positive."""
    low = smallest_mu(gamma=gamma, B=B, L=L, L_minus=L_minus, K=K, rho=rho)
    if not np.isfinite(low):
        return float("nan")
    a, b = np.log(low), np.log(low) + np.log(1e4)
    ratio = (np.sqrt(5.0) - 1.0) / 2.0

    def value(log_mu):
        return rho(mu=float(np.exp(log_mu)), gamma=gamma, B=B, L=L, L_minus=L_minus, K=K)

    for _ in range(80):
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        a, b = (a, d) if value(c) > value(d) else (c, b)
    return float(np.exp(0.5 * (a + b)))


def one_round(problem, w, mu, *, gamma=None, K) -> dict:
    """One FedProx round from ``w^t = w`` ``(B, d)`` at ``mu`` ``(B,)``: exact solves (``gamma``
    None) or gradient descent on ``h_k`` until gamma-inexact (at most :data:`GD_STEPS` steps).

    Returns per problem ``(B,)``: ``before`` ``f(w^t) - f*``, ``after`` ``E_(S_t) f(w^(t+1)) - f*``
    under the paper's sampling with ``K`` slots (``K`` one value or one per problem),
    ``after_experiments`` the same under uniform sampling of ``K`` of ``N`` without replacement
    (nan when ``K > N``), ``gradient_norm_sq`` ``||grad f(w^t)||^2``, ``B`` ``B(w^t)``,
    ``gamma`` the largest realised gamma_k over the devices, ``steps`` the most local steps."""
    options = {} if gamma is None else {"local_solver": "gd", "local_steps": GD_STEPS, "inexactness": float(gamma)}
    local = local_solutions(problem, w, mu=mu, **options)
    p = np.asarray(problem.weights, dtype=float)
    mean = np.einsum("n,bnd->bd", p, local.solutions)
    spread = local.solutions - mean[:, None]
    curvature = np.einsum("bnd,bde,bne->bn", spread, problem.global_hessian, spread)  # (w_k - wbar)^T Abar (.)
    variance = curvature @ p
    N, K = problem.clients, np.broadcast_to(np.asarray(K, dtype=float), (problem.batch_size,))
    with np.errstate(divide="ignore", invalid="ignore"):
        finite_population = np.where(K <= N, (N - K) / (K * max(N - 1, 1)), np.nan)
    at_mean = problem.objective_gap(mean[:, None])[:, 0]
    return {"before": problem.objective_gap(np.asarray(w, dtype=float)[:, None])[:, 0],
            "after": at_mean + variance / (2.0 * K),
            "after_experiments": at_mean + 0.5 * finite_population * variance,
            "gradient_norm_sq": np.square(problem.gradient(np.asarray(w, dtype=float)[:, None])[:, 0]).sum(-1),
            "B": problem.local_dissimilarity(np.asarray(w, dtype=float)[:, None])[:, 0],
            "gamma": local.inexactness.max(axis=1), "steps": local.local_steps_taken.max(axis=1)}


def moment_map(problem, mu, K) -> np.ndarray:
    """The linear map of ``s_t = (m_t, vec S_t, 1)`` (``u_t = w^t - w*``: mean, second moment)
    for one round with exact solves under the paper's sampling, ``(B, n, n)``, ``n = d + d^2 + 1``
    (module docstring): with ``X_k = P_k u + r_k``, ``r_k = P_k w* + q_k - w* = (A_k + mu I)^-1 A_k
    (b_k - w*)``,
    ``m' = Pbar m + rbar``, ``S' = (1 - 1/K) E[Pbar u + rbar]^(2) + (1/K) sum_k p_k E[X_k X_k^T]``."""
    operator = problem.proximal_map(mu)[0].double().cpu().numpy()
    p, B, d = np.asarray(problem.weights, dtype=float), problem.batch_size, problem.d
    K = np.broadcast_to(np.asarray(K, dtype=float), (B,))[:, None, None]
    mus = np.broadcast_to(np.asarray(mu, dtype=float), (B,))[:, None, None, None]
    # r_k = P_k w* + q_k - w* = (A_k + mu I)^-1 A_k (b_k - w*): without the cancellation of the first
    # form, which at large mu leaves rounding of ||w*|| eps per round against a drift of O(1/mu)
    hessians = problem.hessians_exact
    r = np.linalg.solve(hessians + mus * np.eye(d), np.einsum("bnij,bnj->bni", hessians,
                        problem.optima_exact - problem.minimizer[:, None])[..., None])[..., 0]

    def blocks(P, q):
        """``(vec(P S P^T), vec(P m q^T + q m^T P^T), vec(q q^T))`` as matrices on (S, m) and a vector."""
        on_S = np.einsum("...ik,...jl->...ijkl", P, P).reshape(*P.shape[:-2], d * d, d * d)
        on_m = (np.einsum("...ik,...j->...ijk", P, q) + np.einsum("...i,...jk->...ijk", q, P)).reshape(
            *P.shape[:-2], d * d, d)
        constant = np.einsum("...i,...j->...ij", q, q).reshape(*P.shape[:-2], d * d)
        return on_S, on_m, constant

    mean_P, mean_r = np.einsum("n,bnij->bij", p, operator), np.einsum("n,bni->bi", p, r)
    S_mean, m_mean, c_mean = blocks(mean_P, mean_r)
    S_each, m_each, c_each = (np.einsum("n,bn...->b...", p, part) for part in blocks(operator, r))
    n = d + d * d + 1
    M = np.zeros((B, n, n))
    M[:, :d, :d], M[:, :d, -1] = mean_P, mean_r
    M[:, d:-1, d:-1] = (1.0 - 1.0 / K) * S_mean + S_each / K
    M[:, d:-1, :d] = (1.0 - 1.0 / K) * m_mean + m_each / K
    M[:, d:-1, -1] = (1.0 - 1.0 / K[..., 0]) * c_mean + c_each / K[..., 0]
    M[:, -1, -1] = 1.0
    return M


def average_gradient_norm_sq(problem, w0, mu, K, rounds) -> np.ndarray:
    """``(1/T) sum_(t<T) E||grad f(w^t)||^2`` per problem for FedProx with exact solves under the
    paper's sampling from ``w^0 = w0`` ``(B, d)``, ``T = rounds`` (one value or one per problem):
    ``sum_(t<T) M^t`` by doubling (``G(2n) = G(n)(I + M^n)``, ``G(n + 1) = I + M G(n)``)."""
    M = moment_map(problem, mu, K)
    B, d, n = problem.batch_size, problem.d, M.shape[-1]
    u = np.asarray(w0, dtype=float) - problem.minimizer
    state = np.concatenate([u, np.einsum("bi,bj->bij", u, u).reshape(B, d * d), np.ones((B, 1))], axis=1)
    rounds = np.broadcast_to(np.asarray(rounds, dtype=np.int64), (B,))
    total = np.empty(B)
    square = np.einsum("bij,bjk->bik", problem.global_hessian, problem.global_hessian).reshape(B, d * d)
    for b in range(B):
        G, power = np.eye(n), M[b]  # G(1) = I, power = M^1
        for bit in bin(int(rounds[b]))[3:]:  # from the leading 1 down: G(2n) then maybe G(2n + 1)
            with np.errstate(all="ignore"):
                G, power = G + power @ G, power @ power
                if bit == "1":
                    G, power = np.eye(n) + M[b] @ G, M[b] @ power
        summed = G @ state[b]
        total[b] = square[b] @ summed[d:-1] / rounds[b]
    return total


def rho_rows(*, mu, gamma, L_minus, rho_value) -> list[Inequality]:
    """Theorem 4's standing rows at one instance: ``mu_bar > 0``, ``gamma <= 1`` and ``rho > 0``."""
    return [Inequality("mu_bar = mu - L_minus > 0", mu, L_minus, ">", "FedProx Theorem 4"),
            Inequality("realised gamma <= 1 (gamma-inexact solves)", gamma, 1.0, "<=", "FedProx Definition 2"),
            Inequality("rho > 0", rho_value, 0.0, ">", "FedProx Theorem 4")]


def convexity_row(problem, b: int) -> Inequality:
    """Corollary 7's convex F_k: ``min_k lambda_min(A_k) >= 0`` for problem ``b``."""
    return Inequality("every F_k convex: min_k lambda_min(A_k) >= 0", float(problem.strong_convexity[b]), 0.0, ">=",
                      "FedProx Corollary 7")


def resolution_row(problem, b: int, mu: float) -> Inequality:
    """``mu / lambda_min(Abar) <= MU_RESOLUTION``: where float64 still resolves a round's
    contraction (an instance beyond it is not evaluated: its numbers would be rounding)."""
    floor = float(np.linalg.eigvalsh(problem.global_hessian[b])[0])
    return Inequality("mu / lambda_min(sum_k p_k A_k) <= 1e10 (float64 resolves a round's contraction)", mu / floor,
                      MU_RESOLUTION, "<=", "cflbounds (numerical range of the exact moments)")
