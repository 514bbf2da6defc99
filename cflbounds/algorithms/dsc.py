"""Hierarchical training of DSC (Alg. 1 lines 13-16; eqs. 2-5 of Sun et al.), batched.

Every round each client computes its full local gradient ``grad F_k(w)`` and uploads it to
its group leader; each leader aggregates and uploads to the BS (eq. 2):

    grad F(w) = sum_l G_l [ sum_{k in l} G_k grad F_k(w) ],     w <- w - lambda grad F(w)   (eq. 4)

* ``G_l = |D_l| / sum_l |D_l|`` and, with ``weighting="angle"`` (eq. 3, from FedAdp [13]),
  ``G_k = |D_k| e^{f(theta_k)} / sum_{i in l} |D_i| e^{f(theta_i)}`` with
  ``f(theta) = alpha (1 - exp(-exp(-alpha (theta - 1))))`` (the paper prints alpha = 1; FedAdp
  uses alpha = 5) and ``theta_k`` the angle between client k's gradient and its group's
  gradient, taken as the data-weighted sum of the received gradients (FedAdp's reference; the
  paper's ``grad F_l`` depends on the weights being defined). ``weighting="data"`` is
  ``G_k = |D_k| / |D_l|``. The leader computes the angles from what it receives.
* Channel noise (eq. 5), two readings (``noise_reading``). ``"per-upload"`` (default): every
  upload over a link adds its own Gaussian noise of total variance ``sigma^2`` (``E||n||^2``):
  ``sigma_k^2`` client k -> its leader (0 for the leader itself), ``sigma_l^2`` leader -> BS,
  from :class:`Hierarchy`; the leader weighs what it received. This is the reading of
  Theorem 1, whose noise sum carries one ``sigma_l^2`` per group and one ``sigma_k^2`` per
  client, and of Sec. II-B's CSMA-CA (no concurrent transmissions). ``"per-receiver"``:
  eq. (5) as printed, ``y = sum_l h_l p_l s_l + n_0``, the senders' signals superposed at the
  receiver with *one* receiver noise per aggregate, the transmit scalars ``p_l`` (complex)
  inverting each channel so that ``y`` is the weighted sum (over-the-air aggregation; the
  same at each leader for its members). Power-limited channel inversion is set by the
  weakest weighted link, so the aggregate ``sum_i G_i s_i`` carries noise of variance
  ``max_i G_i^2 sigma_i^2`` (one sender: the per-upload variance), and the weights must be
  known before the superposition: computed from the noise-free gradients. The paper states
  both (eq. 5 vs CSMA-CA and Theorem 1), so the default stays the reading Theorem 1 needs.

FedAvg is the same loop with every client its own group (:meth:`Grouping.singletons`): each
client uploads straight to the BS with weight ``|D_k|/D``.

B problems x S step sizes run as one tensor computation; the noise of run (problem b, step
size lambda) at round t depends only on ``(seed_b, lambda, t)``. A run whose model becomes
non-finite or explodes is recorded as diverged and frozen; it is never an error.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Callable

import numpy as np
import torch

from .._threads import follow_load
from .._validation import ArrayLike, Boolean, Constraint, Interval, NoneOK, Options, require, validate_params
from ..synthetic.counter_random import counter_hash, counter_normal
from ..synthetic.wireless import WirelessLayout, upload_noise_variance
from .dsc_grouping import Grouping
from .federated import gather_groups, group_sums

__all__ = ["Hierarchy", "hierarchy", "DescentTrace", "hierarchical_descent", "angle_weights", "dissimilarity_ratios",
           "WEIGHTINGS", "NOISE_READINGS"]

WEIGHTINGS = ("angle", "data")
NOISE_READINGS = ("per-upload", "per-receiver")
_STREAM_CHANNEL = 53
_EXPLODED = 1e100  # a model norm beyond this is a diverged run


@dataclass(frozen=True)
class Hierarchy:
    """The upload tree of every problem, as tensors: ``groups`` ``(B, K)`` each client's group
    (long), ``data_sizes`` ``(B, K)``, ``group_weights`` ``(B, L)`` (G_l, 0 for padding),
    ``client_noise`` ``(B, K)`` (sigma_k^2) and ``group_noise`` ``(B, L)`` (sigma_l^2)."""

    groups: torch.Tensor
    data_sizes: torch.Tensor
    group_weights: torch.Tensor
    client_noise: torch.Tensor
    group_noise: torch.Tensor

    @property
    def batch_size(self) -> int:
        return self.groups.shape[0]

    @property
    def count(self) -> int:
        """``L``, groups per problem (with padding)."""
        return self.group_weights.shape[1]

    def group_sums(self, values: torch.Tensor) -> torch.Tensor:
        """``sum_{k in l}`` of client values ``(B, K, *rest)`` -> ``(B, L, *rest)``."""
        if values.dim() == 2:
            return group_sums(values[..., None], self.groups, self.count)[0][..., 0]
        return group_sums(values, self.groups, self.count)[0]

    def group_max(self, values: torch.Tensor) -> torch.Tensor:
        """``max_{k in l}`` of non-negative client values ``(B, K, S)`` -> ``(B, L, S)``."""
        index = self.groups[..., None].expand_as(values)
        return values.new_zeros(values.shape[0], self.count, values.shape[2]).scatter_reduce(1, index, values, "amax")

    def of_group(self, values: torch.Tensor) -> torch.Tensor:
        """Each client's group's value: ``(B, L, *rest)`` -> ``(B, K, *rest)``."""
        return gather_groups(values, self.groups)


@validate_params({
    "grouping": [Constraint(lambda g: isinstance(g, Grouping), "a Grouping")],
    "layout": [Constraint(lambda v: isinstance(v, WirelessLayout), "a WirelessLayout")],
    "data_sizes": [ArrayLike],
    "noise_scale": [Interval(Real, 0, None, closed="left")],
    "reference_distance": [Interval(Real, 0, None, closed="neither")],
})
def hierarchy(grouping: Grouping, layout: WirelessLayout, data_sizes, *, noise_scale: float = 0.0,
              reference_distance: float = 50.0, dtype=torch.float64, device="cpu") -> Hierarchy:
    """The tree of ``grouping`` over ``layout``: intra-group noise from ``gamma_{leader,k}``,
    inter-group noise from the leader's ``gamma_l`` to the BS (:func:`upload_noise_variance`);
    ``noise_scale = 0`` is the ideal channel. ``data_sizes`` ``(K,)`` or ``(B, K)``."""
    B, K = grouping.group.shape
    require(layout.batch_size == B and layout.clients == K,
            f"The grouping ({B} problems x {K} clients) and the layout ({layout.batch_size} x {layout.clients}) differ.")
    sizes = np.array(np.broadcast_to(np.asarray(data_sizes, float), (B, K)))
    require(bool(np.all(sizes > 0)), "The 'data_sizes' parameter must be positive.")
    L = grouping.leader.shape[1]
    group_sizes = np.stack([np.bincount(g, weights=w, minlength=L) for g, w in zip(grouping.group, sizes)])
    leader = grouping.client_leader
    link = np.take_along_axis(layout.snr_between, leader[:, :, None], 2)[:, :, 0]  # gamma_{leader(k), k}
    link = np.where(leader == np.arange(K), np.inf, link)  # a leader does not upload to itself
    leader_snr = np.take_along_axis(layout.snr_to_bs, grouping.leader.clip(0), 1)
    channel = dict(reference_distance=reference_distance, channel=layout.channel)
    group_noise = np.where(grouping.leader >= 0, upload_noise_variance(leader_snr, noise_scale, **channel), 0.0)
    tensor = lambda a: torch.as_tensor(np.array(a), dtype=dtype, device=device)
    return Hierarchy(torch.as_tensor(grouping.group, device=device), tensor(sizes),
                     tensor(group_sizes / sizes.sum(-1, keepdims=True)),
                     tensor(upload_noise_variance(link, noise_scale, **channel)), tensor(group_noise))


def angle_weights(gradients, tree: Hierarchy, *, weighting="angle", alpha=1.0):
    """Intra-group weights ``G_k`` of eq. (3) from the gradients the leaders hold:
    gradients ``(B, K, S, q)`` -> ``(B, K, S)`` (S runs per problem, e.g. step sizes)."""
    sizes = tree.data_sizes
    share = sizes / tree.of_group(tree.group_sums(sizes))  # |D_k| / |D_l|
    if weighting == "data":
        return share[..., None].expand(gradients.shape[:3])
    reference = tree.of_group(tree.group_sums(share[..., None, None] * gradients))  # data-weighted grad F_l
    cosine = (reference * gradients).sum(-1) / (reference.norm(dim=-1) * gradients.norm(dim=-1)).clamp_min(1e-300)
    theta = torch.arccos(cosine.clamp(-1.0 + 1e-12, 1.0 - 1e-12))  # finite derivative at parallel gradients
    score = sizes[..., None] * torch.exp(alpha * (1 - torch.exp(-torch.exp(-alpha * (theta - 1)))))
    return score / tree.of_group(tree.group_sums(score))


@dataclass(frozen=True)
class DescentTrace:
    """Per run ``(B, S)``: ``loss`` ``(B, S, T+1)`` (the caller's loss at each iterate, NaN if
    none); per round ``(B, S, T)``: ``weight_factor`` ``sum_l G_l^2 sum_k G_k^2``,
    ``noise_factor`` ``sum_l G_l^2 sigma_l^2 + sum_k G_k^2 sigma_k^2``, ``intra_ratio``
    ``max_k ||grad F_k||^2 / ||grad F_l||^2`` and ``inter_ratio`` ``max_l ||grad F_l||^2 /
    ||grad F||^2`` (noise-free gradients, the weights used); ``diverged`` ``(B, S)``;
    ``final`` the last models ``(B, S, q)``."""

    loss: np.ndarray
    weight_factor: np.ndarray
    noise_factor: np.ndarray
    intra_ratio: np.ndarray
    inter_ratio: np.ndarray
    diverged: np.ndarray
    final: torch.Tensor


def _ratio(numerator, denominator):
    return numerator / denominator.clamp_min(torch.finfo(denominator.dtype).tiny)


_STEPS = Constraint(lambda v: ArrayLike.is_satisfied_by(v) and np.ndim(v) <= 2 and bool(np.all(np.asarray(v, float) > 0)),
                    "a positive float, a sequence (S,) of them or one sequence per problem (B, S)")


@validate_params({
    "gradients": [Constraint(callable, "a callable")],
    "initial": [Constraint(lambda t: isinstance(t, torch.Tensor) and t.dim() == 2, "a (B, q) tensor")],
    "tree": [Constraint(lambda t: isinstance(t, Hierarchy), "a Hierarchy")],
    "step_sizes": [_STEPS],
    "iterations": [Interval(Integral, 0, None, closed="left")],
    "seeds": [ArrayLike],
    "weighting": [Options(WEIGHTINGS)],
    "alpha": [Interval(Real, 0, None, closed="left")],
    "loss": [NoneOK, Constraint(callable, "a callable")],
    "stream": [Interval(Integral, 0, None, closed="left")],
    "record": [Boolean],
    "noise_reading": [Options(NOISE_READINGS)],
})
@follow_load()
def hierarchical_descent(gradients: Callable, initial: torch.Tensor, tree: Hierarchy, *, step_sizes, iterations: int,
                         seeds, weighting: str = "angle", alpha: float = 1.0, loss: Callable | None = None,
                         stream: int = 0, record: bool = True, noise_reading: str = "per-upload") -> DescentTrace:
    """Run eqs. (2)-(5) from ``initial`` ``(B, q)`` for every step size (see the module docstring);
    ``step_sizes`` ``(S,)`` for all problems or ``(B, S)``, one row per problem.

    ``gradients(w)``: models ``(B, S, q)`` -> client gradients ``(B, S, K, q)``;
    ``loss(w)`` -> ``(B, S)`` (e.g. ``F(w) - F*``), recorded at every iterate when given;
    ``seeds`` ``(B,)`` the problems' seeds; ``stream`` separates noise streams of one seed
    (e.g. DSC and FedAvg); ``record=False`` skips the per-round diagnostics (NaN);
    ``noise_reading`` how eq. (5)'s noise enters (module docstring).
    """
    B, q = initial.shape
    steps = np.atleast_2d(np.asarray(step_sizes, np.float64))
    require(tree.batch_size == B and len(seeds) == B and steps.shape[0] in (1, B),
            f"The initial models ({B}), the tree ({tree.batch_size}), the seeds ({len(seeds)}) and per-problem step "
            f"sizes ({steps.shape[0]}) must match.")
    steps = np.array(np.broadcast_to(steps, (B, steps.shape[1])))
    K, L = tree.groups.shape[1], tree.count
    S = steps.shape[1]
    dtype, device = initial.dtype, initial.device
    lam = torch.as_tensor(steps, dtype=dtype, device=device)[..., None]
    keys = counter_hash(np.asarray(seeds, dtype=np.uint64)[:, None], _STREAM_CHANNEL, stream, steps.view(np.uint64))
    client_std = (tree.client_noise / q).sqrt()[:, :, None, None]
    group_std = (tree.group_noise / q).sqrt()[:, :, None, None]
    noisy = bool((tree.client_noise > 0).any() or (tree.group_noise > 0).any())
    w = initial[:, None, :].expand(B, S, q).clone()
    alive = torch.ones(B, S, dtype=torch.bool, device=device)
    records = {name: np.full((B, S, iterations), np.nan) for name in ("weight_factor", "noise_factor", "intra_ratio",
                                                                      "inter_ratio")}
    losses = np.full((B, S, iterations + 1), np.nan)
    for t in range(iterations + 1):
        if loss is not None:
            losses[..., t] = torch.where(alive, loss(w), torch.inf).cpu().numpy()
        if t == iterations:
            break
        exact = gradients(w).transpose(1, 2)  # clients first: (B, K, S, q)
        received, leader_noise, bs_noise = exact, 0.0, 0.0
        if noisy and noise_reading == "per-upload":
            z = _normals(keys, t, K + L, q, dtype, device)
            received = exact + client_std * z[:, :K]
            leader_noise = group_std * z[:, K:]  # each leader's upload to the BS
        G_k = angle_weights(received, tree, weighting=weighting, alpha=alpha)  # (B, K, S)
        if noisy and noise_reading == "per-receiver":  # one noise per aggregate, its weakest weighted link's
            z = _normals(keys, t, L + 1, q, dtype, device)
            leader_noise = (tree.group_max(G_k**2 * tree.client_noise[..., None]) / q).sqrt()[..., None] * z[:, :L]
            bs_noise = ((tree.group_weights**2 * tree.group_noise).amax(-1) / q).sqrt()[:, None, None] * z[:, L]
        group_sum = tree.group_sums(G_k[..., None] * received) + leader_noise  # (B, L, S, q), at the leaders
        step = torch.einsum("bl,blsq->bsq", tree.group_weights, group_sum) + bs_noise
        if record:
            _record(records, t, exact, G_k, tree)
        w = torch.where(alive[..., None], w - lam * step, w)
        alive &= torch.isfinite(w).all(-1) & (w.norm(dim=-1) < _EXPLODED)
    return DescentTrace(losses, **records, diverged=(~alive).cpu().numpy(), final=w)


def _normals(keys, t, rows, q, dtype, device):
    """Round t's standard normals of every run, ``(B, rows, S, q)``."""
    B, S = keys.shape
    z = torch.as_tensor(counter_normal(keys, t, rows * q), dtype=dtype, device=device).view(B, S, rows, q)
    return z.transpose(1, 2)


def dissimilarity_ratios(exact, G_k, tree: Hierarchy):
    """A4's ratios and Theorem 1's weight sum at points: client gradients ``exact``
    ``(B, K, P, q)`` and intra weights ``G_k`` ``(B, K, P)`` -> ``max_k ||grad F_k||^2 /
    ||grad F_l||^2``, ``max_l ||grad F_l||^2 / ||grad F||^2`` and ``sum_l G_l^2 sum_k G_k^2``,
    each ``(B, P)``, with ``grad F_l = sum_k G_k grad F_k`` and ``grad F = sum_l G_l grad F_l`` (eq. 2)."""
    group_gradient = tree.group_sums(G_k[..., None] * exact)  # (B, L, P, q)
    global_gradient = torch.einsum("bl,blpq->bpq", tree.group_weights, group_gradient)
    group_sq = group_gradient.pow(2).sum(-1)  # (B, L, P)
    intra = _ratio(exact.pow(2).sum(-1), tree.of_group(group_sq)).amax(1)
    occupied = tree.group_weights[..., None] > 0
    inter = torch.where(occupied, _ratio(group_sq, global_gradient.pow(2).sum(-1)[:, None]), 0.0).amax(1)
    G_l = tree.of_group(tree.group_weights)[..., None]
    return intra, inter, (G_l**2 * G_k**2).sum(1)


def _record(records, t, exact, G_k, tree):
    """Theorem 1's sums and A4's ratios at round t (noise-free gradients, the weights used)."""
    intra, inter, weight = dissimilarity_ratios(exact, G_k, tree)
    records["intra_ratio"][..., t] = intra.cpu().numpy()
    records["inter_ratio"][..., t] = inter.cpu().numpy()
    records["weight_factor"][..., t] = weight.cpu().numpy()
    records["noise_factor"][..., t] = ((tree.group_weights**2 * tree.group_noise).sum(-1)[:, None]
                                       + (G_k**2 * tree.client_noise[..., None]).sum(1)).cpu().numpy()
