"""The quadratic experiment behind DSC.T1, DSC.E14 and DSC.A1-4.

Problems (exact constants): each of ``labels`` labels has a quadratic loss with Hessian
eigenvalues in ``[mu, L]`` (:func:`make_quadratic_federation`, one Hessian per label), or, in
the ``regression`` family, the least-squares loss of a finite linear-regression data set
(:func:`make_device_regression`, one design covariance with eigenvalues in ``[mu, L]`` per
label, bounded inputs, noise-free targets; its loss is exactly a quadratic); each
client holds 400-800 samples of two random labels (Sec. IV-A) and the mixture of their losses
(:func:`label_mixture`), weighted ``|D_k| / D`` in ``F``. With ``spread = 0`` every label shares
one optimum, so A4 can hold (``grad F_k = 0`` wherever ``grad F = 0``); ``spread > 0`` gives
heterogeneous optima. Clients sit in the paper's 100 m square; DSC groups them (both stages,
default options) and trains with channel noise (eq. 5). An instance is one (configuration,
seed); each runs ``reps`` independent channel-noise sequences at every step size.

Constants of Theorem 1, per instance: ``L``, ``mu`` exact for F (and the clients' extremes as
a second reading); ``delta_intra^2``, ``delta_inter^2`` the sup of A4's ratios over the iterates
of every run of the instance and over sampled points of the ball ``||w - w*|| <= ||w^0 - w*||``
(the stated ball); ``W`` and ``N`` (Theorem 1's weight and noise sums) their largest value
over the rounds of the run, the most generous reading. The step sizes are the ball's eq. (14)
threshold times fixed factors, so every instance is swept across its own threshold.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from cflbounds.algorithms.dsc import angle_weights, dissimilarity_ratios, hierarchical_descent, hierarchy
from cflbounds.algorithms.dsc_grouping import dsc_grouping
from cflbounds.synthetic.device_regression import make_device_regression
from cflbounds.synthetic.quadratics import label_mixture, make_quadratic_federation
from cflbounds.synthetic.seeding import spawn_seeds, stream
from cflbounds.synthetic.wireless import make_wireless_layout

__all__ = ["ProblemConfig", "EXPERIMENT", "dsc_experiment", "draw_label_counts", "Instances", "build_instances",
           "grouping_columns", "grouping_evidence", "grouping_note"]


@dataclass(frozen=True)
class ProblemConfig:
    name: str
    clients: int
    d: int
    labels: int = 10
    mu: float = 0.5
    L: float = 4.0
    spread: float = 0.0
    noise_scale: float = 0.01
    instances: int = 2
    family: str = "quadratics"  # or "regression": each label a finite linear-regression data set
    label_samples: int = 200  # regression: the size of each label's data set


FACTORS = (0.125, 0.25, 0.5, 0.9, 1.1, 2.0, 4.0)  # step size / the ball's eq. (14) threshold
_SMALL = ProblemConfig("small", clients=3, d=2, labels=3, mu=0.2, L=4.0)
_MID = ProblemConfig("mid", clients=10, d=5, labels=6)
_PAPER = ProblemConfig("paper-size", clients=50, d=10)
_HETERO = ProblemConfig("heterogeneous-optima", clients=50, d=10, spread=1.0)
_REGRESSION = ProblemConfig("regression", clients=10, d=5, labels=6, family="regression")
EXPERIMENT = {
    "smoke": {"configs": [_SMALL, _MID, _REGRESSION, _HETERO], "instances": 2, "reps": 8, "iterations": 60,
              "ball_points": 16, "ball_steps": 40},
    "default": {"configs": [_SMALL, _MID, _REGRESSION, _PAPER, _HETERO], "instances": 4, "reps": 8, "iterations": 150,
                "ball_points": 32, "ball_steps": 60},
    "paper": {"configs": [_SMALL, _MID, _REGRESSION, _PAPER, _HETERO], "instances": 20, "reps": 32, "iterations": 500,
              "ball_points": 128, "ball_steps": 150},
}
INITIAL_DISTANCE = 3.0


def draw_label_counts(rng: np.random.Generator, clients: int, labels: int, low: int = 400, high: int = 800):
    """Each client: ``U{low..high}`` samples of two distinct random labels, split uniformly."""
    counts = np.zeros((clients, labels))
    for k in range(clients):
        pair = rng.choice(labels, size=min(2, labels), replace=False)
        counts[k, pair] = rng.multinomial(rng.integers(low, high + 1), np.full(pair.size, 1 / pair.size))
    return counts


@dataclass(frozen=True)
class Instances:
    """The problems of one configuration: quadratics, layout, grouping, tree and label counts."""

    config: ProblemConfig
    problem: object
    layout: object
    grouping: object
    counts: np.ndarray
    seeds: tuple


def build_instances(config: ProblemConfig, seed: int, count: int, key=(), instance_seeds=None,
                    device: str = "cpu") -> Instances:
    """``count`` instances of ``config``: instance ``i`` has the seed ``spawn_seeds(seed, count,
    *key)[i]`` (or ``instance_seeds[i]``) and depends only on it and on the label counts, drawn
    from ``(seed, key)`` and shared by the configuration's instances."""
    seeds = spawn_seeds(seed, count, *key) if instance_seeds is None else tuple(instance_seeds)
    counts = draw_label_counts(stream(seed, *key, 99), config.clients, config.labels)
    if config.family == "regression":
        labels = make_device_regression(config.labels, config.d, samples=config.label_samples, clusters=1,
                                        designs="client", design_min=config.mu, design_max=config.L,
                                        spread=config.spread, noise_std=0.0, batch_size=count, seed=list(seeds),
                                        device=device).as_quadratic_federation()
    else:
        labels = make_quadratic_federation(config.labels, config.d, clusters=1, hessians="client",
                                           strong_convexity=config.mu, smoothness=config.L, spread=config.spread,
                                           noise_std=0.0, batch_size=count, seed=list(seeds), device=device)
    layout = make_wireless_layout(config.clients, batch_size=count, seed=list(seeds))
    return Instances(config, label_mixture(labels, counts), layout, dsc_grouping(layout, counts), counts, seeds)


def _gap(problem):
    """``F(w) - F*`` exactly, torch: models ``(B, S, d)`` -> ``(B, S)``."""
    hessian = torch.as_tensor(problem.global_hessian, dtype=problem.dtype, device=problem.device)
    optimum = torch.as_tensor(problem.global_minimizer, dtype=problem.dtype, device=problem.device)
    return lambda w: 0.5 * torch.einsum("bsi,bij,bsj->bs", w - optimum[:, None], hessian, w - optimum[:, None])


def _ball_sup(instances, tree, points, steps):
    """Sup of A4's ratios and of W over the ball ``||w - w*|| <= r0``, per instance: the best
    of ``points`` random points, each locally maximised by projected gradient ascent on the
    log of each quantity (noise-free gradients, the angle weights they give). A lower
    estimate of the sup, as any search of a non-concave function is."""
    problem = instances.problem
    draws = np.stack([stream(s, 5).standard_normal((points, problem.d + 1)) for s in instances.seeds])
    radius = INITIAL_DISTANCE * np.abs(draws[..., -1:]) / np.linalg.norm(draws, axis=-1, keepdims=True)
    start = draws[..., :-1] / np.linalg.norm(draws[..., :-1], axis=-1, keepdims=True) * radius
    center = torch.as_tensor(problem.global_minimizer, dtype=problem.dtype, device=problem.device)[:, None]
    sups = []
    for which in range(3):  # intra ratio, inter ratio, weight sum
        offset = torch.as_tensor(start, dtype=problem.dtype, device=problem.device).requires_grad_(True)
        optimizer = torch.optim.Adam([offset], lr=0.05 * INITIAL_DISTANCE)
        best = torch.zeros(problem.batch_size, dtype=problem.dtype, device=problem.device)
        for _ in range(steps + 1):
            gradients = problem.population_gradients(center + offset).transpose(1, 2)  # (B, K, P, d)
            values = dissimilarity_ratios(gradients, angle_weights(gradients, tree), tree)[which]
            best = torch.maximum(best, values.detach().amax(-1))
            optimizer.zero_grad()
            (-values.clamp_min(1e-300).log().sum()).backward()
            optimizer.step()
            with torch.no_grad():  # back into the ball
                offset *= (INITIAL_DISTANCE / offset.norm(dim=-1, keepdim=True)).clamp(max=1.0)
        sups.append(best.cpu().numpy())
    return sups


def _significant(values, digits=8):
    return np.array([float(f"{v:.{digits}g}") for v in values])


def _constants(problem):
    eig = np.linalg.eigvalsh(problem.global_hessian)
    return {"L_exact": eig[:, -1], "mu_exact": eig[:, 0], "L_clients": problem.smoothness,
            "mu_clients": problem.strong_convexity}


def _client_gradient_energy(problem, w):
    """``E_k ||grad F_k(w)||^2 = sum_k p_k ||grad F_k(w)||^2`` (A4's left side, ``p_k = |D_k|/D``)
    at one point per problem ``(B, d)``, exactly."""
    gradients = problem.client_gradients(np.asarray(w)[:, None])[:, 0]  # (B, K, d)
    return np.einsum("bkd,bkd,k->b", gradients, gradients, problem.weights)


def run_configuration(config: ProblemConfig, ctx_seed: int, scale_cfg: dict, index: int, instance_seeds=None,
                      device: str = "cpu", factors=FACTORS) -> dict:
    """Every instance of ``config`` swept across its threshold; returns the tidy run table
    (one row per instance x step size x noise repetition) and per-instance constants.
    ``instance_seeds`` reruns chosen instances alone (e.g. a counterexample from its seed);
    ``factors``: the step sizes as multiples of each instance's ball threshold."""
    reps, T = scale_cfg["reps"], scale_cfg["iterations"]
    count = scale_cfg["instances"] if instance_seeds is None else len(instance_seeds)
    inst = build_instances(config, ctx_seed, count, key=(index,), instance_seeds=instance_seeds, device=device)
    problem, B = inst.problem, count
    sizes = inst.counts.sum(1)
    tree = hierarchy(inst.grouping, inst.layout, sizes, noise_scale=config.noise_scale, device=problem.device)
    # 8 significant digits: the search's last bits depend on the batch, and the step sizes (hence the
    # noise keys) must not, so that one instance rerun alone from its seed gives the same runs
    ball_intra, ball_inter, ball_weight = (_significant(x) for x in _ball_sup(inst, tree, scale_cfg["ball_points"],
                                                                               scale_cfg["ball_steps"]))
    constants = _constants(problem)
    threshold = 2.0 / (constants["L_exact"] * ball_intra * ball_inter * ball_weight)
    steps = threshold[:, None] * np.asarray(factors, float)[None]  # (B, S)
    rows = np.repeat(np.arange(B), reps)
    noise_seeds = np.array([spawn_seeds(s, reps) for s in inst.seeds]).ravel()
    repeated = problem.subset(rows)
    start_rng = [stream(s, 6) for s in inst.seeds]
    direction = np.stack([r.standard_normal(problem.d) for r in start_rng])
    w0 = problem.global_minimizer + INITIAL_DISTANCE * direction / np.linalg.norm(direction, axis=-1, keepdims=True)
    trace = hierarchical_descent(repeated.population_gradients,
                                 torch.as_tensor(w0[rows], dtype=problem.dtype, device=problem.device),
                                 hierarchy(inst.grouping.subset(rows), inst.layout.subset(rows), sizes,
                                           noise_scale=config.noise_scale, device=problem.device),
                                 step_sizes=steps[rows], iterations=T, seeds=noise_seeds, loss=_gap(repeated))
    S = len(factors)
    run = {
        "config": config.name, "clients": config.clients, "d": config.d, "spread": config.spread,
        "instance": np.repeat(rows, S), "instance_seed": np.repeat(np.asarray(inst.seeds, np.uint64)[rows], S),
        "rep": np.repeat(np.tile(np.arange(reps), B), S), "noise_seed": np.repeat(noise_seeds.astype(np.uint64), S),
        "factor": np.tile(np.asarray(factors, float), B * reps), "step_size": steps[rows].ravel(),
        "diverged": trace.diverged.ravel(),
        "intra_ratio": np.nanmax(trace.intra_ratio, -1).ravel(), "inter_ratio": np.nanmax(trace.inter_ratio, -1).ravel(),
        "weight_factor": np.nanmax(trace.weight_factor, -1).ravel(),
        "noise_factor": np.nanmax(trace.noise_factor, -1).ravel(),
    }
    table = pd.DataFrame(run)
    gaps = pd.DataFrame(trace.loss.reshape(B * reps * S, T + 1)[:, _checkpoints(T)],
                        columns=[f"gap_{t}" for t in _checkpoints(T)])
    per_instance = pd.DataFrame({
        "config": config.name, "clients": config.clients, "d": config.d, "spread": config.spread,
        "instance": np.arange(B),
        "instance_seed": np.asarray(inst.seeds, np.uint64), "groups": inst.grouping.groups,
        **grouping_columns(inst.grouping),
        "ball_intra_ratio": ball_intra, "ball_inter_ratio": ball_inter, "ball_weight_factor": ball_weight,
        "ball_threshold": threshold, **constants,
        # A4 at w* itself, where grad F = 0: it holds for some delta only if this is 0 (shared optimum)
        "optimum_client_gradient2": _client_gradient_energy(problem, problem.global_minimizer),
        "start_client_gradient2": _client_gradient_energy(problem, w0),
    })
    return {"runs": pd.concat([table, gaps], axis=1), "instances": per_instance, "layout": inst.layout,
            "grouping": inst.grouping, "iterations": T}


def grouping_columns(grouping) -> dict:
    """Per problem: did each stage's affinity propagation converge, and how many clients did
    each stage leave over (joined by proximity or to a fallback leader)."""
    return {"stage1_converged": grouping.converged_channel, "stage2_converged": grouping.converged_data,
            "stage1_leftover": grouping.leftover_channel.sum(-1), "stage2_leftover": grouping.leftover_data.sum(-1)}


def grouping_evidence(frame) -> dict:
    """Totals of :func:`grouping_columns` over the problems (rows) of ``frame``."""
    return {"grouped_problems": len(frame),
            "stage1_not_converged": int((~frame["stage1_converged"].astype(bool)).sum()),
            "stage2_not_converged": int((~frame["stage2_converged"].astype(bool)).sum()),
            "stage1_leftover_clients": int(frame["stage1_leftover"].sum()),
            "stage2_leftover_clients": int(frame["stage2_leftover"].sum())}


def grouping_note(evidence, prefix="") -> str:
    """A summary clause when some affinity propagation did not converge ('' otherwise)."""
    failed = evidence[f"{prefix}stage1_not_converged"] + evidence[f"{prefix}stage2_not_converged"]
    if not failed:
        return ""
    return (f"; affinity propagation did not converge in stage 1 for {evidence[f'{prefix}stage1_not_converged']} "
            f"and in stage 2 for {evidence[f'{prefix}stage2_not_converged']} of {evidence[f'{prefix}grouped_problems']} "
            f"groupings (their last exemplars used; {evidence[f'{prefix}stage1_leftover_clients']} + "
            f"{evidence[f'{prefix}stage2_leftover_clients']} clients left over by stage 1 + stage 2)")


def _checkpoints(T):
    return sorted({0, T // 4, T // 2, T})


def dsc_experiment(ctx):
    """All configurations of the scale, shared by the checks of one ``verify`` call."""
    cfg = EXPERIMENT[ctx.scale]

    def compute():
        parts = [ctx.checkpoint(("dsc-configuration", ctx.scale, c.name),  # minutes each at the paper scale
                                lambda c=c, i=i: run_configuration(c, ctx.seed, cfg, i, device=ctx.device))
                 for i, c in enumerate(cfg["configs"])]
        return {"runs": pd.concat([p["runs"] for p in parts], ignore_index=True),
                "instances": pd.concat([p["instances"] for p in parts], ignore_index=True),
                "maps": {c.name: (p["layout"], p["grouping"]) for c, p in zip(cfg["configs"], parts)},
                "iterations": cfg["iterations"]}

    return ctx.shared(("dsc-quadratics", ctx.scale, ctx.seed), compute)
