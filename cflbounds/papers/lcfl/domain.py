"""The admissible domains of LCFL's claims, for ``cflbounds falsify`` (:mod:`cflbounds.verify.domain`).

* LCFL.E8 (Sec. III, after eq. 7, and eq. 8): centred linear regression with a shared
  ``Sigma_XX``; the search varies the dimension, the spectrum of ``Sigma_XX`` (largest
  eigenvalue, condition number), ``||Sigma_Xy||``, the size and direction of
  ``Sigma-hat_Xy - Sigma_Xy`` and the noise of y. An identity judged both ways (with the
  sandwich): deterministic, up to a float64 tolerance.
* LCFL.E4 (Sec. II, before eq. 4): two clients of the bounded problems of
  :mod:`.discrepancy` (finite support, exact population losses), each model trained on its
  client's sample (the paper's ``w_i* in argmin L_i``: an instance counts only if training reached a
  stationary point); ``d-hat`` against ``2 disc`` with an exact upper bound on the sup (so a
  violation found is certain). Deterministic.
* LCFL.T1 (Thm 1, eq. 5): the same two clients, many independent samplings per point; how
  often ``|d - d-hat|`` exceeds the printed right side against ``1 - (1 - delta)^4``.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from cflbounds.algorithms.federated import client_gradients
from cflbounds.algorithms.small_models import BOUNDED_LOSSES, BoundedLinear
from cflbounds.bounds import lcfl as bounds
from cflbounds.claims import Domain, Inequality, Instance, Parameter
from cflbounds.synthetic.bounded_linear import make_bounded_linear_clusters
from cflbounds.synthetic.seeding import spawn_seeds, stream
from .checks import covariance, excess_loss_sides
from .discrepancy import PROBLEM, ROUNDING, disc_lower_bound, pair_discrepancies

__all__ = ["E8_RTOL", "T1_TRIALS", "LOSSES", "STATIONARITY", "excess_loss_instance", "e8_domain",
           "disc_upper_bound", "stationarity", "discrepancy_instance", "e4_domain", "deviation_instance", "t1_domain"]

# -- E8: the excess-loss identity and its eigenvalue sandwich -----------------------------------
# The excess loss is computed from the population loss in 50-digit arithmetic (checks.excess_loss_exact),
# the identity's side in float64 (bounds.excess_loss_identity: one LU solve), the sandwich from the
# eigenvalues Sigma_XX was built with. A backward-stable solve gives the quadratic form to a relative
# ~ d kappa eps (<= 16 x 1e6 x 1.1e-16 = 1.8e-9 here), and the float64 Sigma_XX's eigenvalues are within
# ~ d eps lambda_max of the nominal ones (the same relative size against lambda_min); 1e-8 covers both
# with a factor 5 (300 random problems at kappa in [1e4, 1e6], d = 16, shift along an extreme
# eigenvector: largest error 1.2e-11; the default 120-s search at seed 0, 18423 problems: 3.7e-11), and is
# 8 orders below a planted error of a factor 2.
E8_RTOL = 1e-8
E8_PARAMETERS = [
    Parameter("d", 1, 16, integer=True, log=True, description="dimension of X"),
    Parameter("lambda_max", 1e-2, 1e2, log=True, simple=1.0, description="largest eigenvalue of Sigma_XX"),
    Parameter("condition_number", 1.0, 1e6, log=True, simple=1.0,
              description="lambda_max / lambda_min of Sigma_XX (d = 1: a single eigenvalue, lambda_max)"),
    Parameter("cross_norm", 1e-3, 1e3, log=True, simple=1.0, description="||Sigma_Xy||"),
    Parameter("shift", 1e-8, 1e2, log=True, simple=1.0,
              description="||Sigma-hat_Xy - Sigma_Xy|| / ||Sigma_Xy||: how far the other distribution is"),
    Parameter("tilt", -1.0, 1.0, simple=0.0,
              description="direction of Sigma-hat_Xy - Sigma_Xy: its share along the lambda_min eigenvector "
                          "(> 0) or the lambda_max one (< 0), the rest along a random direction"),
    Parameter("residual_variance", 1e-6, 1e3, log=True, simple=1.0,
              description="Var y / (Sigma_Xy^T Sigma_XX^-1 Sigma_Xy) - 1: the noise of y beyond its best linear fit"),
]


def _spectrum(rng, d, lambda_max, condition_number):
    """Eigenvalues of Sigma_XX: exactly lambda_max / kappa and lambda_max, the rest log-uniform between."""
    if d == 1:
        return np.array([lambda_max])
    low = lambda_max / condition_number
    inner = np.exp(rng.uniform(math.log(low), math.log(lambda_max), size=d - 2))
    return np.concatenate([[low], inner, [lambda_max]])


def excess_loss_instance(point: dict, seed: int, identity=bounds.excess_loss_identity,
                         sandwich=bounds.excess_loss_sandwich) -> Instance:
    """One centred problem at ``point``: ``Sigma_XX = Q diag(lambda) Q^T`` (Q random orthogonal),
    ``Sigma_Xy`` random of norm ``cross_norm``, ``Sigma-hat_Xy`` shifted from it; the other
    distribution has the same ``Sigma_XX`` and centred data (Sec. III), so ``w = Sigma_XX^-1 Sigma_Xy``.

    ``measured`` = max(E/I, I/E, E/upper, lower/E) with E = L(w-hat) - L(w*) from the population
    loss, I the identity's side, lower/upper eq. (8)'s: at most 1 exactly when the identity and
    both sides of the sandwich hold, whichever way an error goes; ``bound`` = 1."""
    rng = np.random.default_rng(seed)
    d = point["d"]
    eigenvalues = _spectrum(rng, d, point["lambda_max"], point["condition_number"])
    basis, _ = np.linalg.qr(rng.standard_normal((d, d)))
    sigma_xx = covariance(basis, eigenvalues)
    sigma_xy = rng.standard_normal(d)
    sigma_xy *= point["cross_norm"] / np.linalg.norm(sigma_xy)
    random = rng.standard_normal(d)
    target = basis[:, 0] if point["tilt"] >= 0 else basis[:, -1]  # eigenvectors of lambda_min, lambda_max
    tilt = abs(point["tilt"])
    direction = tilt * target + (1.0 - tilt) * random / np.linalg.norm(random)
    direction /= np.linalg.norm(direction)
    sigma_xy_hat = sigma_xy + point["shift"] * point["cross_norm"] * direction
    explained = float(sigma_xy @ np.linalg.solve(sigma_xx, sigma_xy))
    variance_y = explained * (1.0 + point["residual_variance"])
    sides = excess_loss_sides(sigma_xx, eigenvalues, sigma_xy, sigma_xy_hat, variance_y, identity, sandwich)
    excess = sides["excess_loss"]
    ratios = {"excess/identity": excess / sides["identity"], "identity/excess": sides["identity"] / excess,
              "excess/upper": excess / sides["upper"], "lower/excess": sides["lower"] / excess}
    worst = max(ratios, key=ratios.get)
    rows = [Inequality("Var y >= Sigma_Xy^T Sigma_XX^-1 Sigma_Xy: (X, y) has a covariance matrix (Schur complement)",
                       variance_y, explained, ">=", "LCFL Sec. III (a distribution D of centred (X, y))").as_dict()]
    return Instance(ratios[worst], 1.0, rows, details={
        **sides, "worst_side": worst, "lambda_min": float(eigenvalues.min()), "lambda_max": float(eigenvalues.max()),
        "variance_y": variance_y})


def _e8_constraints(point):
    lambda_min = point["lambda_max"] / point["condition_number"]
    return [Inequality("lambda_min > 0: Sigma_XX positive definite (Sigma_XX^-1 exists)", lambda_min, 0.0, ">",
                       "LCFL Sec. III").as_dict()]


def e8_domain(identity=bounds.excess_loss_identity, sandwich=bounds.excess_loss_sandwich) -> Domain:
    """LCFL.E8's domain; ``identity`` / ``sandwich``: the bound functions judged (a planted twin in tests)."""
    return Domain(E8_PARAMETERS,
                  lambda points, seeds, ctx: [excess_loss_instance(p, s, identity, sandwich) for p, s in zip(points, seeds)],
                  rule="deterministic", constraints=_e8_constraints, rtol=E8_RTOL,
                  note="centred linear regression with a shared Sigma_XX: dimension, spectrum, ||Sigma_Xy||, size and "
                       "direction of Sigma-hat_Xy - Sigma_Xy, noise of y; max of the identity's two ratios and the "
                       "sandwich's against 1")


# -- E4 and T1: two clients of the bounded problems --------------------------------------------
LOSSES = ("sigmoid", "ramp")  # the bounded losses in [0, 1] of small_models.BoundedLinear, by index
T1_TRIALS = 100  # independent samplings per evaluated point (confirmation pools 20 fresh points' worth)
_KEY_DISTRIBUTION, _KEY_SAMPLES, _KEY_DISC = 70, 71, 72
DISC_STARTS, DISC_STEPS = 4, 20  # the ascent giving disc's lower bound (details only: kept cheap)
# E4's models must be minimisers: a projected-gradient mapping below this (gradients are <= 1 here: losses
# 1-Lipschitz at most, ||x|| <= 1); after the check's 100 steps it is either ~1e-8 or below, or ~1e-3 to 1e-1
STATIONARITY = 1e-6


def _pair_parameters(largest_m, largest_d, largest_atoms):
    return [
        Parameter("m_i", 1, largest_m, integer=True, log=True, description="client i's sample count"),
        Parameter("m_j", 1, largest_m, integer=True, log=True, description="client j's sample count"),
        Parameter("clusters", 1, 2, integer=True,
                  description="distinct distributions among the pair: 1 = D_i = D_j, 2 = two clusters' (halfspace "
                              "labels of independent random directions)"),
        Parameter("d", 1, largest_d, integer=True, log=True, description="dimension of x"),
        Parameter("atoms", 2, largest_atoms, integer=True, log=True,
                  description="support size: the distributions are uniform on this many points of the unit ball"),
        Parameter("label_noise", 0.0, 0.5, simple=0.0, description="probability that an atom's label is flipped"),
        Parameter("weight_norm", 0.1, 30.0, log=True, simple=1.0, description="B_w: the class W = {||w|| <= B_w}"),
        Parameter("loss", 0, 1, integer=True, description="0: sigmoid loss (1/4-Lipschitz), 1: ramp (1-Lipschitz)"),
    ]


def _pair_problem(point, seed, trials, ctx):
    """The model and ``trials`` samplings of clients i (m_i samples) and j (m_j) at ``point``:
    the distributions from the point's seed, each sampling from its own spawned seed."""
    model = BoundedLinear(point["d"], radius=point["weight_norm"], loss=LOSSES[point["loss"]])
    problem = make_bounded_linear_clusters(
        (point["m_i"], point["m_j"]), (0, point["clusters"] - 1), d=point["d"], atoms=point["atoms"],
        input_radius=1.0, label_noise=point["label_noise"], distribution_seed=spawn_seeds(seed, 1, _KEY_DISTRIBUTION)[0],
        batch_size=trials, seed=list(spawn_seeds(seed, trials, _KEY_SAMPLES)), device=ctx.device)
    return model, problem


def disc_upper_bound(model, problem) -> float:
    """An upper bound on ``disc_W(D_0, D_1) = sup_{||w|| <= B_w} |L_D0(w) - L_D1(w)|`` (Def. 2),
    exact 0 when there is one distribution. On the finite support only atoms whose labels differ
    contribute, each by ``|l(t, 1) - l(t, -1)|`` at ``t = <w, x_a>``, ``|t| <= B_w ||x_a||``; that
    gap is ``tanh(|t|/2)`` (sigmoid) or ``min(1, |t|)`` (ramp), nondecreasing in ``|t|``, so

        disc <= (1/A) sum_{a: labels differ} |l(B_w ||x_a||, 1) - l(B_w ||x_a||, -1)|  (<= TV(D_0, D_1))."""
    labels = problem.atom_labels
    if labels.shape[0] == 1:
        return 0.0
    reach = torch.as_tensor(model.radius * np.linalg.norm(problem.atoms, axis=1), dtype=torch.float64)
    loss = BOUNDED_LOSSES[model.loss][0]
    gap = (loss(reach, 1.0) - loss(reach, -1.0)).abs().clamp(max=1.0).numpy()
    return float(np.mean(np.where(labels[0] != labels[1], gap, 0.0)))


def stationarity(model, trained, data, step_size=PROBLEM["step_size"]) -> torch.Tensor:
    """The projected-gradient mapping ``||w - P(w - eta grad L_i(w))|| / eta`` of every client's
    model on its own empirical loss, ``(B, m)``: 0 exactly at the first-order stationary points
    of ``L_i`` over the ball (every minimiser among them)."""
    params = trained[:, :, None]
    gradients, _ = client_gradients(model, params, data)
    return torch.linalg.vector_norm(params - model.project(params - step_size * gradients), dim=-1)[:, :, 0] / step_size


def discrepancy_instance(point: dict, seed: int, ctx, bound=bounds.discrepancy_bound) -> Instance:
    """One sampling of the pair at ``point``; ``measured`` = d-hat(i,j) at the trained models,
    ``bound`` = ``bound(disc upper bound)`` + :data:`.discrepancy.ROUNDING` (float rounding of the
    population losses). The bound side is exact when D_i = D_j (disc = 0), else an upper bound on
    2 disc: a violation is certain, a pass is not a proof. The paper's models are minimisers of the
    clients' empirical losses (Sec. II-A): an instance counts only if projected GD reached a
    stationary point for both (:data:`STATIONARITY`; global minimality of these non-convex losses
    cannot be checked), so that a violation does not come from training stopped early."""
    model, problem = _pair_problem(point, seed, 1, ctx)
    trained, empirical, population_d = pair_discrepancies(model, problem)
    mapping = float(stationarity(model, trained, problem.train).max())
    rows = [Inequality(f"w_i, w_j stationary for L_i, L_j over the ball: projected-gradient mapping <= {STATIONARITY:g}",
                       mapping, STATIONARITY, "<=", "LCFL Sec. II-A (w_i* in argmin L_i)").as_dict()]
    disc_upper = disc_upper_bound(model, problem)
    result = bound(disc_upper)
    details = {"d": float(empirical[0, 0, 1]), "disc_upper": disc_upper,
               "total_variation": float(problem.total_variation().max()), "two_disc_upper": float(result.value)}
    if problem.k == 2:  # how loose the bound side may be: disc from below by projected ascent
        one = problem.population
        details["disc_lower"] = disc_lower_bound(model, one, trained[0], DISC_STARTS, stream(seed, _KEY_DISC),
                                                 DISC_STEPS)
    return Instance(float(population_d[0, 0, 1]), float(result.value) + ROUNDING, rows, details=details)


def e4_domain(bound=bounds.discrepancy_bound) -> Domain:
    """LCFL.E4's domain; ``bound``: the bound function of disc judged (a planted twin in tests)."""
    return Domain(_pair_parameters(1000, 20, 2000),
                  lambda points, seeds, ctx: [discrepancy_instance(p, s, ctx, bound) for p, s in zip(points, seeds)],
                  rule="deterministic", rtol=0.0,
                  note="two clients' sample sizes, same or different distributions, dimension, support size, label "
                       "noise, B_w and the loss; models trained on the clients' samples (projected GD, "
                       f"{PROBLEM['steps']} steps of {PROBLEM['step_size']}, stationary), d-hat with exact population "
                       "losses against 2 x an exact upper bound on disc")


def deviation_instance(point: dict, seed: int, ctx, bound=bounds.theorem1) -> Instance:
    """:data:`T1_TRIALS` independent samplings of the pair at ``point``: how often
    ``|d(i,j) - d-hat(i,j)|`` exceeds Thm 1's printed right side (R coefficient 1), against the
    printed failure probability ``1 - (1 - delta)^4``. ``R_m`` of the loss class is bounded
    above by Talagrand's contraction and Jensen, ``L B_w sqrt(E||x||^2 / m)`` (exact second moment
    of the finite support): the right side is at least the theorem's, so a violation is certain.
    A right side >= 2 (the range of ``|d - d-hat|``) is vacuous: that instance is not run and
    counts as inadmissible."""
    model, problem = _pair_problem(point, seed, T1_TRIALS, ctx)
    rms_norm = math.sqrt(problem.second_moment)
    rademacher = {m: float(bounds.linear_rademacher_bound(m, model.lipschitz, model.radius, rms_norm))
                  for m in (point["m_i"], point["m_j"])}
    result = bound(point["delta"], point["m_i"], point["m_j"], rademacher[point["m_i"]], rademacher[point["m_j"]])
    right_side, failure = float(result.value), float(result.derived["failure_printed"])
    rows = [bounds.range_condition(right_side, "R coefficient 1").as_dict()]
    details = {"right_side": right_side, "rademacher_i": rademacher[point["m_i"]],
               "rademacher_j": rademacher[point["m_j"]], "second_moment": problem.second_moment,
               "total_variation": float(problem.total_variation().max())}
    if not rows[0]["holds"]:
        return Instance(0.0, failure, rows, exceedances=0, trials=0, details={**details, "run": "no: vacuous"})
    _, empirical, population_d = pair_discrepancies(model, problem)
    deviation = (empirical[:, 0, 1] - population_d[:, 0, 1]).abs().cpu().numpy()
    exceedances = int(np.sum(deviation > right_side))
    details.update(max_deviation=float(deviation.max()), max_deviation_over_right_side=float(deviation.max()) / right_side,
                   quantile_over_right_side=float(np.quantile(deviation, 1.0 - failure)) / right_side)
    return Instance(exceedances / T1_TRIALS, failure, rows, exceedances=exceedances, trials=T1_TRIALS, details=details,
                    margin=details["quantile_over_right_side"])  # the search's slope while nothing exceeds


def t1_domain(bound=bounds.theorem1) -> Domain:
    """LCFL.T1's domain; ``bound``: the theorem's function judged (a planted twin in tests)."""
    return Domain([*_pair_parameters(500, 10, 1000),
                   Parameter("delta", 1e-3, 0.9, log=True, simple=0.05, description="Thm 1's failure parameter")],
                  lambda points, seeds, ctx: [deviation_instance(p, s, ctx, bound) for p, s in zip(points, seeds)],
                  rule="probability",
                  note=f"{T1_TRIALS} samplings of two clients per point (sample sizes, same or different distributions, "
                       "dimension, support size, label noise, B_w, loss) and delta; exceedances of the printed right "
                       "side against 1 - (1 - delta)^4")
