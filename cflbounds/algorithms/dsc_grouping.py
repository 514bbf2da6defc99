"""DSC's two-stage grouping (Alg. 1 lines 2-12 of Sun et al., ``seeds/dsc.txt``), batched.

Stage 1 (channel): affinity propagation on the similarity of eq. (7),
``S_c(i,j) = -gamma_ij^2`` off the diagonal and preferences ``P_k`` on it, gives the primary
groups. ``channel_similarity="snr-gap"`` replaces eq. (7) by ``-(gamma_i^dB - gamma_j^dB)^2``,
which groups clients of similar SNR to the BS, as Sec. III-A says it intends; eq. (7) as
printed instead rates pairs with a *strong* mutual link as dissimilar.

Stage 2 (data), inside each primary group: the information matrix of eq. (11),
``Xi(k,iota) = -(C_k^iota / D) log(D C_k^iota / (D_k C^iota))`` (0 when C_k^iota = 0), and the
similarity of eq. (12), ``s_ik = (sum_iota (Xi(i,iota) - Xi(k,iota))^2)^2`` -- positive and
growing with the difference of label mixes, so each secondary group gathers *different*
label mixes, as the paper intends ("as many classes of sample labels as possible") -- and
affinity propagation again. A client left without a group (the ``"paper"`` decision rule)
joins the group whose leader is nearest in the plane ("Euclidean distance-based proximity
... into their respective nearby groups"): in stage 2, the nearest secondary leader *of its
own primary group*, since stage 2 refines each primary group ("clustered ... within each
primary group", Alg. 1 line 8) and a client moved to another primary group would undo the
channel stage. A stage that finds no leader at all leaves its clients with a fallback
leader: the client with the best SNR to the BS (stage 1), the primary group's leader
(stage 2). Every affinity-propagation run breaks ties with its own seed, derived from the
problem's seed, the stage and the primary group (:func:`tie_seed`), so a grouping is
reproducible from the layout's seed alone.

Each secondary group's exemplar is its leader: it aggregates its members' gradients and
uploads to the BS. ``stages="data"`` skips stage 1 (Setting 2 of Sec. IV), ``"channel"``
stops after it (Setting 3).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from numbers import Integral, Real

import numpy as np

from .._validation import ArrayLike, Boolean, Constraint, Interval, Options, require, validate_params
from ..synthetic.seeding import spawn_seeds
from ..synthetic.wireless import WirelessLayout
from .affinity_propagation import DECISIONS, SELF_AVAILABILITY, affinity_propagation

__all__ = ["Grouping", "dsc_grouping", "information_matrix", "data_similarity", "channel_similarity", "tie_seed",
           "STAGES"]

STAGES = ("both", "data", "channel")
CHANNEL_SIMILARITIES = ("eq7", "snr-gap")
_STREAM_TIES = 61


@dataclass(frozen=True)
class Grouping:
    """Per problem: ``group`` ``(B, K)`` (each client's group, 0..L_b-1), ``leader``
    ``(B, L_max)`` (each group's leader client, -1 as padding), ``primary`` ``(B, K)`` (the
    stage-1 group); per stage (``channel`` = stage 1, ``data`` = stage 2; True / False for a
    skipped stage): ``converged_*`` ``(B,)`` (every affinity-propagation run of the stage
    converged) and ``leftover_*`` ``(B, K)`` (the clients that stage left without a group,
    joined by proximity or to the fallback leader)."""

    group: np.ndarray
    leader: np.ndarray
    primary: np.ndarray
    converged_channel: np.ndarray
    converged_data: np.ndarray
    leftover_channel: np.ndarray
    leftover_data: np.ndarray

    @property
    def groups(self) -> np.ndarray:
        return (self.leader >= 0).sum(-1)

    @property
    def converged(self) -> np.ndarray:
        """``(B,)``: every affinity-propagation run of the problem converged."""
        return self.converged_channel & self.converged_data

    @property
    def client_leader(self) -> np.ndarray:
        """``(B, K)``: the leader of each client's group (itself for a leader)."""
        return np.take_along_axis(self.leader, self.group, -1)

    def subset(self, index) -> "Grouping":
        """The problems at ``index`` (batch positions, repeats allowed)."""
        index = np.asarray(index)
        return Grouping(*(getattr(self, f.name)[index] for f in fields(self)))

    @classmethod
    def singletons(cls, batch_size: int, clients: int) -> "Grouping":
        """Every client its own group and leader: FedAvg's direct uploads."""
        own = np.broadcast_to(np.arange(clients), (batch_size, clients)).copy()
        done, none = np.ones(batch_size, bool), np.zeros((batch_size, clients), bool)
        return cls(own, own.copy(), own.copy(), done, done.copy(), none, none.copy())


_COUNTS = Constraint(lambda v: ArrayLike.is_satisfied_by(v) and np.ndim(v) >= 2 and bool(np.all(np.asarray(v) >= 0)),
                     "an array (..., K, labels) of non-negative counts")


@validate_params({"label_counts": [_COUNTS]})
def information_matrix(label_counts) -> np.ndarray:
    """Xi of eq. (11), ``-(C_k^iota / D) log(D C_k^iota / (D_k C^iota))`` (the printed leading
    minus included; 0 where ``C_k^iota = 0``), from label counts ``C_k^iota`` ``(..., K, labels)``."""
    counts = np.asarray(label_counts, dtype=float)
    total = counts.sum(axis=(-2, -1), keepdims=True)  # D
    per_client = counts.sum(-1, keepdims=True)  # D_k
    per_label = counts.sum(-2, keepdims=True)  # C^iota
    with np.errstate(divide="ignore", invalid="ignore"):
        xi = -counts / total * np.log(total * counts / (per_client * per_label))
    return np.where(counts > 0, xi, 0.0)


@validate_params({"label_counts": [_COUNTS]})
def data_similarity(label_counts) -> np.ndarray:
    """``s_ik = (sum_iota (Xi(i,iota) - Xi(k,iota))^2)^2`` of eq. (12), ``(..., K, K)``."""
    xi = information_matrix(label_counts)
    return (((xi[..., :, None, :] - xi[..., None, :, :]) ** 2).sum(-1)) ** 2


@validate_params({"layout": [Constraint(lambda v: isinstance(v, WirelessLayout), "a WirelessLayout")],
                  "kind": [Options(CHANNEL_SIMILARITIES)]})
def channel_similarity(layout: WirelessLayout, kind: str = "eq7") -> np.ndarray:
    """Off-diagonal similarity of stage 1: eq. (7) ``-gamma_ij^2`` or ``"snr-gap"``."""
    if kind == "eq7":
        return -layout.snr_between**2
    snr_db = 10 * np.log10(layout.snr_to_bs)
    return -((snr_db[:, :, None] - snr_db[:, None, :]) ** 2)


def tie_seed(problem_seed: int, stage: int, primary_group: int = 0) -> int:
    """The tie-breaking seed of one affinity-propagation run of DSC: stage 1 (``stage=1``) or
    stage 2 inside primary group ``primary_group`` (``stage=2``) of the problem of seed
    ``problem_seed``; an int in numpy.random.RandomState's range."""
    return spawn_seeds(int(problem_seed), 1, _STREAM_TIES, stage, primary_group)[0] & 0xFFFFFFFF


def _preference(kind, layout):
    """``"median"`` (AP's default), ``"snr"`` (``P_k = -gamma_k^2``, the diagonal of Gamma in
    the form of eq. 7's entries) or a number."""
    if kind == "snr":
        return -layout.snr_to_bs**2
    return kind


def _resolve(positions, assignment, fallback):
    """Leaders from an assignment (-1 = left over) of the points at ``positions``: left-over
    points join the nearest leader; with no leader at all, ``fallback`` leads everyone.
    Returns each point's leader and the left-over mask."""
    leaders = np.unique(assignment[assignment >= 0])
    if leaders.size == 0:
        return np.full_like(assignment, fallback), np.ones(assignment.shape, bool)
    left = assignment < 0
    distance = np.linalg.norm(positions[:, None] - positions[leaders][None], axis=-1)
    return np.where(left, leaders[np.argmin(distance, axis=-1)], assignment), left


def _padded(blocks, similarity):
    """Stack the square sub-matrices ``similarity[b][ix, ix]`` of ``blocks`` [(b, ix)] with padding."""
    size = max(len(ix) for _, ix in blocks)
    sub = np.zeros((len(blocks), size, size))
    valid = np.zeros((len(blocks), size), bool)
    for p, (b, ix) in enumerate(blocks):
        sub[p, : len(ix), : len(ix)] = similarity[b][np.ix_(ix, ix)]
        valid[p, : len(ix)] = True
    return sub, valid


@validate_params({
    "layout": [Constraint(lambda v: isinstance(v, WirelessLayout), "a WirelessLayout")],
    "label_counts": [_COUNTS],
    "stages": [Options(STAGES)],
    "channel_similarity_kind": [Options(CHANNEL_SIMILARITIES)],
    "channel_preference": [Options(("median", "snr")), Interval(Real, None, None)],
    "data_preference": [Options(("median",)), Interval(Real, None, None)],
    "self_availability": [Options(SELF_AVAILABILITY)],
    "decision": [Options(DECISIONS)],
    "damping": [Interval(Real, 0.5, 1, closed="left")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "convergence_iter": [Interval(Integral, 1, None, closed="left")],
    "tie_breaking": [Boolean],
})
def dsc_grouping(layout: WirelessLayout, label_counts, *, stages: str = "both", channel_similarity_kind: str = "eq7",
                 channel_preference="median", data_preference="median", self_availability: str = "sum",
                 decision: str = "standard", damping: float = 0.5, max_iter: int = 200,
                 convergence_iter: int = 15, tie_breaking: bool = True) -> Grouping:
    """Group the clients of every problem of ``layout`` (see the module docstring).

    ``label_counts``: ``C_k^iota``, ``(K, labels)`` shared by all problems or ``(B, K, labels)``.
    ``tie_breaking=False`` runs affinity propagation on the exact similarities.
    """
    B, K = layout.batch_size, layout.clients
    counts = np.broadcast_to(np.asarray(label_counts, dtype=float), (B, K, np.shape(label_counts)[-1]))
    require(np.all(counts >= 0) and np.all(counts.sum(-1) > 0),
            "The 'label_counts' parameter must be non-negative with at least one sample per client.")
    ap = dict(damping=damping, max_iter=max_iter, convergence_iter=convergence_iter,
              self_availability=self_availability, decision=decision, tie_breaking=tie_breaking)
    converged = {"channel": np.ones(B, bool), "data": np.ones(B, bool)}
    leftover = {"channel": np.zeros((B, K), bool), "data": np.zeros((B, K), bool)}
    fallback = layout.snr_to_bs.argmax(-1)  # leads everyone if stage 1 finds no leader at all
    primary_leader = np.broadcast_to(fallback[:, None], (B, K)).copy()
    if stages != "data":
        stage1 = affinity_propagation(channel_similarity(layout, channel_similarity_kind),
                                      preference=_preference(channel_preference, layout),
                                      seed=[tie_seed(s, 1) for s in layout.seeds], **ap)
        converged["channel"] = stage1.converged
        for b in range(B):
            primary_leader[b], leftover["channel"][b] = _resolve(layout.positions[b], stage1.assignment[b],
                                                                 fallback[b])
    primary = np.stack([np.unique(row, return_inverse=True)[1] for row in primary_leader])
    if stages == "channel":
        return _grouping(primary_leader, primary, converged, leftover)
    blocks = [(b, np.flatnonzero(primary[b] == g)) for b in range(B) for g in range(primary[b].max() + 1)]
    sub, valid = _padded(blocks, data_similarity(counts))
    stage2 = affinity_propagation(sub, preference=data_preference, valid=valid,
                                  seed=[tie_seed(layout.seeds[b], 2, primary[b, ix[0]]) for b, ix in blocks], **ap)
    secondary_leader = np.empty((B, K), int)
    for p, (b, ix) in enumerate(blocks):
        own_leader = np.flatnonzero(ix == primary_leader[b, ix[0]])[0]  # the fallback inside the block
        local, left = _resolve(layout.positions[b, ix], stage2.assignment[p, : len(ix)], own_leader)
        secondary_leader[b, ix] = ix[local]
        leftover["data"][b, ix] = left
        converged["data"][b] &= stage2.converged[p]
    return _grouping(secondary_leader, primary, converged, leftover)


def _grouping(client_leader, primary, converged, leftover) -> Grouping:
    """Number each problem's groups 0..L_b-1 (by leader index) and list their leaders."""
    numbered = [np.unique(row, return_inverse=True) for row in client_leader]
    leader = np.full((len(numbered), max(len(leaders) for leaders, _ in numbered)), -1)
    for b, (leaders, _) in enumerate(numbered):
        leader[b, : len(leaders)] = leaders
    return Grouping(np.stack([g for _, g in numbered]), leader, primary, converged["channel"], converged["data"],
                    leftover["channel"], leftover["data"])
