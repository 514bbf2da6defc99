"""FedCluster's admissible domains, for ``cflbounds falsify`` (claims FC.H and FC.T1).

Both search quadratic device problems (:func:`~cflbounds.synthetic.make_quadratic_federation`:
device ``k`` holds ``f(w; xi) = 1/2 (w - xi)^T A_k (w - xi)``, ``xi ~ N(b_k, tau^2 I)``, optima
``b_k`` around G planted group centers at pairwise distance Delta), where every constant is
exact. Lengths are in units of the separation Delta (Delta = 1): both claims are invariant
under ``w -> s w`` (every side scales as ``s^2``).

FC.H (eq. (2) and the remark after Theorem 1, ``H_cluster <= H_device``), deterministic. For
quadratic devices every gradient is affine in w, so the sup of ``H(w)`` over a ball is a
trust-region problem solved exactly with a certificate
(:func:`~cflbounds.synthetic.heterogeneity.quadratic_spread_sup`: a dual upper end and the
value at a feasible point, the lower end). The instance compares the *upper* end for
``H_cluster`` with the *lower* end for ``H_device``, so a ratio <= 1 certifies the claim on
that ball whatever the solver's residual gap, up to a rounding allowance of 1e-12 of the
gradients' size (:func:`h_instance`). Over R^d the sups are infinite for unequal
Hessians (eq. (2)'s sup is then inf <= inf), so the ball (center and radius) is searched too;
with shared Hessians H is constant in w and the ball's sup is the sup over R^d.

FC.T1 (Theorem 1, eqs. (3)-(4)), an expectation over the algorithm's samples and cluster
orders (:func:`t1_instance`): ``PROBLEMS`` problems of the point, each run ``REPLICAS`` times
(fresh samples and reshuffled orders) in one batch; a run's sample is its
``(1/T) sum_{j<T} ||grad f(W_jM)||^2`` (exact gradients), each problem's bound ``2C/sqrt(TME)``
with exact constants: ``L`` (per-sample smoothness, ``lambda_max(A)``), ``f(W_0) - inf f``,
``H_cluster`` (eq. (2): device Hessians are shared, so it is a finite constant, exact over
R^d; unequal Hessians make it infinite and the bound vacuous, so they are not searched), the
variance term ``sum_K q_K^-1 sum_k p_k^2 s_k^2`` with ``s_k^2 = tau^2 ||A||_F^2`` (exact).
Theorem 1's conditions: ``ME <= C/(8LG^2)`` per problem, with ``G^2`` the max over every
iterate of its runs of Assumption 2.3's ``E||grad f(w; xi)||^2`` (local models and their
averages, as :func:`.checks.check_t1` takes it), and ``T >= L^2 max(1, 16/(EM))`` among the
parameter-only constraints. The FedCluster clusters are the planted groups; cluster masses
``q_K`` follow a geometric profile with ``q_max/q_min = mass_ratio`` (the devices of a cluster
weigh alike). ``W_0`` (any point, for Theorem 1) is a random start at ``start_distance`` from
w*, pre-trained by ``warmup`` rounds of FedCluster itself at step ``1/(4L)`` (0: none).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from cflbounds.algorithms.fedcluster import fedcluster
from cflbounds.bounds import fedcluster as fc_bounds
from cflbounds.claims import Domain, Inequality, Instance, Parameter, RELATIVE_TOLERANCE
from cflbounds.synthetic import make_quadratic_federation
from cflbounds.synthetic.heterogeneity import quadratic_gradient_sup, quadratic_spread_sup
from cflbounds.synthetic.mixed_linear_regression import cluster_sizes
from cflbounds.synthetic.partitions import PARTITIONS
from cflbounds.synthetic.quadratics import HESSIAN_MODES
from cflbounds.synthetic.seeding import spawn_seeds, stream
from .runs import partition_devices, run_problem

__all__ = ["H_PARAMETERS", "T1_PARAMETERS", "PROBLEMS", "REPLICAS", "MAX_LOCAL_STEPS", "H_DOMAIN", "T1_DOMAIN",
           "h_domain", "t1_domain", "h_instance", "t1_instance", "h_problem", "cluster_masses", "device_weights",
           "t1_problem", "initial_models"]

PROBLEMS = 4  # independent problems (and starts) of one FC.T1 instance, run in one batch
REPLICAS = 8  # runs of each (the samples of its expectation)
MAX_LOCAL_STEPS = 1024  # T M E per run: what one evaluation affords (about a second on one loaded core)
MONITOR_CHUNK = 64  # local steps whose iterates the G^2 monitor evaluates together (speed only)
# FC.H's tolerance: the toolkit's for two sides of an inequality; at equality (M = n) the two
# certified ends differ by at most 1.8e-15 relative over 1138 random points (half with M = n).
# An absolute allowance of the same size relative to the gradients is in each instance's bound.
H_RTOL = RELATIVE_TOLERANCE
_STREAM_CENTER, _STREAM_START, _KEY_REPLICAS = 31, 32, 33
_BUDGET = "cflbounds falsify: what one evaluation affords"
_GENERATOR = "make_quadratic_federation: equidistant group centers need groups <= d"

# -- FC.H ------------------------------------------------------------------------------------------
H_PARAMETERS = [
    Parameter("devices", 1, 64, integer=True, log=True, description="n devices"),
    Parameter("clusters", 1, 16, integer=True, log=True, description="M FedCluster clusters (M <= n)"),
    Parameter("groups", 1, 8, integer=True, description="planted data groups (their centers pairwise at Delta = 1)"),
    Parameter("d", 1, 8, integer=True, description="dimension"),
    Parameter("hessians", 0, len(HESSIAN_MODES) - 1, integer=True,
              description="device Hessians: " + ", ".join(f"{i} {m}" for i, m in enumerate(HESSIAN_MODES))),
    Parameter("partition", 0, len(PARTITIONS) - 1, integer=True,
              description="how devices are clustered: " + ", ".join(f"{i} {k}" for i, k in enumerate(PARTITIONS))),
    Parameter("weight_ratio", 1.0, 1000.0, log=True, simple=1.0,
              description="p_max/p_min: device weights p_k geometric in the device index"),
    Parameter("mu_over_L", 1e-3, 1.0, log=True, simple=1.0,
              description="mu/L of every Hessian (L = 1: the ratio H_cluster/H_device does not depend on L)"),
    Parameter("spread", 1e-3, 100.0, log=True, simple=1.0,
              description="distance of a device's optimum from its group's"),
    Parameter("center_distance", 1e-3, 1000.0, log=True, simple=1.0,
              description="distance of the ball's center from w*"),
    Parameter("radius", 1e-3, 1000.0, log=True, simple=1.0, description="the ball's radius"),
]


def h_constraints(point: dict) -> list:
    n, d = point["devices"], point["d"]
    return [Inequality("M <= n", point["clusters"], n, "<=", "FedCluster Sec. II: a cluster holds devices").as_dict(),
            Inequality("groups <= n", point["groups"], n, "<=", "make_quadratic_federation").as_dict(),
            Inequality("groups <= d", point["groups"], d, "<=", _GENERATOR).as_dict()]


def device_weights(n: int, ratio: float) -> np.ndarray:
    """``p_k`` proportional to ``ratio^(-k/(n-1))``: ``p_max/p_min = ratio``."""
    weights = ratio ** (-np.arange(n) / max(n - 1, 1))
    return weights / weights.sum()


def h_problem(point: dict, seed: int, device: str = "cpu"):
    """FC.H's problem at ``point``: the quadratic devices, their cluster labels and the ball's
    center ``(1, d)`` (at ``center_distance`` from w* in a random direction)."""
    n, d = point["devices"], point["d"]
    problem = make_quadratic_federation(
        clients=n, d=d, clusters=point["groups"], hessians=HESSIAN_MODES[point["hessians"]],
        strong_convexity=1.0 if d == 1 else point["mu_over_L"], smoothness=1.0, separation=1.0,
        spread=point["spread"], noise_std=0.0, weights=device_weights(n, point["weight_ratio"]), batch_size=1,
        seed=seed, device=device)
    membership = partition_devices(problem, PARTITIONS[point["partition"]], point["clusters"], seed)
    direction = stream(seed, _STREAM_CENTER).standard_normal(d)
    center = problem.global_minimizer + point["center_distance"] * direction / np.linalg.norm(direction)
    return problem, membership, center


def h_instance(point: dict, seed: int, ctx, bound_scale: float = 1.0) -> Instance:
    """``sup_ball H_cluster`` (dual, upper end) against ``bound_scale`` times ``sup_ball H_device``
    (primal, lower end) plus a rounding allowance: ``RELATIVE_TOLERANCE`` times
    ``sum_k p_k sup_ball ||grad f_k||^2``, the size of the gradients the two spreads are
    differences of (where H is 0 in exact arithmetic, e.g. one cluster or identical devices, both
    ends come out as rounding of that size: 6.5e-32 against 3.6e-32 at the seed-0 search's first
    such point; the Domain's tolerance is relative only)."""
    problem, membership, center = h_problem(point, seed, ctx.device)
    n = problem.clients
    cluster = quadratic_spread_sup(problem, membership, center, point["radius"])
    device = quadratic_spread_sup(problem, np.arange(n), center, point["radius"])
    gradients = float(problem.weights @ quadratic_gradient_sup(problem, center, point["radius"]).upper[0])
    allowance = RELATIVE_TOLERANCE * gradients
    return Instance(float(cluster.upper[0]), bound_scale * float(device.lower[0]) + allowance, details={
        "H_cluster_upper": float(cluster.upper[0]), "H_cluster_lower": float(cluster.lower[0]),
        "H_device_upper": float(device.upper[0]), "H_device_lower": float(device.lower[0]),
        "rounding_allowance": allowance, "gradient_scale": gradients,
        "cluster_masses": np.bincount(membership, weights=problem.weights).round(6).tolist(),
        "measured": "sup over the ball of H_cluster (certified upper end)",
        "bound": "sup over the ball of H_device (certified lower end) + rounding_allowance"})


def h_domain(bound_scale: float = 1.0, parameters=None) -> Domain:
    """FC.H's domain; ``bound_scale`` multiplies the right side (a planted error when < 1),
    ``parameters`` narrows the ranges (default :data:`H_PARAMETERS`)."""
    return Domain(list(parameters or H_PARAMETERS),
                  lambda points, seeds, ctx: [h_instance(p, s, ctx, bound_scale) for p, s in zip(points, seeds)],
                  rule="deterministic", constraints=h_constraints, rtol=H_RTOL,
                  note="quadratic devices by n, M, planted groups, d, Hessian sharing, partition kind, device weight "
                       "skew, mu/L, within-group spread, and the ball (center, radius) of the sups")


# -- FC.T1 -----------------------------------------------------------------------------------------
T1_PARAMETERS = [
    Parameter("devices", 1, 16, integer=True, log=True, description="n devices"),
    Parameter("clusters", 1, 8, integer=True, description="M clusters (the planted groups; M <= n)"),
    Parameter("extra_dimensions", 0, 7, integer=True,
              description="d - M: the dimension beyond the M the equidistant cluster centers need"),
    Parameter("mass_ratio", 1.0, 100.0, log=True, simple=1.0,
              description="q_max/q_min of the cluster masses q_K (geometric in K)"),
    Parameter("L", 1e-3, 10.0, log=True, simple=0.1, description="per-sample smoothness lambda_max(A)"),
    Parameter("mu_over_L", 1e-3, 1.0, log=True, simple=1.0, description="lambda_min(A)/lambda_max(A)"),
    Parameter("spread", 1e-3, 100.0, log=True, simple=0.1,
              description="distance of a device's optimum from its cluster's center (Delta = 1)"),
    Parameter("noise", 1e-3, 10.0, log=True, simple=0.1, description="sample noise tau (s_k^2 = tau^2 ||A||_F^2)"),
    Parameter("start_distance", 1e-3, 1000.0, log=True, simple=1.0,
              description="distance of the start from w*, in a random direction (W_0 itself when warmup = 0)"),
    # Theorem 1 holds for any W_0; a model pre-trained by FedCluster is the realistic one. Without it
    # (random starts only) the violating points form a thin ridge (at T M E <= 1024: M = 2, E = 1,
    # L ~ 0.05-0.07, start ~ 0.25, ratio <= ~2.2) that 120-s searches at seed 0 did not reach (best 0.33)
    Parameter("warmup", 0, 64, integer=True, simple=0,
              description="rounds of Alg. 1 at step 1/(4L) that pre-train W_0 from the start (0: W_0 is the start)"),
    Parameter("E", 1, 16, integer=True, log=True, description="local SGD steps per cluster visit"),
    Parameter("T", 1, 1024, integer=True, log=True, description="rounds"),
]


def cluster_masses(M: int, ratio: float) -> np.ndarray:
    """``q_K`` proportional to ``ratio^(-K/(M-1))``: ``q_max/q_min = ratio`` (1 for M = 1)."""
    masses = ratio ** (-np.arange(M) / max(M - 1, 1))
    return masses / masses.sum()


def t1_constraints(point: dict) -> list:
    n, M, E, T = (point[k] for k in ("devices", "clusters", "E", "T"))
    # Theorem 1's condition on T alone (the first row of theorem1_conditions needs C and G: per instance)
    rounds = fc_bounds.theorem1_conditions(L=point["L"], E=E, M=M, T=T, C=1.0, G=1.0)[1]
    return [Inequality("M <= n", M, n, "<=", "FedCluster Sec. II: a cluster holds devices").as_dict(),
            rounds.as_dict(),
            Inequality("(warmup + T) M E <= MAX_LOCAL_STEPS", (point["warmup"] + T) * M * E, MAX_LOCAL_STEPS, "<=",
                       _BUDGET).as_dict()]


def t1_problem(point: dict, seed: int, device: str = "cpu", count: int = 1):
    """``count`` independent problems at ``point`` (problem b's seed spawned from ``seed``):
    shared Hessian with eigenvalues geomspace(mu, L, d), M planted clusters of n/M devices
    (contiguous), cluster masses :func:`cluster_masses`, the devices of a cluster alike."""
    n, M, L = point["devices"], point["clusters"], point["L"]
    d = M + point["extra_dimensions"]
    sizes = cluster_sizes(n, M)  # the generator's own split of the devices into its M groups
    weights = np.repeat(cluster_masses(M, point["mass_ratio"]) / sizes, sizes)
    return make_quadratic_federation(
        clients=n, d=d, clusters=M, hessians="shared", strong_convexity=L if d == 1 else L * point["mu_over_L"],
        smoothness=L, separation=1.0, spread=point["spread"], noise_std=point["noise"], weights=weights / weights.sum(),
        batch_size=count, seed=seed, device=device)


def replicas(problem, copies: int, seeds):
    """Each problem of the batch repeated ``copies`` times (problem-major), copy i with
    ``seeds[i]``: the same Hessians and optima, its own samples and cluster orders (both keyed
    by the problem's seed)."""
    return replace(problem.subset(np.repeat(np.arange(problem.batch_size), copies).tolist()),
                   seeds=tuple(int(s) for s in seeds))


def initial_models(problems, point: dict, seed: int) -> np.ndarray:
    """``W_0`` of each problem ``(B, d)``: the start ``w* + start_distance u`` (``u`` a uniformly
    random unit vector), then ``warmup`` rounds of Alg. 1 at step ``1/(4L)`` (the largest step
    Theorem 1 admits: its condition on T makes ``(TME)^(-1/2) <= 1/(4L)``): a model pre-trained
    by FedCluster itself (its samples and orders keyed by the problem's seed, apart from the runs')."""
    directions = stream(seed, _STREAM_START).standard_normal((problems.batch_size, problems.d))
    start = problems.global_minimizer + point["start_distance"] * directions / np.linalg.norm(directions, axis=1,
                                                                                             keepdims=True)
    if point["warmup"] == 0:
        return start
    trace = fedcluster(problems, problems.membership, rounds=point["warmup"], local_steps=point["E"],
                       step_sizes=0.25 / point["L"], init=start, seed=0)
    return trace.round_models[:, 0, -1]


def t1_instance(point: dict, seed: int, ctx, bound_scale: float = 1.0) -> Instance:
    """``PROBLEMS`` problems, each from its own ``W_0`` (:func:`initial_models`), run ``REPLICAS``
    times by Alg. 1 at ``eta = (TME)^(-1/2)``, in one batch.

    Each problem p has its own exact bound ``b_p = 2C_p/sqrt(TME)`` and conditions (``G_p^2`` over
    its runs). Over the problems that meet the conditions, Theorem 1 gives ``E[m_p] <= b_p`` for
    each, hence ``mean_p E[m_p] <= mean_p b_p``: the instance's bound is that mean, its samples
    the kept problems' runs (a problem missing a condition is left out and counted in the
    details; the instance is admissible when one problem is kept). Averaging over problems and
    starts makes one evaluation far less noisy than one problem at nearly the same cost."""
    E, T, M = point["E"], point["T"], point["clusters"]
    problems = t1_problem(point, seed, ctx.device, PROBLEMS)
    runs = replicas(problems, REPLICAS, spawn_seeds(seed, PROBLEMS * REPLICAS, _KEY_REPLICAS))
    w0 = np.repeat(initial_models(problems, point, seed), REPLICAS, axis=0)
    optimum = runs.global_minimizer
    measured, _, c = run_problem(runs, runs.membership, E, np.array([T]), w0, optimum, 0, chunk=MONITOR_CHUNK)
    per_problem = []
    for p in range(PROBLEMS):
        rows = slice(p * REPLICAS, (p + 1) * REPLICAS)
        first = p * REPLICAS
        constants = dict(L=float(c["L"][first, 0]), initial_gap=float(c["gap"][first, 0]),
                         H_cluster=float(c["H_cluster_ball"][first, 0]), variance=float(c["variance"][first, 0]))
        G2 = float(c["G2_visited"][rows].max())  # Assumption 2.3: every iterate of every run of the problem
        result = fc_bounds.theorem1(E=E, M=M, T=T, G=math.sqrt(G2), **constants)
        per_problem.append({"samples": measured[rows, 0].tolist(), "bound": bound_scale * float(result.value),
                            "result": result,
                            "constants": {**constants, "G2": G2, "C": float(result.derived["C"])}})
    kept = [q for q in per_problem if q["result"].assumptions_hold]
    # the rows of the kept problem nearest its ME condition (none kept: of the one nearest to meeting it)
    largest_me = lambda q: q["result"].derived["largest_ME"]  # noqa: E731
    nearest = min(kept, key=largest_me) if kept else max(per_problem, key=largest_me)
    count = Inequality("problems meeting Theorem 1's conditions >= 1", len(kept), 1, ">=",
                       f"cflbounds falsify: {PROBLEMS} problems per instance")
    assumptions = [count.as_dict()] + [row.as_dict() for row in nearest["result"].assumptions]
    judged = kept or per_problem  # an instance with none kept is inadmissible: never judged
    samples = [x for q in judged for x in q["samples"]]
    measured_value, bound_value = float(np.mean(samples)), float(np.mean([q["bound"] for q in judged]))
    return Instance(measured_value, bound_value, assumptions, samples=samples, details={
        "problems_kept": len(kept), "problems": PROBLEMS, "runs_per_problem": REPLICAS,
        "measured_per_problem": [float(np.mean(q["samples"])) for q in per_problem],
        "bound_per_problem": [q["bound"] for q in per_problem],
        "largest_ME_per_problem": [float(q["result"].derived["largest_ME"]) for q in per_problem],
        "meets_conditions_per_problem": [bool(q["result"].assumptions_hold) for q in per_problem],
        **{f"{name}_per_problem": [q["constants"][name] for q in per_problem]
           for name in ("L", "initial_gap", "H_cluster", "variance", "G2", "C")},
        "cluster_masses": np.bincount(runs.membership, weights=runs.weights).round(6).tolist(),
        "measured": "(1/T) sum_{j<T} ||grad f(W_jM)||^2: mean over the kept problems' runs; bound: mean of their "
                    "2C/sqrt(TME)"})


def t1_domain(bound_scale: float = 1.0, parameters=None) -> Domain:
    """FC.T1's domain; ``bound_scale`` multiplies the bound (a planted error when < 1),
    ``parameters`` narrows the ranges (default :data:`T1_PARAMETERS`)."""
    return Domain(list(parameters or T1_PARAMETERS),
                  lambda points, seeds, ctx: [t1_instance(p, s, ctx, bound_scale) for p, s in zip(points, seeds)],
                  rule="expectation", constraints=t1_constraints,
                  note="quadratic devices (shared Hessian) by n, M, d, cluster mass ratio, L, mu/L, spread, noise, "
                       "the start's distance and pre-training, E and T")


H_DOMAIN = h_domain()
T1_DOMAIN = t1_domain()
