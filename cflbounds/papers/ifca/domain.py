"""IFCA's admissible domains, for ``cflbounds falsify`` (:mod:`cflbounds.verify.domain`).

Both claims are searched on mixed linear regression (Sec. 5.1: ``x ~ N(0, I_d)``, ``y = <x,
theta*_j> + eps``, ``eps ~ N(0, sigma^2)``, ``f(theta; x, y) = (y - <x, theta>)^2``, drawn by
:func:`~cflbounds.synthetic.make_mixed_linear_regression`), where ``F^j(theta) = ||theta -
theta*_j||^2 + sigma^2``: ``lambda = L = 2`` exactly (Assumption 3), and ``max ||theta*_j|| <= 1``
(Assumption 6's ``<~ 1`` with constant 1).

* **IFCA.A3-6**: the constants ``eta^2`` (Assumption 4, ``E_{z~D_j}(f(theta; z) - F^j(theta))^2
  <= eta^2``) and ``v^2`` (Assumption 5, ``E_{z~D_j}||grad f(theta; z) - grad F^j(theta)||^2 <=
  v^2``) as the toolkit computes them
  (:meth:`~cflbounds.synthetic.mixed_linear_regression.MixedLinearRegression.variance_bounds`): the sup
  over ``theta`` in the ball of Assumption 6 (radius ``(1/4) sqrt(lambda/L) Delta``) around any
  center and over every cluster's data (Assumptions 4-5 say "for every theta", which no constant
  meets here: both variances grow with ``||theta - theta*_j||``; the ball is where Thm 2 uses them).
  The centers are the ``paper-text`` ground truth (0/1 directions of norm ``R``: unequal pairwise
  distances). The search picks the center, the data cluster and ``theta`` in the ball; the
  instance estimates the variance by Monte Carlo through the algorithms' own squared-loss kernel
  (:mod:`cflbounds.algorithms.squared_loss`) and the problem's exact ``population_loss``, and it
  is judged in expectation against the formula.
* **IFCA.T2c**: the per-iteration contraction of Thm 2 (the inequality under Thm 2 in
  ``ifca.txt``): one step of the theory version of IFCA (:func:`cflbounds.algorithms.ifca`:
  gradient averaging, full participation, ``gamma = 1/L``, re-sampling ``resample="split"``) from
  models in Assumption 6's ball, on ``k`` equidistant centers (distance ``Delta``, a parameter);
  the event ``||theta_j^+ - theta*_j|| > (1 - p lambda/(8L)) ||theta_j - theta*_j|| + floor`` for
  some j, whose frequency over independent data draws must not exceed the allowed probability.
  The Õ floor hides "logarithmic factors and quantities that do not depend on m and n'" (Sec.
  5.2); :data:`FLOORS` names two ways to fill them in: ``theorem2`` (the claim's domain) takes
  them from Thm 2's own eps as :func:`cflbounds.bounds.ifca.theorem2` evaluates it (``c = 1``, its
  Õ(1/(n' sqrt m)) term with factor 1), carried to one step; ``unit`` sets them all to 1, the
  convention of ``assumption6``'s Õ and of ``theorem2``'s ``derived["floor_shape"]``, judged at
  ``check_t2c``'s level 1/m. ``check_t2c`` itself fixes no one-point floor: it judges the factor
  alone where the floor is negligible and the floor as a rate with a free constant.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from cflbounds.algorithms import ifca
from cflbounds.algorithms.squared_loss import SquaredLoss
from cflbounds.bounds import ifca as bounds
from cflbounds.claims import Domain, Inequality, Instance, Parameter
from cflbounds.synthetic import make_mixed_linear_regression
from cflbounds.synthetic.mixed_linear_regression import cluster_sizes, draw_ground_truth, gradient_variance, loss_variance
from cflbounds.synthetic.seeding import spawn_seeds, stream

__all__ = ["variance_domain", "contraction_domain", "FLOORS", "VARIANCE_SAMPLES", "CONSTANTS"]

TRUTH = "paper-text"
BALL = 0.25  # Assumption 6: ||theta_j - theta*_j|| <= (1/4) sqrt(lambda/L) Delta


def _ball_radius(problem) -> np.ndarray:
    """The radius of Assumption 6's ball, ``(1/4) sqrt(lambda/L) Delta``, per problem."""
    return BALL * math.sqrt(problem.strong_convexity / problem.smoothness) * problem.separation


def _rows(rows, names) -> list:
    """The ``Inequality`` rows whose name starts with one of ``names``, as dicts."""
    return [row.as_dict() for row in rows if row.name.startswith(tuple(names))]


# -- IFCA.A3-6: the constants eta^2 (A4) and v^2 (A5) -------------------------------------------
VARIANCE_SAMPLES = 8192  # Monte Carlo points per evaluation (the relative s.e. of eta^2's estimate is ~ 4 %)
CONSTANTS = ("eta^2 (Assumption 4: Var f)", "v^2 (Assumption 5: E||grad f - grad F^j||^2)")
_BALL_ROW = "||theta_j^(0) - theta*_j||"  # Assumption 6's ball, here the set theta ranges over
_CENTER_ROW = "max_j ||theta*_j||"

VARIANCE_PARAMETERS = [
    Parameter("constant", 0, 1, integer=True, simple=0,
              description="which constant: 0 = eta^2 (Assumption 4), 1 = v^2 (Assumption 5)"),
    Parameter("k", 2, 7, integer=True, description="clusters"),
    Parameter("d", 3, 64, integer=True, log=True,
              description="dimension (>= 3: the paper-text centers are k <= 7 distinct non-zero 0/1 directions)"),
    Parameter("sigma", 1e-3, 2.0, log=True, simple=0.1, description="noise standard deviation"),
    Parameter("R", 0.05, 1.0, log=True, simple=1.0, description="norm of every center, max ||theta*_j|| <~ 1"),
    Parameter("truth", 0, 999, integer=True, simple=0,
              description="which paper-text draw of the centers: the point fixes the problem (and theta), the "
                          "seed only the data"),
    Parameter("model_cluster", 0.0, 1.0, simple=0.0,
              description="which center theta lies near: index floor(value k) (clipped to k - 1)"),
    Parameter("data_cluster", 0.0, 1.0, simple=0.0,
              description="which cluster's data z ~ D_j: index floor(value k) (clipped to k - 1)"),
    Parameter("radius", 0.0, 1.0, simple=1.0,
              description="||theta - theta*_c|| as a fraction of Assumption 6's (1/4) sqrt(lambda/L) Delta"),
    Parameter("alignment", 0.0, 1.0, simple=1.0,
              description="share of theta - theta*_c pointing away from the data cluster's center (the rest along "
                          "a random direction)"),
]


def _index(fraction: float, k: int) -> int:
    return min(k - 1, int(fraction * k))


def _direction(away: np.ndarray, random: np.ndarray, alignment: float) -> np.ndarray:
    """The unit vector ``normalize(alignment * away + (1 - alignment) * random)`` (``away``,
    ``random`` unit vectors; ``random`` alone when ``away`` is zero or the mix cancels)."""
    mixed = alignment * away + (1.0 - alignment) * random
    norm = np.linalg.norm(mixed)
    return mixed / norm if norm > 1e-12 else random


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vector)
    return vector / norm if norm > 0 else np.zeros_like(vector)


def truth_draw_seed(index: int) -> int:
    """The seed of the ``index``-th draw of the centers (a point's ``truth``)."""
    return spawn_seeds(index, 1, 13)[0]


def variance_instance(point: dict, seed: int, ctx, scale: float = 1.0) -> Instance:
    """Assumption 4 or 5 at one ``theta`` and one data cluster, by Monte Carlo.

    The centers are the ``truth``-th paper-text draw (:func:`draw_ground_truth`), so the point
    fixes the problem and ``theta``, and fresh seeds (confirmation) redraw only the data: ``k``
    machines, one per cluster, ``VARIANCE_SAMPLES`` points each, from
    :func:`make_mixed_linear_regression` at ``seed``. ``theta = theta*_c + radius * r_6 * u`` with
    ``r_6`` Assumption 6's radius and ``u`` leaning (``alignment``) away from the data cluster's
    center ``theta*_j``. Each point ``z`` of machine ``j`` gives one sample,
    ``(f(theta; z) - F^j(theta))^2`` (A4) or ``||grad f(theta; z) - grad F^j(theta)||^2`` (A5), with
    ``f`` and ``grad f`` from the algorithms' squared-loss kernel (one point per machine, the
    paper's ``f``: ``loss="mean"`` on a single point) and ``F^j``, ``grad F^j = 2 (theta - theta*_j)``
    exact; their mean estimates the variance without bias. ``bound``: the toolkit's constant,
    ``scale`` times ``problem.variance_bounds(r_6)`` (sup over the ball of every center, every
    cluster's data).
    """
    k, d, constant = int(point["k"]), int(point["d"]), int(point["constant"])
    truth_seed = truth_draw_seed(int(point["truth"]))
    centers = draw_ground_truth(k, d, TRUTH, float(point["R"]), [truth_seed])[0]
    problem = make_mixed_linear_regression(k, k, VARIANCE_SAMPLES, d, sigma=float(point["sigma"]), theta_star=centers,
                                           seed=seed, dtype="float64", device=ctx.device)
    c, j = _index(point["model_cluster"], k), _index(point["data_cluster"], k)
    radius = float(_ball_radius(problem)[0])
    random = _unit(stream(truth_seed, 9).standard_normal(d))  # the random part of theta's direction
    theta = centers[c] + point["radius"] * radius * _direction(_unit(centers[c] - centers[j]), random,
                                                               point["alignment"])
    distance = float(np.linalg.norm(theta - centers[j]))  # ||theta - theta*_j||: what Var f depends on

    kernel = SquaredLoss(problem, loss="mean")
    features = problem.features[:, j].reshape(1, VARIANCE_SAMPLES, 1, d)  # one point per "machine"
    responses = problem.responses[:, j].reshape(1, VARIANCE_SAMPLES, 1)
    model = torch.as_tensor(theta, dtype=problem.dtype, device=problem.device)
    if constant == 0:
        losses = kernel.losses(kernel.evaluate((features, responses), model.view(1, 1, 1, d)))  # (1, N, 1, 1)
        population = float(problem.population_loss(distance))
        samples = (losses.reshape(-1).double() - population).square()
    else:
        local = model.view(1, 1, 1, d).expand(1, VARIANCE_SAMPLES, 1, d)  # theta at every one-point machine
        gradients = kernel.machine_gradients((features, responses), local)
        population = torch.as_tensor(2.0 * (theta - centers[j]), dtype=torch.float64, device=problem.device)
        samples = (gradients.reshape(VARIANCE_SAMPLES, d).double() - population).square().sum(dim=1)
    samples = samples.cpu().numpy()
    eta2, v2 = problem.variance_bounds(radius)
    bound = scale * float((eta2, v2)[constant][0])
    rows = bounds.assumption6(init_distance=float(np.linalg.norm(theta - centers[c])), p=1.0 / k, m=k, k=k,
                              n_prime=VARIANCE_SAMPLES, separation=float(problem.separation[0]),
                              strong_convexity=problem.strong_convexity, smoothness=problem.smoothness,
                              loss_variance=float(eta2[0]), max_center_norm=float(problem.max_center_norm[0]))
    exact = (problem.loss_variance(distance), problem.gradient_variance(distance))[constant]
    return Instance(float(samples.mean()), bound, _rows(rows, (_BALL_ROW, _CENTER_ROW)), samples=samples.tolist(),
                    details={"constant": CONSTANTS[constant], "model_cluster": c, "data_cluster": j,
                             "separation": float(problem.separation[0]), "ball_radius": radius,
                             "distance_to_data_center": distance,
                             "reach_of_the_sup": radius + float(problem.center_distances[0].max()),
                             "closed_form_at_theta": float(exact), "samples": VARIANCE_SAMPLES})


def variance_domain(scale: float = 1.0) -> Domain:
    """IFCA.A3-6's constants: measured variance at a ``theta`` of Assumption 6's ball against
    ``scale`` times the toolkit's ``eta^2`` or ``v^2`` (``scale < 1`` plants an error)."""
    return Domain(VARIANCE_PARAMETERS,
                  lambda points, seeds, ctx: [variance_instance(p, s, ctx, scale) for p, s in zip(points, seeds)],
                  rule="expectation", confirmation=20,
                  note="mixed linear regression by k, d, sigma, R and the draw of the centers; theta anywhere in Assumption 6's ball around any "
                       "center, data of any cluster; Monte Carlo Var f (A4) or gradient variance (A5) against the "
                       "toolkit's eta^2, v^2")


# -- IFCA.T2c: one step of the theory version against (1 - p lambda/(8L)) ||theta - theta*|| + floor ----
def theorem2_floor(result, p, strong_convexity, smoothness) -> float:
    """Thm 2's coefficients carried to one step: ``(p lambda/(8L)) eps``, ``eps`` the value of
    :func:`~cflbounds.bounds.ifca.theorem2` (its terms are T2c's three shapes 1/sqrt(mn'), 1/n'
    and 1/(n' sqrt m) with their factors v k L log(mn')/(p^(5/2) lambda^2 delta), eta^2 L^2 k
    log(mn')/(p^2 lambda^4 delta Delta^4) and 1). A per-step floor ``e`` under the factor
    ``r = 1 - p lambda/(8L)`` accumulates to ``e/(1 - r)``, which Thm 2 calls eps."""
    return p * strong_convexity / (8.0 * smoothness) * result.value


def unit_floor(result, p, strong_convexity, smoothness) -> float:
    """The toolkit's Õ convention (every hidden factor set to 1, as
    :func:`~cflbounds.bounds.ifca.assumption6` and ``theorem2``'s remainder read Õ):
    ``1/sqrt(mn') + 1/n' + 1/(n' sqrt m)``, ``theorem2``'s ``derived["floor_shape"]``."""
    return result.derived["floor_shape"]


FLOORS = {"theorem2": theorem2_floor, "unit": unit_floor}
TRIAL_FLOATS = 1 << 22  # features drawn per evaluation, about: trials = TRIAL_FLOATS / (m 2n' d), clipped
MIN_TRIALS, MAX_TRIALS = 16, 128
MAX_SEPARATION = math.sqrt(2.0)  # centers of norm Delta/sqrt(2) <= 1: max ||theta*_j|| <~ 1 with constant 1
LAMBDA = L = 2.0  # Assumption 3 for f = (y - <x, theta>)^2 and x ~ N(0, I): F^j has Hessian 2 I

CONTRACTION_PARAMETERS = [
    Parameter("k", 2, 6, integer=True, description="clusters"),
    Parameter("m", 8, 128, integer=True, log=True, description="machines"),
    Parameter("n_prime", 1, 128, integer=True, log=True, description="n', points per machine in each of the two "
                                                                     "batches of the step"),
    Parameter("d", 3, 32, integer=True, log=True, description="dimension (k <= d: equidistant centers)"),
    Parameter("sigma", 1e-3, 2.0, log=True, simple=0.1, description="noise standard deviation"),
    Parameter("Delta", 0.37, MAX_SEPARATION, simple=1.0,
              description="distance between every two centers (norm Delta/sqrt 2 <= 1; below 0.37, Assumption "
                          "6's Delta >= n'^(-1/5) fails for every n' <= 128)"),
    Parameter("share", 0.05, 1.0, simple=1.0,
              description="the smallest cluster's size as a fraction of m/k (1: equal clusters); p = its size / m"),
    Parameter("radius", 0.0, 1.0, simple=1.0,
              description="||theta_j - theta*_j|| as a fraction of Assumption 6's (1/4) sqrt(lambda/L) Delta"),
    Parameter("alignment", 0.0, 1.0, simple=0.0,
              description="share of theta_j - theta*_j pointing to another center (the rest random)"),
]
DELTA = Parameter("delta", 0.01, 0.5, log=True, simple=0.1, description="allowed failure probability")


def _sizes(point) -> np.ndarray:
    """Machines per cluster: cluster 0 holds ``max(1, round(share m/k))``, the others split the
    rest equally (each gets at least one: ``m >= 8 > k``, so ``m - m/k >= k - 1``)."""
    k, m = int(point["k"]), int(point["m"])
    smallest = max(1, round(point["share"] * m / k))
    return np.concatenate([[smallest], cluster_sizes(m - smallest, k - 1)])


def _trials(point) -> int:
    floats = int(point["m"]) * 2 * int(point["n_prime"]) * int(point["d"])
    return int(min(MAX_TRIALS, max(MIN_TRIALS, TRIAL_FLOATS // floats)))


def equidistant_centers(k: int, d: int, separation: float, seed: int) -> np.ndarray:
    """``(k, d)`` centers ``(Delta/sqrt 2) q_j`` for ``k`` orthonormal ``q_j`` (a random frame from
    ``seed``): every two at distance exactly ``Delta``, each of norm ``Delta/sqrt 2``. For a
    given Delta they make Assumptions 4-5's sup (reach ``max ||theta*_j - theta*_j'|| + radius``)
    the smallest, the bound's tightest case."""
    frame, _ = np.linalg.qr(stream(seed, 0).standard_normal((d, k)))
    return separation / math.sqrt(2.0) * frame.T


def _variance_sups(point):
    """(eta^2, v^2) on Assumption 6's ball for equidistant centers (reach Delta + radius), from
    the closed forms of :mod:`cflbounds.synthetic.mixed_linear_regression`; the instance takes
    the same from ``problem.variance_bounds``."""
    separation = float(point["Delta"])
    reach = separation + BALL * math.sqrt(LAMBDA / L) * separation
    return float(loss_variance(reach, point["sigma"])), float(gradient_variance(reach, point["sigma"], point["d"]))


def contraction_constraints(point: dict) -> list:
    """Assumption 6's rows (constants 1) that depend on the parameters alone: all but the
    initialisation's, which every instance states (it holds by construction); and ``k <= d``,
    which the equidistant centers need."""
    p = float(_sizes(point).min()) / int(point["m"])
    eta2, _ = _variance_sups(point)
    rows = bounds.assumption6(init_distance=0.0, p=p, m=int(point["m"]), k=int(point["k"]),
                              n_prime=int(point["n_prime"]), separation=float(point["Delta"]), strong_convexity=LAMBDA,
                              smoothness=L, loss_variance=eta2, max_center_norm=float(point["Delta"]) / math.sqrt(2.0))
    shape = Inequality("k <= d (k equidistant centers)", int(point["k"]), int(point["d"]), "<=",
                       "cflbounds.papers.ifca.domain.equidistant_centers")
    return [row.as_dict() for row in rows if not row.name.startswith(_BALL_ROW)] + [shape.as_dict()]


def _allowed(point: dict) -> float:
    """The allowed failure probability: the point's delta (Thm 2's 1 - delta), or, for the
    ``unit`` floor, which has no delta, ``1/m`` (the level at which ``check_t2c`` judges the
    step, as 1 - 1/poly(m) with poly(m) = m)."""
    return float(point["delta"]) if "delta" in point else 1.0 / int(point["m"])


def contraction_instance(point: dict, seed: int, ctx, floor: str = "theorem2", c: float = 1.0) -> Instance:
    """One step of IFCA's theory version on ``trials`` independent data draws of one problem.

    The centers are :func:`equidistant_centers` (from ``seed``); every trial draws ``m``
    machines' ``2 n'`` points (:func:`make_mixed_linear_regression` with these centers and the
    cluster sizes of :func:`_sizes`) and runs :func:`ifca` for one iteration (``gamma = 1/L``,
    ``resample="split"``: cluster estimation on the first n' points, the gradient on the other
    n') from the same models ``theta_j = theta*_j + radius r_6 u_j`` (``r_6`` Assumption 6's
    radius, ``u_j`` leaning, by ``alignment``, to another center). A trial exceeds when for
    some j ``||theta_j^+ - theta*_j|| > r ||theta_j - theta*_j|| + c * floor``, ``r = 1 - p
    lambda/(8L)`` (:func:`~cflbounds.bounds.ifca.theorem2_contraction`), the floor from
    :data:`FLOORS` with ``eta^2, v^2 = problem.variance_bounds(r_6)`` (the sup over the ball,
    every cluster's data). ``bound``: the allowed probability (:func:`_allowed`), ``measured``:
    the frequency; ``margin``: the largest ``||theta_j^+ - theta*_j||`` over the right side, over
    trials and j (above 1 exactly when a trial exceeds), which the search follows on the
    plateau where no trial exceeds.
    """
    k, m, n_prime, d = (int(point[name]) for name in ("k", "m", "n_prime", "d"))
    trials, sizes = _trials(point), _sizes(point)
    truth_seed, data_seed, init_seed = spawn_seeds(seed, 3, 11)
    centers = equidistant_centers(k, d, float(point["Delta"]), truth_seed)
    problem = make_mixed_linear_regression(k, m, 2 * n_prime, d, sigma=float(point["sigma"]), proportions=sizes / m,
                                           theta_star=centers, batch_size=trials, seed=data_seed, device=ctx.device)
    lam, smooth = problem.strong_convexity, problem.smoothness
    separation, radius = float(problem.separation[0]), float(_ball_radius(problem)[0])
    rng = stream(init_seed, 0)
    distances = problem.center_distances[0] + np.diag(np.full(k, np.inf))
    models = np.stack([
        centers[j] + point["radius"] * radius * _direction(_unit(centers[np.argmin(distances[j])] - centers[j]),
                                                           _unit(rng.standard_normal(d)), point["alignment"])
        for j in range(k)])
    trace = ifca(problem, iterations=1, step_sizes=1.0 / smooth, resample="split", init=models, seed=0)
    labelled = trace.labelled_distance[:, 0]  # (trials, 2, k): before and after the step
    before, after = labelled[:, 0], labelled[:, 1]

    p = problem.min_proportion
    eta2, v2 = problem.variance_bounds(radius)
    result = bounds.theorem2(p=p, m=m, k=k, n_prime=n_prime, separation=separation, strong_convexity=lam,
                             smoothness=smooth, loss_variance=float(eta2[0]), gradient_variance=float(v2[0]),
                             delta=_allowed(point), init_distance=float(before.max()),
                             max_center_norm=float(problem.max_center_norm[0]))
    factor = bounds.theorem2_contraction(p, lam, smooth)
    allowance = c * FLOORS[floor](result, p, lam, smooth)
    threshold = factor * before + allowance  # (trials, k): the right side for each model
    worst = ((after - factor * before) / allowance).max(axis=1)  # > 1: the step leaves the bound
    exceedances = int(np.sum((worst > 1.0) | ~np.isfinite(worst)))
    margin = float(np.nanmax(after / threshold))  # > 1 exactly when some trial exceeds: the search's slope
    with np.errstate(divide="ignore", invalid="ignore"):
        step_factor = (after / before).max(axis=1)
    return Instance(exceedances / trials, _allowed(point), [a.as_dict() for a in result.assumptions],
                    exceedances=exceedances, trials=trials, margin=margin,
                    details={"floor": floor, "floor_value": float(allowance), "contraction_factor": float(factor),
                             "p": p, "ball_radius": radius, "eta2": float(eta2[0]), "v2": float(v2[0]),
                             "largest_excess_over_floor": float(np.nanmax(worst)),
                             "excess_quantile_1_minus_allowed": float(np.quantile(worst, 1.0 - _allowed(point))),
                             "median_step_factor": float(np.median(step_factor)) if before.min() > 0 else math.nan,
                             "misassigned_mean": float(trace.misassigned_labelled[:, 0, 0].mean()),
                             "theorem2_vacuous": float(result.derived["vacuous"])})


def contraction_domain(floor: str = "theorem2", c: float = 1.0) -> Domain:
    """IFCA.T2c: the frequency over data draws of a step leaving ``(1 - p lambda/(8L)) ||theta_j
    - theta*_j|| + c * floor`` against the allowed probability; ``floor`` one of :data:`FLOORS`
    (``c < 1``, or the ``unit`` floor, give smaller floors than Thm 2's coefficients). The
    ``theorem2`` floor depends on delta, a parameter; the ``unit`` one has none (allowed: 1/m)."""
    if floor not in FLOORS:
        raise ValueError(f"floor must be one of {sorted(FLOORS)}; got {floor!r}")
    parameters = CONTRACTION_PARAMETERS + ([DELTA] if floor == "theorem2" else [])
    return Domain(parameters,
                  lambda points, seeds, ctx: [contraction_instance(p, s, ctx, floor, c) for p, s in zip(points, seeds)],
                  rule="probability", constraints=contraction_constraints, confirmation=20,
                  note=f"one theory-version IFCA step (gamma = 1/L, re-sampling) on mixed linear regression by k, m, "
                       f"n', d, sigma, Delta, the smallest cluster's share, the models' place in Assumption 6's ball "
                       f"{'and delta' if floor == 'theorem2' else '(allowed 1/m)'}; floor: {floor}"
                       + (f" x {c:g}" if c != 1 else ""))
