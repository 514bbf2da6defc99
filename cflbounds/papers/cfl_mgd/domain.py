"""CFL-MGD's admissible domains for ``cflbounds falsify``: Lemma 1 (MGD.L1) and Lemma 2 (MGD.L2).

Both search the problem families of :mod:`.problems` (exact constants) with the toolkit's own
runs: Lemma 1 the cluster-estimation step that :func:`cflbounds.algorithms.ifca` and CFL-MGD run,
at given models (:func:`.misassignment.cluster_estimates`), Lemma 2 the theory version of
:func:`cflbounds.algorithms.cfl_mgd` from Assumption 4's radius (:func:`.checks._theory_runs`)
against :func:`cflbounds.bounds.cfl_mgd.lemma2`. Assumptions are the rows of
:func:`cflbounds.bounds.cfl_mgd.assumptions` (``>~`` read with C = 1, as MGD.A1-5 reads it):
those of the parameters alone are checked before a point is evaluated, those of the drawn
problem (sigma^2 in ``n' >~ P sigma^2/(mu^2 Delta^4)``) come back with its instance.

**MGD.L1** (eq. 22): for a client of cluster p and p' != p, ``P(i assigned to p') <= c1 sigma^2/
(Delta^4 mu^2 n')``. The lemma names c1 a constant; its proof (eqs. 24-30) makes it 128 (two
Chebyshev terms of 64). The search measures the *implied constant* of each problem draw,
``(misassignment frequency of its clients) / (sigma^2/(Delta^4 mu^2 n'))``, against that 128,
under the ``expectation`` rule: its mean is ``P(misassigned)/(sigma^2/(Delta^4 mu^2 n'))``, so
``E[implied constant] <= 128`` is the lemma with the proof's constant, exactly. Judged this way
(rather than as a frequency against the allowed probability ``128 sigma^2/(...)``, whose
difference tends to 0 from below wherever n' is large, drawing a search toward the least
informative problems) the objective ``log(implied / 128)`` is scale-free, so the search climbs
toward the largest constant any admissible problem needs, and the best ratio reads as "these
problems need c1 >= 128 x ratio". (The Student-t confirmation of a mean of per-draw constants
is asymptotic where an exact binomial interval would not be: the price of that objective.)
Both models are placed anywhere in Assumption 4's balls (radius ``(1/4) sqrt(mu/L) Delta``):
a fraction of the radius and an angle to the line of centers each, in the plane of that line
and a fixed orthogonal axis. sigma^2 is the larger loss variance under cluster 0's data at the
two models, per draw (the smallest value Assumption 3 may take where the proof applies
Chebyshev; as :mod:`.misassignment` reads it). P = 2 suffices: the event "assigned to p'"
implies ``phi_i(chi_p') <= phi_i(chi_p)`` for that one pair, which more clusters only make rarer.

**MGD.L2** (eq. 31): one step of the theory version (eq. 32, eta = 1/L, fresh batches) from the
state ``chi^(t)`` a run reaches after ``t`` steps from Assumption 4's radius (the lemma is
stated for "some iteration t", with the momentum that iteration carries); the event is
``||chi_p^(t+1) - chi*_p|| > (1 - l mu/(8L)) ||chi_p^(t) - chi*_p|| + rho0`` for some p,
among the runs whose state is within Assumption 4's ball for every p (the lemma's hypothesis),
against the allowed ``P lambda5`` (``probability`` rule). rho0 is eq. (31)/(A36) with the
proof's constants and drift term as printed (``c4 l``), the lambdas minimising it at
``P (lambda0 + P lambda1 + 2 lambda2 + lambda3 + P lambda4) = 0.1`` (as MGD.L2's check), and
``P lambda5`` adds ``4 P exp(-c l m)`` with c = 1 (:func:`~cflbounds.bounds.cfl_mgd.lemma2`'s
default; the row ``P lambda5 < 1`` keeps m where it leaves a claim).
"""
from __future__ import annotations

import math

import numpy as np

from cflbounds.bounds import cfl_mgd as bounds
from cflbounds.claims import Domain, Inequality, Instance, InvalidParameterError, Parameter, VerifyContext
from cflbounds.synthetic.logistic_mixture import S_MAX, teacher_scale
from cflbounds.synthetic.seeding import spawn_seeds
from . import checks
from .misassignment import cluster_estimates
from .problems import FAILURE, FAMILIES, P, PROPORTION, Family, init_radius

__all__ = ["l1_domain", "l2_domain", "placed_in_balls", "L1_FAMILIES", "L2_FAMILIES"]

L1_FAMILIES = FAMILIES  # mlr, quadratics, logistic: those MGD.L1's check measures
L2_FAMILIES = ("mlr", "quadratics")  # those MGD.L2's check measures
DELTA_MAX = math.sqrt(2.0)  # the generators put the optima at norm Delta/sqrt(2); A4's max||chi*|| <= 1
L1_CLIENTS = 40  # m per draw (20 of cluster 0 are judged), as MGD.L1's check
L1_NUMBERS = 2_000_000  # data numbers drawn per evaluation at most: fewer draws at large n' d
L1_DRAWS = (4, 32)
L2_NUMBERS = 2_000_000
L2_DRAWS = (8, 32)
EXPONENT_CONSTANT = 1.0  # c in lambda5's 4 exp(-c l m): lemma2's default


def _curvature_parameters(families) -> list[Parameter]:
    return [Parameter("family", 0, len(families) - 1, integer=True, simple=0,
                      description="problem family: " + ", ".join(f"{i} {kind}" for i, kind in enumerate(families))),
            Parameter("d", 2, 16, integer=True, log=True, simple=2, description="dimension"),
            Parameter("delta", 0.05, DELTA_MAX, log=True, simple=1.0,
                      description="Delta, the distance between the two optima (<= sqrt 2: max||chi*|| <= 1, A4)"),
            Parameter("L", 0.1, 10.0, log=True, simple=1.0, description="quadratics: smoothness L"),
            Parameter("mu_over_L", 0.01, 1.0, log=True, simple=1.0, description="quadratics: mu / L")]


def _family(point: dict, families) -> Family:
    kind = families[point["family"]]
    extra = {"quadratics": {"mu": point["mu_over_L"] * point["L"], "L": point["L"]},
             "logistic": {"regularization": point.get("regularization", 0.1)}}.get(kind, {})
    return Family(kind, point["d"], delta=point["delta"], noise=point.get("noise", 0.0), **extra)


def _parameter_rows(family: Family, point: dict, *, m: int, n_prime: int, init_distance: float,
                    sigma: float = 0.0) -> list[dict]:
    """The rows of :func:`bounds.assumptions` at ``point`` (sigma given: all; else those of the
    parameters alone), plus the logistic generator's range."""
    rows = bounds.assumptions(init_distance=init_distance, delta=family.delta, mu=family.strong_convexity,
                              L=family.smoothness, sigma=sigma, n_prime=n_prime, P=P, l=PROPORTION, m=m, d=family.d,
                              max_center_norm=family.delta / math.sqrt(2.0))
    rows = [row.as_dict() for row in rows]
    if family.kind == "logistic":
        norm = family.delta / math.sqrt(2.0)
        try:
            teacher = teacher_scale(norm, family.regularization) * norm
        except InvalidParameterError:
            teacher = math.inf
        rows.append(Inequality("teacher norm ||u_p|| <= S_MAX (the logistic mixture exists at Delta, lam)", teacher,
                               S_MAX, "<=", "cflbounds.synthetic.logistic_mixture").as_dict())
    return rows


# -- MGD.L1 ------------------------------------------------------------------------------------
def placed_in_balls(truth: np.ndarray, radius: float, fractions, angles) -> np.ndarray:
    """Model j at ``chi*_j + fractions[j] radius (cos(angles[j]) e + sin(angles[j]) f)``: ``e`` the
    unit vector from ``chi*_0`` to ``chi*_1``, ``f`` the coordinate axis least aligned with
    ``e``, made orthogonal to it. ``(B, 2, d)`` -> ``(B, 2, d)``; angles pi, pi and fractions 1, 1
    are :func:`.problems.placed_models`."""
    line = truth[:, 1] - truth[:, 0]
    e = line / np.linalg.norm(line, axis=-1, keepdims=True)
    f = np.zeros_like(e)
    f[np.arange(e.shape[0]), np.argmin(np.abs(e), axis=-1)] = 1.0
    f -= np.sum(f * e, axis=-1, keepdims=True) * e
    f /= np.linalg.norm(f, axis=-1, keepdims=True)
    offsets = [fraction * radius * (math.cos(angle) * e + math.sin(angle) * f)
               for fraction, angle in zip(fractions, angles)]
    return truth + np.stack(offsets, axis=1)


L1_PARAMETERS = [
    *_curvature_parameters(L1_FAMILIES),
    Parameter("noise", 1e-3, 10.0, log=True, simple=0.1,
              description="mlr: the noise sigma; quadratics: the sample noise tau"),
    Parameter("regularization", 0.01, 1.0, log=True, simple=0.1, description="logistic: lam (mu = lam, L = lam + 1/4)"),
    Parameter("n_prime", 1, 512, integer=True, log=True, simple=1, description="n', points per client and batch"),
    Parameter("own_fraction", 0.0, 1.0, simple=1.0, description="||chi_0 - chi*_0|| / A4's radius"),
    Parameter("other_fraction", 0.0, 1.0, simple=1.0, description="||chi_1 - chi*_1|| / A4's radius"),
    Parameter("own_angle", 0.0, math.pi, simple=math.pi, description="angle of chi_0 - chi*_0 to chi*_1 - chi*_0"),
    Parameter("other_angle", -math.pi, math.pi, simple=math.pi,
              description="angle of chi_1 - chi*_1 to chi*_1 - chi*_0"),
]


def _l1_draws(point: dict) -> int:
    low, high = L1_DRAWS
    return int(min(high, max(low, L1_NUMBERS // (L1_CLIENTS * 2 * point["n_prime"] * point["d"]))))


def _l1_constraints(point: dict) -> list:
    family = _family(point, L1_FAMILIES)
    distance = max(point["own_fraction"], point["other_fraction"]) * init_radius(family)
    rows = _parameter_rows(family, point, m=L1_CLIENTS, n_prime=point["n_prime"], init_distance=distance)
    return [row for i, row in enumerate(rows) if i not in (2, 4)]  # sigma's row needs the problem; m is ours


def _l1_instance(point: dict, seed: int, device: str, c1: float) -> Instance:
    """One evaluation of Lemma 1 (eq. 22): the implied constant of each problem draw."""
    family, n_prime = _family(point, L1_FAMILIES), point["n_prime"]
    radius = init_radius(family)
    fractions = (point["own_fraction"], point["other_fraction"])
    angles = (point["own_angle"], point["other_angle"])
    problem, models, losses, choice = cluster_estimates(
        family, spawn_seeds(seed, _l1_draws(point)), L1_CLIENTS, n_prime,
        lambda truth: placed_in_balls(truth, radius, fractions, angles), device=device)
    own = problem.membership == 0
    misassigned = (choice[:, own] != 0).sum(axis=1)  # (B,)
    sigma2 = np.max([family.loss_variance(problem, models[:, j], 0) for j in range(2)], axis=0)  # (B,)
    scale = sigma2 / (family.delta**4 * family.strong_convexity**2 * n_prime)  # the bound is c1 x scale
    implied = misassigned / own.sum() / scale
    margin = float((losses[:, own, 0] / losses[:, own, 1]).max())  # >= 1 iff a client is misassigned
    rows = _parameter_rows(family, point, m=L1_CLIENTS, n_prime=n_prime, init_distance=max(fractions) * radius,
                           sigma=math.sqrt(float(sigma2.max())))
    centers = float(np.linalg.norm(family.truth(problem), axis=-1).max())
    rows[3] = Inequality("max_p ||chi*_p|| <~ 1 (A4)", centers, 1.0, "<=", "CFL-MGD Assumptions", 1.0).as_dict()
    rows = [row for i, row in enumerate(rows) if i != 4]
    allowed = c1 * scale
    return Instance(float(implied.mean()), float(c1), rows, samples=implied.tolist(), details={
        "family": family.label, "draws": int(implied.size), "clients_judged": int(own.sum() * implied.size),
        "misassigned": int(misassigned.sum()), "frequency": float(misassigned.sum() / (own.sum() * implied.size)),
        "allowed_probability_min": float(allowed.min()), "allowed_probability_max": float(allowed.max()),
        "sigma2_max": float(sigma2.max()), "mu": family.strong_convexity, "L": family.smoothness,
        "radius": float(radius)}, margin=margin)  # no client misassigned: how close one came


def l1_domain(c1: float = bounds.C1_LEMMA1) -> Domain:
    """MGD.L1's domain (module docstring); ``c1`` the constant judged (a planted error: smaller)."""
    return Domain(L1_PARAMETERS, lambda points, seeds, ctx: [_l1_instance(p, s, ctx.device, c1)
                                                                   for p, s in zip(points, seeds)],
                        rule="expectation", constraints=_l1_constraints,
                        note="family, d, Delta, curvature, noise, n' and both models anywhere in Assumption 4's "
                             "balls; measured: the implied constant misassignment / (sigma^2/(Delta^4 mu^2 n')) "
                             f"against {c1:g}")


# -- MGD.L2 ------------------------------------------------------------------------------------
L2_PARAMETERS = [
    *_curvature_parameters(L2_FAMILIES),
    Parameter("noise", 1e-4, 1.0, log=True, simple=0.1,
              description="mlr: the noise sigma; quadratics: the sample noise tau"),
    Parameter("clients_per_cluster", 4, 64, integer=True, log=True, simple=4,
              description="m / 2: two equal clusters (l = 1/2)"),
    Parameter("n_prime", 1, 64, integer=True, log=True, simple=1, description="n', points per client and batch"),
    Parameter("beta", 0.0, 0.99, simple=0.0, description="heavy-ball momentum (0 = IFCA)"),
    Parameter("step", 0, 15, integer=True, simple=0, description="t: the step judged is chi^(t) -> chi^(t+1)"),
]


def _l2_draws(point: dict) -> int:
    low, high = L2_DRAWS
    per_run = (point["step"] + 1) * 2 * point["clients_per_cluster"] * point["n_prime"] * point["d"]
    return int(min(high, max(low, L2_NUMBERS // per_run)))


def _l2_constraints(point: dict) -> list:
    family = _family(point, L2_FAMILIES)
    rows = _parameter_rows(family, point, m=2 * point["clients_per_cluster"], n_prime=point["n_prime"],
                           init_distance=init_radius(family))
    return [row for i, row in enumerate(rows) if i != 2]  # sigma's row needs the problem


def _l2_instance(point: dict, seed: int, device: str) -> Instance:
    """One evaluation of Lemma 2 (eq. 31): runs to step t, the step t -> t + 1 judged."""
    family, step, beta = _family(point, L2_FAMILIES), point["step"], point["beta"]
    m, n_prime = 2 * point["clients_per_cluster"], point["n_prime"]
    problem, trace = checks._theory_runs(VerifyContext(seed=seed, device=device), family, m=m, n_prime=n_prime,
                                         trials=_l2_draws(point), iterations=step + 1, betas=(beta,), key=(0,))
    _, info = checks._rho0(family, problem, m=m, n_prime=n_prime, beta=beta)
    constants = {name: info[name] for name in ("v", "sigma", "L", "mu", "l", "m", "n_prime", "P", "delta", "beta")}
    lemma = bounds.lemma2(0.0, **constants, **{f"lambda{i}": float(x) for i, x in enumerate(info["lambdas"])},
                          c=EXPONENT_CONSTANT)
    distance = trace.labelled_distance[:, 0]  # (B, T + 1, k)
    before, after = distance[:, step], distance[:, step + 1]
    radius = init_radius(family)
    inside = np.all(Inequality("state in A4's ball", before, radius, "<=", "").holds, axis=-1)  # rounding as rows
    bound = lemma.derived["contraction_factor"] * before + lemma.derived["rho0"]
    exceeded = np.any(~np.isfinite(after) | (after > bound), axis=-1) & inside
    trials = int(inside.sum())
    rows = _parameter_rows(family, point, m=m, n_prime=n_prime, init_distance=radius, sigma=info["sigma"])
    centers = float(np.linalg.norm(family.truth(problem), axis=-1).max())
    rows[3] = Inequality("max_p ||chi*_p|| <~ 1 (A4)", centers, 1.0, "<=", "CFL-MGD Assumptions", 1.0).as_dict()
    rows += [lemma.assumptions[1].as_dict(),
             Inequality("runs with ||chi_p^(t) - chi*_p|| <= (1/4) sqrt(mu/L) Delta for every p (Lemma 2, A4)",
                        trials, 1, ">=", "CFL-MGD Lemma 2").as_dict()]
    ratios = np.where(inside[:, None], after / bound, np.nan)
    margin = float(np.nanmax(ratios)) if trials else math.nan
    # P lambda5 at the level the lambdas are chosen for (their own sum equals it up to SLSQP's rounding,
    # which would make every seed's allowed probability differ in its last bits)
    allowed = FAILURE + float(bounds.failure_probability((0.0,) * 5, P=P, l=PROPORTION, m=m, c=EXPONENT_CONSTANT))
    return Instance(float(exceeded.sum() / trials) if trials else math.nan, allowed,
                    rows, exceedances=int(exceeded.sum()), trials=trials, details={
                        "family": family.label, "runs": int(inside.size), "rho0": float(lemma.derived["rho0"]),
                        "contraction_factor": float(lemma.derived["contraction_factor"]), "radius": float(radius),
                        "median_before": float(np.median(before[inside])) if trials else math.nan,
                        "median_after": float(np.median(after[inside])) if trials else math.nan,
                        "failure_probability_of_lambdas": float(lemma.derived["failure_probability"]),
                        "rho0_largest_term": max(lemma.terms, key=lambda k: lemma.terms[k] if k != "contraction"
                                                 else -math.inf),
                        "mu": family.strong_convexity, "L": family.smoothness},
                    margin=margin)  # the largest ||chi_p^(t+1) - chi*_p|| / bound


def l2_domain() -> Domain:
    """MGD.L2's domain (module docstring)."""
    return Domain(L2_PARAMETERS, lambda points, seeds, ctx: [_l2_instance(p, s, ctx.device)
                                                                   for p, s in zip(points, seeds)],
                        rule="probability", constraints=_l2_constraints,
                        note="family, d, Delta, curvature, noise, m, n', beta and the step t of a run from "
                             "Assumption 4's radius; event: the step exceeds (1 - l mu/(8L)) ||chi - chi*|| + rho0 "
                             "for some p")
