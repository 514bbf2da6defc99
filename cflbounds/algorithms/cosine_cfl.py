"""Clustered federated learning by cosine splits (Sattler, Mueller & Samek, "Clustered Federated
Learning: Model-Agnostic Distributed Multitask Optimization Under Privacy Constraints", IEEE
TNNLS 2021, arXiv:1910.01991; the algorithm as CATALOGUE.md states it, and the authors' code,
github.com/felisat/clustered-federated-learning), batched over runs.

Every client holds its cluster's model (one cluster of all ``m`` clients at the start). Round
``r = 1..R``:

1. each client computes its update ``v_i`` from its cluster's model (``updates``):
   ``"gradients"``, ``v_i = grad r_i(theta_c(i))`` (the quantities of the paper's analysis:
   at a stationary point ``theta*`` their cosines are Theorem 1's ``alpha_(i,j)``);
   ``"weight-updates"``, ``v_i = Delta theta_i``, the change of the model after ``local_steps``
   full-gradient steps of size ``step_size`` on ``r_i`` (the shared loop
   :func:`~.local_updates.client_updates`; the code computes it after local epochs of
   minibatch SGD with momentum and a decaying rate: here full gradients, no momentum);
2. for every cluster ``c``: its mean update ``||sum_{i in c} w_i v_i||`` (``weighting``:
   ``"data"``, ``w_i = p_i / sum_{j in c} p_j``, the paper's ``|D_i|/|D_c|``; ``"uniform"``,
   ``1/|c|``, the code's ``torch.mean``) and its largest ``||v_i||``. The split test
   (``split_test``): ``"paper"``, mean ``< eps_1``, largest ``> eps_2`` and ``|c| >= 2``, then
   the bipartition (:mod:`.cosine_bipartition`, ``bipartition``) of the ``v_i``'s cosine
   similarities, kept only if ``sqrt((1 - alpha_cross^max)/2) > gamma_max``; ``"code"``
   (``Server`` in ``fl_devices.py`` and the notebook's loop), mean ``< eps_1``, largest
   ``> eps_2`` and ``|c| > 2``, the bipartition always kept. Both test from round
   ``first_split_round`` on (the code's notebook: ``c_round > 20``);
3. every cluster, after the round's splits, moves by its mean update: ``theta_c <- theta_c -
   step_size sum w_i v_i`` (gradients) or ``theta_c + sum w_i v_i`` (weight updates); the two
   parts of a split start from their parent's model.

``updates="weight-updates"`` with one local step is ``"gradients"`` with ``eps_1, eps_2`` scaled
by ``step_size`` (``v`` is ``-step_size`` times the gradient; cosines do not change sign
together). Cluster ids count splits: 0 is everyone at the start, a split's second part gets the
next id. A run whose models stop being finite is recorded as diverged; it never splits again
(its norms compare false), never an exception.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import torch

from .._threads import follow_load
from .._validation import Boolean, Constraint, Interval, NoneOK, Options, require, validate_params
from .cosine_bipartition import BIPARTITIONS, EXHAUSTIVE_LIMIT, bipartition_kernel, cosine_similarities
from .local_updates import COUNT, INIT, POSITIVE_STEP, check_step, client_updates, initial_points, step_schedule

__all__ = ["cosine_cfl", "CosineCflTrace", "SplitTest", "UPDATES", "SPLIT_TESTS", "WEIGHTINGS"]

UPDATES = ("gradients", "weight-updates")
SPLIT_TESTS = ("paper", "code")
WEIGHTINGS = ("data", "uniform")

_CLIENTS = Constraint(lambda v: all(hasattr(v, a) for a in ("oracle", "weights", "batch_size", "clients", "d")),
                      "a federated problem with a gradient oracle (e.g. CflQuadratics or DigitRisks)")


class SplitTest(NamedTuple):
    """One bipartition computed by the split test: run ``run``, round ``round``, the cluster
    ``cluster`` and its ``members`` (client indices, ascending), ``part`` (0/1 per member), the
    bipartition's ``alpha_cross_max``, ``threshold = sqrt((1 - alpha_cross_max)/2)``, whether the
    cluster was ``split`` and the id its second part got (``new_cluster``, -1 if not split)."""

    run: int
    round: int
    cluster: int
    members: tuple
    part: tuple
    alpha_cross_max: float
    threshold: float
    split: bool
    new_cluster: int


@dataclass(frozen=True)
class CosineCflTrace:
    """A batch of CFL runs.

    ``labels`` ``(B, R + 1, m)``: each client's cluster id after each round (index 0: before
    training, all 0). ``update_norm`` ``(B, R, m)``: ``||v_i||`` of each round;
    ``cluster_update_norm`` ``(B, R, m)``: the norm of the mean update of the client's cluster
    at the split test (the clusters before the round's splits). ``splits``: every bipartition
    computed, as :class:`SplitTest` rows, in order. ``final_models`` ``(B, m, p)`` float64 (each
    client's cluster model); ``models`` ``(B, R + 1, m, p)`` when recorded, else None.
    ``diverged`` ``(B,)``: some update or the final models are not finite; ``diverged_at``
    ``(B,)``: the first round whose updates are not finite (its models overflowed), -1 if none."""

    labels: np.ndarray
    update_norm: np.ndarray
    cluster_update_norm: np.ndarray
    splits: tuple
    final_models: np.ndarray
    diverged: np.ndarray
    diverged_at: np.ndarray
    config: dict
    models: np.ndarray | None = None

    @property
    def final_labels(self) -> np.ndarray:
        """Each client's cluster id at the end, ``(B, m)``."""
        return self.labels[:, -1]

    def runs_splits(self, run: int) -> list:
        """The split tests of run ``run``, in order."""
        return [test for test in self.splits if test.run == run]


@validate_params({
    "problem": [_CLIENTS],
    "rounds": COUNT,
    "step_size": [POSITIVE_STEP],
    "eps1": [Interval(Real, 0, None, closed="neither")],
    "eps2": [Interval(Real, 0, None, closed="left")],
    "gamma_max": [NoneOK, Interval(Real, 0, 1, closed="neither")],
    "local_steps": COUNT,
    "updates": [Options(UPDATES)],
    "bipartition": [Options(BIPARTITIONS)],
    "split_test": [Options(SPLIT_TESTS)],
    "weighting": [Options(WEIGHTINGS)],
    "first_split_round": [Interval(Integral, 1, None, closed="left")],
    "record_models": [Boolean],
    "init": INIT,
})
@follow_load()
def cosine_cfl(problem, *, rounds: int, step_size, eps1: float, eps2: float, gamma_max: float | None = None,
               local_steps: int = 1, updates: str = "gradients", bipartition: str = "exact", split_test: str = "paper",
               weighting: str = "data", first_split_round: int = 1, record_models: bool = False,
               init=None) -> CosineCflTrace:
    """Run CFL (module docstring) for ``rounds`` rounds on every run of the batch.

    Parameters
    ----------
    problem : clients with a gradient oracle (:class:`~cflbounds.synthetic.cfl_quadratics.CflQuadratics`,
        :class:`~cflbounds.synthetic.digit_risks.DigitRisks`, or any problem with ``oracle()``,
        ``weights``, ``batch_size``, ``clients``, ``d``, ``dtype``, ``device``).
    step_size : the (local and federated) step, a float or one per run.
    eps1, eps2 : the split test's thresholds on the mean and the largest update norm.
    gamma_max : the paper's bound on the clients' relative gradient errors, in (0, 1); required
        by ``split_test="paper"``, refused by ``"code"`` (which has no such test).
    local_steps : the local steps of ``updates="weight-updates"`` (must be 1 with ``"gradients"``).
    updates, bipartition, split_test, weighting : the named options of the module docstring.
    first_split_round : no split test before this round.
    record_models : keep every round's models ``(B, R + 1, m, p)``.
    init : the common start, ``(p,)`` or ``(B, p)``; zeros by default.
    """
    require(split_test == "code" or gamma_max is not None, "split_test='paper' needs 'gamma_max' in (0, 1): it splits "
            "only when sqrt((1 - alpha_cross^max)/2) > gamma_max.")
    require(split_test == "paper" or gamma_max is None, "split_test='code' has no gamma_max test (the authors' code "
            "splits on eps1 and eps2 only): leave 'gamma_max' None.")
    require(updates == "weight-updates" or local_steps == 1, "updates='gradients' takes no local steps: "
            "'local_steps' must be 1 (use updates='weight-updates').")
    require(bipartition != "exhaustive" or problem.clients <= EXHAUSTIVE_LIMIT, f"The exhaustive bipartition reaches "
            f"{EXHAUSTIVE_LIMIT} clients; this problem has {problem.clients}: use bipartition='exact' (the same argmin).")
    check_step(problem, "step_size", step_size)
    config = {"method": "cosine_cfl", "rounds": rounds, "step_size": repr(step_size), "eps1": eps1, "eps2": eps2,
              "gamma_max": gamma_max, "local_steps": local_steps, "updates": updates, "bipartition": bipartition,
              "split_test": split_test, "weighting": weighting, "first_split_round": first_split_round}
    return _run(problem, initial_points(problem, init), step_size, config, record_models)


def _run(problem, start, step_size, config, record_models) -> CosineCflTrace:
    B, m, d = problem.batch_size, problem.clients, problem.d
    dtype, device = problem.dtype, problem.device
    R, E = config["rounds"], config["local_steps"]
    step = step_schedule(step_size, B, dtype, device)
    oracle = problem.oracle()
    client_weights = np.asarray(problem.weights, dtype=float) if config["weighting"] == "data" else np.ones(m)
    smallest = 2 if config["split_test"] == "paper" else 3
    models = start[:, None].expand(B, m, d).contiguous()
    labels = np.zeros((B, m), dtype=np.int64)
    clusters = _Clusters(labels, client_weights, dtype, device)
    next_id = np.ones(B, dtype=np.int64)
    label_record = np.zeros((B, R + 1, m), dtype=np.int64)
    norms_record, cluster_record = np.empty((B, R, m)), np.empty((B, R, m))
    model_record = np.empty((B, R + 1, m, d)) if record_models else None
    if record_models:
        model_record[:, 0] = models.double().cpu().numpy()
    diverged_at = np.full(B, -1)
    splits = []
    for r in range(1, R + 1):
        if config["updates"] == "gradients":
            updates = oracle.gradient(models)
        else:
            updates = client_updates(oracle, models, None, first_step=0, steps=E, step=step) - models
        moved = clusters.average @ updates  # every client's cluster mean update, (B, m, d)
        norms = norms_record[:, r - 1] = updates.norm(dim=-1).double().cpu().numpy()
        mean_norm = cluster_record[:, r - 1] = moved.norm(dim=-1).double().cpu().numpy()
        diverged_at = np.where((diverged_at < 0) & ~np.isfinite(norms).all(-1), r, diverged_at)
        largest = np.where(clusters.same, norms[:, None, :], -np.inf).max(axis=-1)
        candidates = clusters.first & (clusters.sizes >= smallest) & (mean_norm < config["eps1"]) & (
            largest > config["eps2"])  # one client per cluster stands for it
        if r >= config["first_split_round"] and candidates.any():
            labels = _split(updates, labels, candidates, next_id, r, config, splits)
            clusters = _Clusters(labels, client_weights, dtype, device)
            moved = clusters.average @ updates
        models = models - step(r) * moved if config["updates"] == "gradients" else models + moved
        label_record[:, r] = labels
        if record_models:
            model_record[:, r] = models.double().cpu().numpy()
    final = models.double().cpu().numpy()
    return CosineCflTrace(labels=label_record, update_norm=norms_record, cluster_update_norm=cluster_record,
                          splits=tuple(splits), final_models=final,
                          diverged=(diverged_at >= 0) | ~np.isfinite(final).all(axis=(1, 2)), diverged_at=diverged_at,
                          config=config, models=model_record)


class _Clusters:
    """The cluster structure of ``labels`` ``(B, m)``: ``same`` ``(B, m, m)`` (one cluster),
    ``average`` ``(B, m, m)`` (row ``i``: the weights ``w_j / sum_{j' in c(i)} w_j'`` of its
    cluster's clients), ``sizes`` ``(B, m)`` (each client's cluster's), ``first`` ``(B, m)`` (the
    cluster's first client)."""

    def __init__(self, labels, client_weights, dtype, device):
        self.same = labels[:, :, None] == labels[:, None, :]
        weighted = self.same * client_weights
        self.average = torch.as_tensor(weighted / weighted.sum(axis=-1, keepdims=True), dtype=dtype, device=device)
        self.sizes = self.same.sum(axis=-1)
        self.first = np.argmax(self.same, axis=-1) == np.arange(labels.shape[1])


def _split(updates, labels, candidates, next_id, round_index, config, splits) -> np.ndarray:
    """Bipartition the cluster of every candidate client ``(B, m)``; apply the splits the test keeps.
    Returns the new labels."""
    new_labels = labels.copy()
    for b in np.flatnonzero(candidates.any(axis=1)):
        similarities = cosine_similarities(updates[b])
        for cluster in np.sort(labels[b, candidates[b]]):  # in the order of the cluster ids
            members = np.flatnonzero(labels[b] == cluster)
            block = similarities[np.ix_(members, members)]
            part = bipartition_kernel(block, config["bipartition"])
            side = part != 0
            cross = float(np.where(~side[:, None] & side[None, :], block, -np.inf).max())
            threshold = float(np.sqrt(max(0.0, 1.0 - cross) / 2.0))
            split = config["split_test"] == "code" or threshold > config["gamma_max"]
            splits.append(SplitTest(int(b), round_index, int(cluster), tuple(members.tolist()),
                                    tuple(part.tolist()), cross, threshold, bool(split),
                                    int(next_id[b]) if split else -1))
            if split:
                new_labels[b, members[side]] = next_id[b]
                next_id[b] += 1
    return new_labels
