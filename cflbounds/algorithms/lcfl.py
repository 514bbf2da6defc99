"""LCFL, Algorithm 1 of Gu, Chen, Wen, Cai and Han (``seeds/lcfl.txt``), batched over trials.

1. Warm-up (lines 1-5): each client runs ``T`` local gradient steps from its initial
   model ``w_i^0`` and sends ``w_i^T`` to the server. ``init="independent"`` gives every
   client its own random ``w_i^0`` (Alg. 1's input ``w_i^0, i in [M]``),
   ``init="common"`` one model for all. ``warmup="fedavg"`` (the option the paper's
   Tables II-III suggest, where LCFL and FedAvg agree at iteration 5) first runs
   ``warmup_rounds`` FedAvg rounds from the common model, then the ``T`` local steps.
2. Distances (lines 6-15): the loss discrepancy of eq. (2) (``metric="loss"``), or the
   baselines' DiffNorm (eq. 1) and GradCos (gradients at the average warm-up model).
3. Clustering (line 16) with k-medoids, agglomerative clustering or DBSCAN on the
   precomputed matrix (:mod:`.clustering`).
4. FedOpt per cluster (lines 17-19): FedAvg inside each found cluster, starting from the
   average of its members' warm-up models (``cluster_init="warmup-mean"``, Sec. II-B:
   "the local model parameters ... can also serve as initialization"), from the warm-up
   model of its medoid (``"medoid"``: the member with the smallest summed distance to the
   others; averaging models trained from independent initialisations of a network mixes
   unrelated hidden units), or from the common initial model (``"common"``).

With one cluster, ``cluster_init="common"`` and the same schedule, step 4 is FedAvg bit
for bit (same initial model and minibatches).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
import torch

from .._threads import follow_load
from .._validation import Interval, NoneOK, Options, require, validate_params
from ..synthetic.client_data import ClientData
from .baselines import FEDAVG_STREAM, common_initial_model
from .client_distances import METRICS, diffnorm_distance, gradcos_distance, loss_discrepancy
from .clustering import CLUSTERING_METHODS, LINKAGES, cluster_distance_matrices, cluster_medoids
from .federated import (
    TRAINING_CONSTRAINTS,
    FederatedTrace,
    clustered_fedavg,
    gather_groups,
    group_average,
    local_steps,
    run_seeds,
)
from .small_models import initial_parameters

__all__ = ["lcfl", "warm_up", "client_distance_matrix", "LcflTrace", "WARMUPS", "INITS", "CLUSTER_INITS"]

WARMUPS = ("local", "fedavg")
INITS = ("independent", "common")
CLUSTER_INITS = ("warmup-mean", "medoid", "common")
_STREAM_CLIENT_INIT, _STREAM_WARMUP, _STREAM_WARMUP_FEDAVG = 21, 22, 23


@dataclass(frozen=True)
class LcflTrace:
    """One batch of LCFL runs: the warm-up models ``(B, m, P)``, the distance matrix
    clustered on ``(B, m, m)``, the clusters ``(B, m)`` (numbered from 0) and their count
    ``(B,)``, the per-cluster FedAvg stage, and the FedAvg warm-up (``warmup="fedavg"``)."""

    warmup_models: torch.Tensor
    distances: np.ndarray
    clusters: np.ndarray
    cluster_count: np.ndarray
    federated: FederatedTrace
    warmup: FederatedTrace | None = None
    config: dict = field(default_factory=dict)


@validate_params({**{k: TRAINING_CONSTRAINTS[k] for k in ("model", "train", "test", "seeds", "step_size", "batch_size")},
                  "warmup": [Options(WARMUPS)], "steps": [Interval(Integral, 1, None, closed="left")],
                  "rounds": [Interval(Integral, 1, None, closed="left")], "init": [Options(INITS)],
                  "local_steps_count": TRAINING_CONSTRAINTS["local_steps"]})
def warm_up(model, train: ClientData, test: ClientData, *, seeds, warmup: str = "local", steps: int = 10,
            rounds: int = 5, init: str = "independent", step_size: float = 0.1, local_steps_count: int = 10,
            batch_size: int | None = None):
    """Alg. 1 lines 1-5: the clients' models ``w_i^T`` ``(B, m, P)`` after the warm-up, and
    the FedAvg warm-up's trace (None for ``warmup="local"``)."""
    B, m = train.batch_size, train.clients
    common = common_initial_model(model, seeds, train)
    warmup_trace = None
    if warmup == "fedavg":
        groups = torch.zeros((B, m), dtype=torch.long, device=train.device)
        warmup_trace = clustered_fedavg(model, train, test, groups, common, rounds=rounds,
                                        local_steps_count=local_steps_count, step_size=step_size,
                                        batch_size=batch_size, seeds=run_seeds(seeds, _STREAM_WARMUP_FEDAVG))
        start = warmup_trace.models.expand(B, m, model.size)
    elif init == "independent":
        start = initial_parameters(model, seeds, m, _STREAM_CLIENT_INIT, dtype=train.dtype, device=train.device)
    else:
        start = common.expand(B, m, model.size)
    trained = local_steps(model, start[:, :, None], train, step_size=step_size, steps=steps, batch_size=batch_size,
                          seeds=run_seeds(seeds, _STREAM_WARMUP))
    return trained[:, :, 0], warmup_trace


def client_distance_matrix(model, models: torch.Tensor, train: ClientData, metric: str) -> torch.Tensor:
    """The ``(B, m, m)`` matrix LCFL (``"loss"``) or a baseline clusters on."""
    if metric == "loss":
        return loss_discrepancy(model, models, train)
    if metric == "diffnorm":
        return diffnorm_distance(models)
    everyone = torch.zeros(models.shape[:2], dtype=torch.long, device=models.device)
    mean_model, _ = group_average(models, everyone, 1, train.counts)
    return gradcos_distance(model, mean_model[:, 0], train)


@validate_params({
    **TRAINING_CONSTRAINTS,
    "k": [NoneOK, Interval(Integral, 1, None, closed="left")],
    "metric": [Options(METRICS)],
    "clustering": [Options(CLUSTERING_METHODS)],
    "warmup": [Options(WARMUPS)],
    "warmup_steps": [Interval(Integral, 1, None, closed="left")],
    "warmup_rounds": [Interval(Integral, 1, None, closed="left")],
    "init": [Options(INITS)],
    "cluster_init": [Options(CLUSTER_INITS)],
    "linkage": [Options(LINKAGES)],
    "dbscan_percentile": [Interval(Real, 0, 100, closed="right")],
    "dbscan_min_samples": [Interval(Integral, 1, None, closed="left")],
})
@follow_load()
def lcfl(model, train: ClientData, test: ClientData, *, seeds, k: int | None = 4, metric: str = "loss",
         clustering: str = "kmedoids", warmup: str = "local", warmup_steps: int = 10, warmup_rounds: int = 5,
         init: str = "independent", cluster_init: str = "warmup-mean", rounds: int = 20, local_steps: int = 10,
         step_size: float = 0.1, decay: float = 1.0, batch_size: int | None = None, linkage: str = "average",
         dbscan_percentile: float = 10.0, dbscan_min_samples: int = 2, eval_every: int = 1) -> LcflTrace:
    """Run LCFL (Alg. 1; module docstring) on every trial of the batch.

    Parameters
    ----------
    model, train, test, seeds : the model, the clients' data, one seed per trial.
    k : clusters for k-medoids and agglomerative clustering (unused by DBSCAN).
    metric : ``"loss"`` (eq. 2, LCFL), ``"diffnorm"`` (eq. 1) or ``"gradcos"``.
    clustering, linkage, dbscan_percentile, dbscan_min_samples : C(.) (:mod:`.clustering`).
    warmup, warmup_steps (T), warmup_rounds, init : the warm-up (module docstring).
    cluster_init : where each cluster's FedAvg starts.
    rounds, local_steps, step_size, decay, batch_size, eval_every : the per-cluster FedAvg
        (and the warm-up's steps use ``step_size`` and ``batch_size`` too).
    """
    require(clustering == "dbscan" or k is not None, f"Clustering with {clustering} needs k (got k=None).")
    require(k is None or k <= train.clients, f"LCFL needs k <= m: got k={k} for m={train.clients} clients.")
    require(warmup == "local" or init == "common",
            "A FedAvg warm-up starts every client from the common model: use init='common'.")
    warmed, warmup_trace = warm_up(model, train, test, seeds=seeds, warmup=warmup, steps=warmup_steps,
                                   rounds=warmup_rounds, init=init, step_size=step_size,
                                   local_steps_count=local_steps, batch_size=batch_size)
    distances = client_distance_matrix(model, warmed, train, metric).double().cpu().numpy()
    clusters = cluster_distance_matrices(distances, clustering, k=k, linkage=linkage,
                                         dbscan_percentile=dbscan_percentile, dbscan_min_samples=dbscan_min_samples)
    count = int(clusters.max()) + 1
    groups = torch.as_tensor(clusters, device=train.device)
    if cluster_init == "warmup-mean":
        start, _ = group_average(warmed, groups, count, train.counts)
    elif cluster_init == "medoid":
        start = gather_groups(warmed[:, :, None], torch.as_tensor(cluster_medoids(distances, clusters),
                                                                  device=train.device)).squeeze(2)
    else:
        start = common_initial_model(model, seeds, train).expand(train.batch_size, count, model.size)
    federated = clustered_fedavg(model, train, test, groups, start, rounds=rounds, local_steps_count=local_steps,
                                 step_size=step_size, decay=decay, batch_size=batch_size,
                                 seeds=run_seeds(seeds, FEDAVG_STREAM), eval_every=eval_every)
    config = {"method": "lcfl", "metric": metric, "clustering": clustering, "k": k, "warmup": warmup,
              "warmup_steps": warmup_steps, "init": init, "cluster_init": cluster_init, "rounds": rounds,
              "local_steps": local_steps, "step_size": step_size, "decay": decay, "batch_size": batch_size}
    return LcflTrace(warmed, distances, clusters, clusters.max(axis=1) + 1, federated, warmup_trace, config)
