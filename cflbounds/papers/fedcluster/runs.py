"""FedCluster experiments: problem families, partitions, monitored runs, per-trial constants.

A *trial* is one problem of a family (its own seed: rotations, centers, samples, cluster
orders), so trials are independent; each trial is judged against its own exact constants.
One :class:`RunSet` is a family x partition x M x E run at several horizons T (one run
per horizon, step ``(TME)^(-1/2)``, sharing samples: common random numbers), with

* ``measured[b, h]`` = ``(1/T_h) sum_{j<T_h} ||grad f(W_jM)||^2`` (exact gradients);
* every constant of Theorem 1 per trial: ``L`` (per sample), ``gap`` = f(W_0) - inf f,
  ``variance`` (eq. (8)), ``H_cluster``/``H_device`` as the exact sup over the stated ball
  (center ``w*`` or the family's ball center, radius = the largest distance of any
  iterate, so the ball holds every iterate) and as the max over the visited ``W_jM``
  (where the proof uses H), and ``G^2`` as the max over every iterate of Assumption 2.3
  (each device at its local models, every device at ``w_bar``) and as the ball's sup.
  The local variances ``s_k^2`` are constants for the quadratic devices and, for the
  regression family (where they grow with ||w||), exact sups over the same ball.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from cflbounds.algorithms.fedcluster import fedcluster
from cflbounds.bounds import fedcluster as fc_bounds
from cflbounds.claims.stats import mean_interval
from cflbounds.synthetic import make_quadratic_federation
from cflbounds.synthetic.device_regression import DeviceRegression, make_device_regression
from cflbounds.synthetic.heterogeneity import quadratic_gradient_sup, quadratic_spread_sup, spread_at
from cflbounds.synthetic.nonconvex import NonconvexFederation, make_nonconvex_federation
from cflbounds.synthetic.partitions import make_partition
from cflbounds.synthetic.seeding import spawn_seeds, stream

__all__ = ["FAMILIES", "RunSet", "run_set", "run_problem", "partition_devices", "family_problem", "mean_with_interval"]

CONFIDENCE = 0.95

# Problem families. ``start``: "away" = W_0 at distance ``start_distance`` from the ball's
# center in a random direction; "equal-weight-fixed-point" = W_0 at the minimiser of
# (1/M) sum_K f_SK (where reshuffled cycling settles; it differs from w* when the q_K are
# unequal). ``ball``: the stated ball's center, "optimum" (w*, or the quadratic part's
# minimiser for the ripple family) or "start" (W_0); its radius is the iterates' reach.
FAMILIES = {
    # Theorem 1 with its conditions satisfiable: small L (the conditions are not scale-free)
    "quadratic": {"kind": "quadratic", "clients": 16, "d": 4, "clusters": 4, "hessians": "client",
                  "strong_convexity": 0.0125, "smoothness": 0.025, "separation": 2.0, "spread": 0.5,
                  "noise_std": 0.5, "start": "away", "start_distance": 4.0, "ball": "optimum"},
    "nonconvex": {"kind": "nonconvex", "clients": 16, "d": 4, "clusters": 4, "hessians": "client",
                  "strong_convexity": 0.0125, "smoothness": 0.025, "separation": 2.0, "spread": 0.5,
                  "noise_std": 0.5, "amplitude": 0.1, "frequency": 0.5, "start": "away", "start_distance": 4.0,
                  "ball": "optimum"},
    # unequal cluster weights q = (1/4, 3/4): the planted clusters are the partition
    "unequal": {"kind": "quadratic", "clients": 16, "d": 4, "clusters": 2, "proportions": (0.25, 0.75),
                "hessians": "shared", "strong_convexity": 0.1, "smoothness": 0.1, "separation": 2.0, "spread": 0.0,
                "noise_std": 0.1, "start": "equal-weight-fixed-point", "ball": "start"},
    # the rate claims. Speed-up: little noise and heterogeneity, so C hardly grows with M, and
    # L = 1/4 with E = 1, so that every M's runs are in the regime where the error falls as
    # 1/sqrt(TME) (steps per round small: L^2 ME << T; transient over: mu^2 TME >> 1).
    # Trade-off: L = 1 and enough noise and heterogeneity for a best M; shared Hessians, so every
    # device's gradient minus f's is constant in w and C (H_cluster = sup over R^d, eq. (2)) is
    # exact for every partition and M, with no ball to choose.
    "rate": {"kind": "quadratic", "clients": 32, "d": 4, "clusters": 4, "hessians": "client",
             "strong_convexity": 0.125, "smoothness": 0.25, "separation": 2.0, "spread": 0.5, "noise_std": 0.2,
             "start": "away", "start_distance": 3.0, "ball": "optimum"},
    "tradeoff": {"kind": "quadratic", "clients": 32, "d": 4, "clusters": 4, "hessians": "shared",
                 "strong_convexity": 0.5, "smoothness": 1.0, "separation": 4.0, "spread": 0.5, "noise_std": 1.0,
                 "start": "away", "start_distance": 3.0, "ball": "optimum"},
    # linear regression on finite device data sets (bounded inputs, a design covariance per
    # cluster, an optimum per device): L = max ||x||^2 <= d design_max, small as above
    "regression": {"kind": "regression", "clients": 16, "d": 4, "clusters": 4, "designs": "cluster", "samples": 24,
                   "design_min": 0.003, "design_max": 0.006, "separation": 2.0, "spread": 0.5, "noise_std": 0.5,
                   "start": "away", "start_distance": 4.0, "ball": "optimum"},
}
_PROBLEM_KEYS = {
    "quadratic": ("clients", "d", "clusters", "proportions", "hessians", "strong_convexity", "smoothness",
                  "separation", "spread", "noise_std"),
    "regression": ("clients", "d", "clusters", "designs", "samples", "design_min", "design_max", "separation", "spread",
                   "noise_std"),
}
_PROBLEM_KEYS["nonconvex"] = _PROBLEM_KEYS["quadratic"]
_STREAM_START = 17
_FAMILY_KEYS = {name: index for index, name in enumerate(FAMILIES)}


def family_problem(name: str, trials: int, seed: int, device: str = "cpu"):
    """The ``trials`` problems of family ``name`` (problem b's seed is spawned from (seed, family, b))."""
    spec = FAMILIES[name]
    options = {key: spec[key] for key in _PROBLEM_KEYS[spec["kind"]] if key in spec}
    options.update(seed=list(spawn_seeds(seed, trials, 40, _FAMILY_KEYS[name])), batch_size=trials, device=device)
    if spec["kind"] == "nonconvex":
        return make_nonconvex_federation(amplitude=spec["amplitude"], frequency=spec["frequency"], **options)
    if spec["kind"] == "regression":
        return make_device_regression(**options)
    return make_quadratic_federation(**options)


def mean_with_interval(samples) -> tuple[float, float, float]:
    """Mean over trials and its Student-t interval at ``CONFIDENCE``, as floats."""
    return tuple(float(v) for v in mean_interval(np.asarray(samples, dtype=float), CONFIDENCE))


def quadratic_part(problem):
    """The devices' quadratic gradients (the non-convex family's ripple is shared, so it cancels
    in H; a regression's device gradients are those of its full-gradient quadratics)."""
    return problem.quadratic if isinstance(problem, NonconvexFederation) else problem


def optimum(problem) -> np.ndarray:
    """``w*`` (quadratics) or the quadratic part's minimiser (the ripple family)."""
    return problem.center if isinstance(problem, NonconvexFederation) else problem.global_minimizer


def equal_weight_fixed_point(problem, membership) -> np.ndarray:
    """Minimiser of ``(1/M) sum_K f(w; D^(S_K))`` (quadratic devices), ``(B, d)``."""
    quadratic = quadratic_part(problem)
    M = int(np.max(membership)) + 1
    indicator = np.eye(M)[membership] * quadratic.weights[:, None]
    indicator = indicator / indicator.sum(axis=0)  # p_k / q_K
    hessian = np.einsum("nm,bnij->bij", indicator, quadratic.hessians_exact) / M
    moment = np.einsum("nm,bnij,bnj->bi", indicator, quadratic.hessians_exact, quadratic.optima_exact) / M
    return np.linalg.solve(hessian, moment[..., None])[..., 0]


def initial_point(name, problem, membership, seed) -> np.ndarray:
    spec = FAMILIES[name]
    if spec["start"] == "equal-weight-fixed-point":
        return equal_weight_fixed_point(problem, membership)
    directions = np.stack([stream(s, _STREAM_START).standard_normal(problem.d) for s in problem.seeds])
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return optimum(problem) + spec["start_distance"] * directions


def partition(name, problem, kind, M, seed) -> np.ndarray:
    """Labels of the devices: ``planted`` = the planted clusters; otherwise ``make_partition``
    on descriptors = every problem's device gradients at w* and at a start point (shared
    across the trials, whose planted clusters are the same)."""
    if kind == "planted":
        return np.asarray(problem.membership, dtype=np.int64)
    return partition_devices(problem, kind, M, seed, FAMILIES[name].get("start_distance", 1.0))


def partition_devices(problem, kind, M, seed, probe_distance=1.0) -> np.ndarray:
    """``make_partition`` of the devices into M clusters (``kind`` one of ``PARTITIONS``) on
    descriptors = every problem's device gradients at w* and at w* + probe_distance e_1."""
    center = optimum(problem)
    probe = optimum(problem) + np.eye(problem.d)[0] * probe_distance
    gradients = quadratic_part(problem).client_gradients(np.stack([center, probe], axis=1))  # (B, 2, N, d)
    features = np.moveaxis(gradients, 2, 0).reshape(problem.clients, -1)
    return make_partition(features, M, kind, seed=seed)


class IterateMonitor:
    """Running maxima over the iterates of Assumption 2.3, per problem and run: the largest
    distance from the ball's center, and (``gradients``) ``max E||grad f(w; xi)||^2``
    (:func:`second_moment_kernel`). ``chunk``: how many local steps' iterates are kept and
    then evaluated together (1 = at every step; more = fewer, larger kernel calls, the same
    maxima up to rounding)."""

    def __init__(self, problem, center, runs: int, gradients: bool, chunk: int = 1):
        self.problem, self.gradients, self.chunk = problem, gradients, chunk
        self.second_moments = second_moment_kernel(problem)
        self.center = torch.as_tensor(np.ascontiguousarray(center), dtype=problem.dtype, device=problem.device)
        B = problem.batch_size
        self.distance = torch.zeros(B, runs, dtype=problem.dtype, device=problem.device)
        self.g2_local = torch.zeros_like(self.distance)
        self.g2_average = torch.zeros_like(self.distance)
        self._pending = []

    def __call__(self, local, clients, weight):
        self._pending.append((local, clients, weight))
        if len(self._pending) >= self.chunk:
            self._flush()

    def _flush(self):
        """Fold the kept steps' iterates into the maxima: their local models side by side
        (devices axis), their averages side by side (runs axis)."""
        pending, self._pending = self._pending, []
        if not pending:
            return
        local = torch.cat([p[0] for p in pending], dim=1)  # (B, k S, C, d)
        clients, weight = (torch.cat([p[i] for p in pending], dim=1) for i in (1, 2))  # (B, k S)
        active = (weight > 0)[..., None]  # (B, k S, 1)
        distance = torch.linalg.vector_norm(local - self.center[:, None, None], dim=-1) * active
        self.distance = torch.maximum(self.distance, distance.amax(dim=1))
        if not self.gradients:
            return
        own = self.second_moments(local, clients) * active
        self.g2_local = torch.maximum(self.g2_local, own.amax(dim=1))
        average = torch.stack([torch.einsum("bs,bscd->bcd", w, l) for l, _, w in pending], dim=2)  # (B, C, k, d)
        B, C, k, d = average.shape
        every = average.reshape(B, C * k, d)[:, None].expand(-1, self.problem.clients, -1, -1)
        moments = self.second_moments(every).amax(dim=1).reshape(B, C, k).amax(dim=-1)
        self.g2_average = torch.maximum(self.g2_average, moments)

    def results(self) -> dict:
        self._flush()
        as_numpy = lambda t: t.double().cpu().numpy()
        return {"distance": as_numpy(self.distance), "g2_local": as_numpy(self.g2_local),
                "g2_average": as_numpy(self.g2_average)}


def second_moment_kernel(problem):
    """``kernel(models, clients=None)``: ``E_xi ||grad f(w; xi)||^2`` of each device at its
    models ``(B, S, C, d)`` (devices at positions ``clients`` ``(B, S)``, all if None) ->
    ``(B, S, C)``. For quadratic devices ``E_xi grad f(w; xi) = grad f_k(w)`` is the sample
    gradient at ``xi = b_k`` (it is affine in xi) and the variance is the constant ``s_k^2``."""
    if isinstance(problem, DeviceRegression):
        return problem.second_moments
    quadratic = quadratic_part(problem)
    as_tensor = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=problem.dtype, device=problem.device)
    means, variance = as_tensor(quadratic.optima_exact), as_tensor(quadratic.gradient_variance)  # (B, N, d), (B, N)
    rows = torch.arange(problem.batch_size, device=problem.device)[:, None]

    def kernel(models, clients=None):
        at, spread = (means, variance) if clients is None else (means[rows, clients], variance[rows, clients])
        return problem.sample_gradients(models, at[:, :, None], clients=clients).square().sum(-1) + spread[..., None]

    return kernel


@dataclass
class RunSet:
    """One family x partition x M x E run at several horizons (trials ``B``, horizons ``H``)."""

    family: str
    kind: str
    M: int
    E: int
    horizons: np.ndarray
    membership: np.ndarray
    measured: np.ndarray  # (B, H)
    curve: np.ndarray  # (B, T_max + 1): ||grad f(W_jM)||^2 of the longest horizon's run
    constants: dict = field(default_factory=dict)  # name -> (B, H)
    cluster_weights: np.ndarray | None = None  # q_K
    problem: object = None

    @property
    def trials(self) -> int:
        return self.measured.shape[0]


def _squared_gradient_norms(problem, models) -> np.ndarray:
    """``||grad f(W)||^2`` for ``models`` ``(B, C, P, d)``, one run at a time (bounded memory)."""
    return np.stack([np.square(problem.global_gradient(models[:, c])).sum(-1) for c in range(models.shape[1])],
                    axis=1)


def run_set(ctx, name, kind, M, E, horizons, trials, *, gradients=True) -> RunSet:
    """Run FedCluster (FedAvg when M = 1) on family ``name`` and compute every constant."""
    problem = family_problem(name, trials, ctx.seed, ctx.device)
    membership = partition(name, problem, kind, M, ctx.seed)
    M = int(membership.max()) + 1
    w0 = initial_point(name, problem, membership, ctx.seed)
    horizons = np.asarray(sorted(set(int(h) for h in horizons)))
    center = w0 if FAMILIES[name]["ball"] == "start" else optimum(problem)
    measured, squared, constants = run_problem(problem, membership, E, horizons, w0, center, ctx.seed,
                                               gradients=gradients)
    q = np.bincount(membership, weights=problem.weights)
    return RunSet(name, kind, M, E, horizons, membership, measured, squared[:, -1], constants, q, problem)


def run_problem(problem, membership, E, horizons, w0, center, seed, *, gradients=True, chunk=1):
    """FedCluster on ``problem`` at Theorem 1's step ``(TME)^(-1/2)``, one run per horizon T of
    ``horizons`` (sorted ints), monitored: ``measured`` ``(B, H)`` = (1/T) sum_{j<T} ||grad f(W_jM)||^2,
    ``squared`` ``(B, H, T_max + 1)`` = every ||grad f(W_jM)||^2, and every constant (:func:`_constants`,
    balls centered at ``center``). ``seed`` seeds the cluster orders (with the problems' seeds);
    ``chunk``: :class:`IterateMonitor`'s."""
    M = int(np.max(membership)) + 1
    steps = 1.0 / np.sqrt(horizons * M * E)
    monitor = IterateMonitor(problem, center, len(horizons), gradients, chunk)
    trace = fedcluster(problem, membership, rounds=int(horizons.max()), local_steps=E, step_sizes=steps, init=w0,
                       monitor=monitor, seed=seed)
    squared = _squared_gradient_norms(problem, trace.round_models)  # (B, H, T_max + 1)
    measured = np.stack([squared[:, h, :T].mean(axis=1) for h, T in enumerate(horizons)], axis=1)
    seen = monitor.results()
    return measured, squared, _constants(problem, membership, trace, w0, center, seen, gradients)


def _constants(problem, membership, trace, w0, center, seen, gradients) -> dict:
    """Every constant per trial and run ``(B, H)``: each run (horizon) has its own iterates,
    so its own ball (radius = its iterates' largest distance from the center) and maxima."""
    quadratic = quadratic_part(problem)
    B, H = trace.round_models.shape[:2]
    per_run = {name: np.empty((B, H)) for name in ("H_cluster_ball", "H_device_ball", "H_cluster_visited",
                                                  "H_device_visited", "G2_ball", "variance", "s2_ball", "s2_visited")}
    radius = seen["distance"]
    for h in range(H):  # the W_jM of run h: where the proof uses H
        cluster, device = spread_at(problem.client_gradients(trace.round_models[:, h]), problem.weights, membership)
        per_run["H_cluster_visited"][:, h], per_run["H_device_visited"][:, h] = cluster.max(axis=1), device.max(axis=1)
        per_run["H_cluster_ball"][:, h] = quadratic_spread_sup(quadratic, membership, center, radius[:, h]).upper
        per_run["H_device_ball"][:, h] = quadratic_spread_sup(quadratic, np.arange(problem.clients), center,
                                                              radius[:, h]).upper
        per_run["G2_ball"][:, h] = _second_moment_sup(problem, center, radius[:, h]).max(axis=1)
        s2 = _variance_sup(problem, center, radius[:, h])  # (B, N): Assumption 2.2's s_k^2 on the ball
        per_run["variance"][:, h] = [fc_bounds.variance_term(problem.weights, s, membership) for s in s2]
        per_run["s2_ball"][:, h] = s2.max(axis=1)
        per_run["s2_visited"][:, h] = _variances_at(problem, trace.round_models[:, h]).max(axis=(1, 2))
    per_trial = {"L": problem.smoothness, "gap": problem.global_loss(w0[:, None])[:, 0] - problem.global_min_value}
    constants = {name: np.broadcast_to(value[:, None], (B, H)).copy() for name, value in per_trial.items()}
    constants.update(per_run, radius=radius)
    if gradients:
        constants["G2_visited"] = np.maximum(seen["g2_local"], seen["g2_average"])
    return constants


def _variance_sup(problem, center, radius) -> np.ndarray:
    """``sup_ball E||grad f(w; xi) - grad f_k(w)||^2`` per device ``(B, N)``: exact (a constant
    for quadratic devices, a trust-region sup for the regression)."""
    if isinstance(problem, DeviceRegression):
        return problem.variance_sup(center, radius).upper
    return quadratic_part(problem).gradient_variance


def _variances_at(problem, points) -> np.ndarray:
    """``s_k^2(w)`` at ``points`` ``(B, P, d)`` for every device, ``(B, P, N)``."""
    if isinstance(problem, DeviceRegression):
        return problem.gradient_variances(points)
    variance = quadratic_part(problem).gradient_variance
    return np.broadcast_to(variance[:, None], (variance.shape[0], points.shape[1], variance.shape[1]))


def _second_moment_sup(problem, center, radius) -> np.ndarray:
    """Upper end of ``sup_ball E||grad f(w; xi)||^2`` per device ``(B, N)`` (exact for the
    quadratic and regression devices; for the ripple, the quadratic part's plus sup||grad psi||)."""
    if isinstance(problem, DeviceRegression):
        return problem.second_moment_sup(center, radius).upper
    if isinstance(problem, NonconvexFederation):
        return problem.gradient_sup(center, radius)[1] + problem.gradient_variance
    return quadratic_gradient_sup(problem, center, radius).upper + problem.gradient_variance
