"""TEXTBOOK.GD: gradient descent contracts the distance to the minimiser of a quadratic.

For ``f(x) = (1/2)(x - x*)^T H (x - x*)`` with the eigenvalues of ``H`` in ``[mu, L]``,
``x+ = x - eta grad f(x)`` gives ``x+ - x* = (I - eta H)(x - x*)``, so (Nesterov,
*Lectures on Convex Optimization*, 2018, Thm 2.1.15; Polyak 1987, Sec. 1.4)

    ||x_T - x*|| <= max(|1 - eta mu|, |1 - eta L|)^T ||x_0 - x*||     for 0 < eta <= 2/(mu + L),

with equality when ``x_0 - x*`` is an eigenvector of the extreme eigenvalue. TEXTBOOK.GD-PLANTED
claims the wrong factor ``(1 - 2 eta mu)^T``, which a start along the slowest direction refutes.
"""
from __future__ import annotations

from numbers import Integral, Real

import math

import numpy as np
import pandas as pd
import torch

from cflbounds.claims import Claim, Domain, Inequality, Instance, Interval, Parameter, require, rules, validate_params

POSITIVE = [Interval(Real, 0, None, closed="neither")]
CONSTANTS = {"mu": POSITIVE, "L": POSITIVE, "eta": POSITIVE, "T": [Interval(Integral, 0, None, closed="left")],
             "initial_distance": [Interval(Real, 0, None, closed="left")]}
# float64 rounding of T <= 50 products with a d <= 32 matrix stays below 1e-12 relative; 1e-9 leaves
# three orders of margin and is far below any planted error (the planted factor is off by >= 1 %)
RTOL = 1e-9
SIZES = {"smoke": (64, 8), "default": (512, 16), "paper": (4096, 32)}  # problems per kind of start, dimension
HORIZONS = (1, 2, 5, 10, 20, 50)
STARTS = ("random direction", "slowest direction (mu)", "fastest direction (L)")


def _admissible(mu, L, eta):
    require(mu <= L, f"The 'mu' parameter ({mu}) must not exceed 'L' ({L}): mu <= L.")
    require(eta <= 2.0 / (mu + L), f"The 'eta' parameter ({eta}) must be at most 2/(mu + L) = {2.0 / (mu + L):.6g}.")


# the constants' meanings, shown by `cflbounds bound TEXTBOOK.GD --help` (numpydoc "Parameters")
PARAMETERS = """
    Parameters
    ----------
    mu : float
        strong convexity: the smallest eigenvalue of the Hessian, mu > 0
    L : float
        smoothness: the largest eigenvalue of the Hessian, L >= mu
    eta : float
        step size, 0 < eta <= 2/(mu + L)
    T : int
        number of gradient steps
    initial_distance : float
        ||x_0 - x*||, the starting distance to the minimiser
"""


@validate_params(CONSTANTS)
def gd_bound(mu, L, eta, T, initial_distance=1.0) -> float:
    _admissible(mu, L, eta)
    return max(abs(1.0 - eta * mu), abs(1.0 - eta * L)) ** T * initial_distance


@validate_params(CONSTANTS)
def planted_gd_bound(mu, L, eta, T, initial_distance=1.0) -> float:
    _admissible(mu, L, eta)
    return (1.0 - 2.0 * eta * mu) ** T * initial_distance


gd_bound.__doc__ = """``max(|1 - eta mu|, |1 - eta L|)^T ||x_0 - x*||``: the distance to the minimiser after T
    gradient steps on an L-smooth, mu-strongly convex quadratic (Nesterov 2018, Thm 2.1.15).
""" + PARAMETERS
planted_gd_bound.__doc__ = """A planted error: ``(1 - 2 eta mu)^T ||x_0 - x*||``, false on every problem started along
    the slowest direction (where the distance shrinks by exactly ``|1 - eta mu|`` a step).
""" + PARAMETERS


def gd_runs(ctx) -> pd.DataFrame:
    """Gradient descent on random quadratics with exact constants, every run at every horizon:
    one row per (problem, T) with mu, L, eta, ||x_0 - x*|| and the measured ||x_T - x*||.
    Shared by both claims (one experiment per verify call)."""
    return ctx.shared(("textbook-gd", ctx.scale, ctx.seed), lambda: _run(ctx))


def _run(ctx) -> pd.DataFrame:
    count, d = SIZES[ctx.scale]
    generator = torch.Generator().manual_seed(ctx.seed)  # drawn on the CPU: the same problems on every device
    batch = count * len(STARTS)
    uniform = lambda *shape: torch.rand(*shape, generator=generator, dtype=torch.float64)  # noqa: E731
    L = 10.0 ** (2 * uniform(batch) - 1)  # L in [0.1, 10], mu/L in [1e-3, 1]
    mu = L * 10.0 ** (-3 * uniform(batch))
    eta = 2.0 / (mu + L) * torch.where(torch.arange(batch) % 4 == 0, 1.0, uniform(batch))  # a quarter at the edge
    eigenvalues = mu[:, None] + (L - mu)[:, None] * uniform(batch, d)
    eigenvalues[:, 0], eigenvalues[:, 1] = mu, L  # the extreme eigenvalues are exactly mu and L
    basis, _ = torch.linalg.qr(torch.randn(batch, d, d, generator=generator, dtype=torch.float64))
    kind = torch.arange(batch) % len(STARTS)
    random = torch.nn.functional.normalize(torch.randn(batch, d, generator=generator, dtype=torch.float64), dim=1)
    direction = torch.where((kind == 0)[:, None], random, basis[torch.arange(batch), :, kind.clamp(min=1) - 1])
    start = direction * 10.0 ** (2 * uniform(batch, 1) - 1)  # x_0 - x*, ||x_0 - x*|| in [0.1, 10]
    hessian = (basis * eigenvalues[:, None, :]) @ basis.transpose(1, 2)
    error, eta_device = start.to(ctx.device), eta.to(ctx.device)
    hessian = hessian.to(ctx.device)
    distances = []
    for step in range(1, max(HORIZONS) + 1):  # x+ - x* = (I - eta H)(x - x*): batched over every problem
        error = error - eta_device[:, None] * (hessian @ error[:, :, None])[:, :, 0]
        if step in HORIZONS:
            distances.append(torch.linalg.vector_norm(error, dim=1).cpu())
    frame = pd.DataFrame({"problem": np.repeat(np.arange(batch), len(HORIZONS)), "d": d,
                          "start": np.repeat(np.array(STARTS)[kind.numpy()], len(HORIZONS)),
                          "mu": np.repeat(mu.numpy(), len(HORIZONS)), "L": np.repeat(L.numpy(), len(HORIZONS)),
                          "eta": np.repeat(eta.numpy(), len(HORIZONS)), "T": np.tile(HORIZONS, batch),
                          "initial_distance": np.repeat(torch.linalg.vector_norm(start, dim=1).numpy(), len(HORIZONS)),
                          "distance": torch.stack(distances, dim=1).reshape(-1).numpy()})
    return frame


def _checker(claim_id: str, bound):
    def check(ctx):
        runs = gd_runs(ctx)
        constants = runs[["mu", "L", "eta", "T", "initial_distance"]].itertuples(index=False)
        runs = runs.assign(bound=[bound(mu, L, eta, int(T), r) for mu, L, eta, T, r in constants])
        ctx.save_table(claim_id.lower().replace(".", "_").replace("-", "_"), runs)
        decision = rules.deterministic(runs["distance"], runs["bound"], rtol=RTOL, quantity="||x_T - x*||",
                                       title=f"{claim_id}: distance after T steps against the bound")
        worst = runs.loc[(runs["distance"] / runs["bound"].abs()).idxmax()]
        return decision.as_verdict(claim_id, ctx, details={
            "problems": f"{len(runs) // len(HORIZONS)} quadratics, d = {runs['d'].iloc[0]}, L in [0.1, 10], mu/L in "
                        f"[1e-3, 1], eta uniform in (0, 2/(mu + L)] (a quarter at 2/(mu + L)), starts: "
                        f"{', '.join(STARTS)}; T in {HORIZONS}",
            "worst": f"start {worst['start']}, T = {int(worst['T'])}, mu = {worst['mu']:.3g}, L = {worst['L']:.3g}, "
                     f"eta = {worst['eta']:.3g}: ||x_T - x*|| = {worst['distance']:.4g} vs bound {worst['bound']:.4g}"})

    return check


# -- the admissible domain, for `cflbounds falsify` ------------------------------------------------
PARAMETERS_SEARCHED = [
    Parameter("L", 0.1, 10.0, log=True, simple=1.0, description="smoothness"),
    Parameter("mu_over_L", 1e-3, 1.0, log=True, simple=0.1, description="mu / L"),
    Parameter("eta_fraction", 0.01, 1.0, simple=1.0, description="eta as a fraction of 2/(mu + L)"),
    Parameter("T", 1, 100, integer=True, log=True, description="gradient steps"),
    Parameter("d", 2, 32, integer=True, log=True, description="dimension"),
    Parameter("alignment", 0.0, 1.0, simple=1.0, description="share of x_0 - x* along the slowest direction "
                                                             "(the rest along a random one)"),
]


def _instance(point: dict, seed: int, bound) -> Instance:
    """One random quadratic at ``point`` (its extreme eigenvalues exactly mu and L), GD run T steps."""
    generator = torch.Generator().manual_seed(seed)
    L, d, T = point["L"], point["d"], point["T"]
    mu = L * point["mu_over_L"]
    eta = point["eta_fraction"] * 2.0 / (mu + L)
    eigenvalues = mu + (L - mu) * torch.rand(d, generator=generator, dtype=torch.float64)
    eigenvalues[0], eigenvalues[1] = mu, L
    basis, _ = torch.linalg.qr(torch.randn(d, d, generator=generator, dtype=torch.float64))
    random = torch.nn.functional.normalize(torch.randn(d, generator=generator, dtype=torch.float64), dim=0)
    start = torch.nn.functional.normalize(point["alignment"] * basis[:, 0] + (1 - point["alignment"]) * random, dim=0)
    error = start.clone()
    for _ in range(T):  # x+ - x* = (I - eta H)(x - x*), with H applied in its eigenbasis
        error = error - eta * (basis @ (eigenvalues * (basis.T @ error)))
    assumptions = [Inequality("mu <= L", mu, L, "<=", "Nesterov 2018, Thm 2.1.15").as_dict(),
                   Inequality("eta <= 2/(mu + L)", eta, 2.0 / (mu + L), "<=", "the claim's step size").as_dict()]
    # math.hypot scales: a norm as sqrt(sum of squares) underflows to subnormals below 1e-154 and loses
    # digits there (a relative 6e-6 at distances near 1e-160, which falsify took for a violation)
    return Instance(math.hypot(*error.tolist()), bound(mu, L, eta, T, 1.0), assumptions,
                    details={"mu": mu, "eta": eta})


def _domain(bound) -> Domain:
    return Domain(PARAMETERS_SEARCHED, lambda points, seeds, ctx: [_instance(p, s, bound) for p, s in zip(points, seeds)],
                  rule="deterministic", rtol=RTOL,
                  note="quadratics by L, mu/L, eta/(2/(mu+L)), T, d and how far the start leans to the slowest direction")


GD = Claim("TEXTBOOK.GD", "Gradient descent with 0 < eta <= 2/(mu + L) on an L-smooth, mu-strongly convex quadratic: "
           "||x_T - x*|| <= max(|1 - eta mu|, |1 - eta L|)^T ||x_0 - x*||.",
           check=_checker("TEXTBOOK.GD", gd_bound), bound=gd_bound, domain=_domain(gd_bound),
           reference="Nesterov, Lectures on Convex Optimization (2018), Thm 2.1.15")
GD_PLANTED = Claim("TEXTBOOK.GD-PLANTED", "A planted error: the same with the factor (1 - 2 eta mu)^T.",
                   check=_checker("TEXTBOOK.GD-PLANTED", planted_gd_bound), bound=planted_gd_bound,
                   domain=_domain(planted_gd_bound),
                   reference="planted (false) twin of TEXTBOOK.GD")
