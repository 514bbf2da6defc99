"""The rotated-digits experiment shared by LCFL.ACC and IFCA.TAB1.

Rotated digits (0, 90, 180, 270 degrees: k = 4 clusters of equal size; the papers'
Rotated MNIST on scikit-learn's digits), ``m`` clients with 30 training images each,
one batch of seeds (the cluster-recovery runs use more of them than the accuracy runs). Every method uses full-batch gradient steps with the same budget and
schedule (``rounds`` rounds of ``local_steps`` steps, warm-ups included; step size 0.5
decaying by 0.99 per round, as LCFL Sec. V decays its learning rate; 60 rounds at default
scale, the paper's global iterations on Rotated MNIST, by which every method's accuracy
has levelled off) and is scored on each client's own test images (pooled accuracy):

* LCFL (loss metric, eq. 2), DiffNorm and GradCos: Alg. 1 with k-medoids (k = 4) and
  FedAvg per cluster (from its members' mean), after a warm-up read two ways
  (``WARMUPS``): ``"fedavg"``, the paper's experiments (Tables II-III: LCFL equals FedAvg
  at iteration 5 to the last digit, so its first 5 iterations are FedAvg; the authors'
  released configuration has 5 FedAvg warm-up rounds): 4 FedAvg rounds from the common
  model, the 5th round's local steps give the w_i^T clustered on, and the remaining
  ``rounds - 5`` rounds are per-cluster FedAvg; ``"independent"``, Alg. 1 as printed:
  T = 10 local steps from each client's own random model, and per-cluster FedAvg for the
  rounds left after those T steps. The verdicts use ``PRIMARY_WARMUP`` (the paper's
  experiments); the other is reported;
* IFCA with k = 4 models, model averaging (IFCA Sec. 6.2), random initial models;
* FedAvg (the "global model") and Local training ("local model").

Cluster recovery (ARI, NMI, matched accuracy) is measured for every metric x clustering
method x warm-up (the two above and T local steps from a common model) on the same
warm-up models.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from cflbounds.algorithms.baselines import fedavg, local_training
from cflbounds.algorithms.client_distances import METRICS
from cflbounds.algorithms.clustering import CLUSTERING_METHODS, cluster_distance_matrices
from cflbounds.algorithms.ifca_models import ifca_models
from cflbounds.algorithms.lcfl import client_distance_matrix, lcfl, warm_up
from cflbounds.algorithms.small_models import MLP, SoftmaxRegression
from cflbounds.claims import VerifyContext
from cflbounds.claims.recovery import recovery_scores
from cflbounds.synthetic.digits import CLASSES, PIXELS, make_digit_clients
from cflbounds.synthetic.seeding import spawn_seeds

__all__ = ["DIGITS", "SCHEDULE", "WARMUPS", "PRIMARY_WARMUP", "ACCURACY_METHODS", "LITERAL_LCFL", "digits_runs",
           "warmup_options", "make_model", "select", "K"]

K = 4
SCHEDULE = {"step_size": 0.5, "decay": 0.99, "warmup_steps": 10, "warmup_rounds": 5}
WARMUPS = ("fedavg", "independent", "common")  # the last for cluster recovery only
PRIMARY_WARMUP = "fedavg"
# "trials": seeds of the accuracy runs; "recovery_trials": seeds of the cluster-recovery runs (warm-ups only,
# cheap; ARI differences vary more between seeds than accuracy differences), the first "trials" of them shared
DIGITS = {
    "smoke": {"models": ("mlp",), "m": 16, "trials": 3, "recovery_trials": 3, "train_per_client": 30,
              "test_per_client": 20, "rounds": 10, "local_steps": 5},
    "default": {"models": ("mlp", "softmax"), "m": 40, "trials": 20, "recovery_trials": 40, "train_per_client": 30,
                "test_per_client": 10, "rounds": 60, "local_steps": 5},
    "paper": {"models": ("mlp", "softmax"), "m": 80, "trials": 40, "recovery_trials": 80, "train_per_client": 30,
              "test_per_client": 10, "rounds": 60, "local_steps": 10},
}
ACCURACY_METHODS = ("LCFL", "DiffNorm", "GradCos", "IFCA", "FedAvg", "Local")
LITERAL_LCFL = "LCFL (Alg 1 as printed)"  # LCFL after the "independent" warm-up
_METRIC_OF = {"LCFL": "loss", "DiffNorm": "diffnorm", "GradCos": "gradcos"}


def make_model(name: str):
    return MLP(PIXELS, CLASSES, hidden=32) if name == "mlp" else SoftmaxRegression(PIXELS, CLASSES)


def _problem(ctx, cfg, trials):
    """The first ``trials`` trials (a trial's data depend on its seed only)."""
    seeds = spawn_seeds(ctx.seed, trials, 70)
    return make_digit_clients(cfg["m"], K, train_per_client=cfg["train_per_client"],
                              test_per_client=cfg["test_per_client"], batch_size=trials, seed=list(seeds),
                              device=ctx.device)


def warmup_options(warmup: str, cfg: dict) -> dict:
    """The warm-up options of :func:`~cflbounds.algorithms.lcfl.warm_up` for one reading of
    ``WARMUPS`` and the per-cluster FedAvg rounds left in the budget (``"rounds"``)."""
    local_steps, warmup_steps = cfg["local_steps"], SCHEDULE["warmup_steps"]
    if warmup == "fedavg":
        return {"warmup": "fedavg", "init": "common", "rounds": SCHEDULE["warmup_rounds"] - 1, "steps": local_steps,
                "clustered_rounds": cfg["rounds"] - SCHEDULE["warmup_rounds"]}
    return {"warmup": "local", "init": warmup, "rounds": 1, "steps": warmup_steps,
            "clustered_rounds": cfg["rounds"] - -(-warmup_steps // local_steps)}


def _recovery_rows(model_name, model, problem, seeds, cfg):
    """Warm up once per reading of the warm-up, then every metric x clustering method."""
    rows, matrices = [], {}
    for warmup in WARMUPS:
        options = warmup_options(warmup, cfg)
        warmed, _ = warm_up(model, problem.train, problem.test, seeds=seeds, warmup=options["warmup"],
                            init=options["init"], rounds=options["rounds"], steps=options["steps"],
                            step_size=SCHEDULE["step_size"], local_steps_count=cfg["local_steps"])
        for metric in METRICS:
            distances = client_distance_matrix(model, warmed, problem.train, metric).double().cpu().numpy()
            if warmup == PRIMARY_WARMUP:
                matrices[metric] = distances[0]
            for method in CLUSTERING_METHODS:
                found = cluster_distance_matrices(distances, method, k=K)
                scores = recovery_scores(problem.membership, found)
                rows.append(pd.DataFrame({"model": model_name, "warmup": warmup, "metric": metric,
                                          "clustering": method, "trial": np.arange(len(seeds)),
                                          "clusters_found": found.max(axis=1) + 1, **scores}))
    return rows, matrices


def _lcfl_run(model, problem, seeds, cfg, schedule, metric, warmup):
    """LCFL's per-cluster FedAvg trace after one warm-up, and the rounds the warm-up used."""
    options = warmup_options(warmup, cfg)
    run = lcfl(model, problem.train, problem.test, seeds=seeds, k=K, metric=metric, warmup=options["warmup"],
               init=options["init"], warmup_rounds=options["rounds"], warmup_steps=options["steps"],
               **{**schedule, "rounds": options["clustered_rounds"]})
    return run.federated, cfg["rounds"] - options["clustered_rounds"]


def _accuracy_runs(model_name, model, problem, seeds, cfg):
    schedule = {"rounds": cfg["rounds"], "local_steps": cfg["local_steps"], "step_size": SCHEDULE["step_size"],
                "decay": SCHEDULE["decay"], "eval_every": max(1, cfg["rounds"] // 10)}
    lcfl_runs = {method: _lcfl_run(model, problem, seeds, cfg, schedule, metric, PRIMARY_WARMUP)
                 for method, metric in _METRIC_OF.items()}
    lcfl_runs[LITERAL_LCFL] = _lcfl_run(model, problem, seeds, cfg, schedule, "loss", "independent")
    traces = {method: trace for method, (trace, _) in lcfl_runs.items()}
    offset = {method: rounds for method, (_, rounds) in lcfl_runs.items()}  # rounds counted from the budget's start
    traces["IFCA"] = ifca_models(model, problem.train, problem.test, seeds=seeds, k=K, **schedule)
    traces["FedAvg"] = fedavg(model, problem.train, problem.test, seeds=seeds, **schedule)
    traces["Local"] = local_training(model, problem.train, problem.test, seeds=seeds, **schedule)
    rows = [pd.DataFrame({"model": model_name, "method": method, "trial": np.arange(len(seeds)),
                          "round": trace.rounds[-1] + offset.get(method, 0), "accuracy": trace.final_accuracy})
            for method, trace in traces.items()]
    ifca = traces["IFCA"]
    rows.append(pd.DataFrame({"model": model_name, "method": "IFCA (test-argmin)", "trial": np.arange(len(seeds)),
                              "round": ifca.rounds[-1], "accuracy": ifca.accuracy_test_argmin[:, -1]}))
    recovery = pd.DataFrame({"model": model_name, "warmup": "ifca", "metric": "ifca", "clustering": "ifca",
                             "trial": np.arange(len(seeds)), "clusters_found": [len(np.unique(g)) for g in ifca.groups],
                             **recovery_scores(problem.membership, ifca.groups)})
    curves = {method: ((trace.rounds + offset.get(method, 0)).tolist(), trace.accuracy.mean(axis=0).tolist())
              for method, trace in traces.items()}
    return rows, recovery, curves


def digits_runs(ctx: VerifyContext) -> dict:
    """``{"accuracy": DataFrame, "recovery": DataFrame, "matrices": {model: {metric: (m, m)}},
    "curves": {model: {method: (rounds, mean accuracy)}}, "membership": (m,), "config": dict}``,
    computed once per context."""
    def compute():
        cfg = DIGITS[ctx.scale]
        problem, clustering_problem = _problem(ctx, cfg, cfg["trials"]), _problem(ctx, cfg, cfg["recovery_trials"])
        seeds = np.array(problem.seeds)
        accuracy, recovery, matrices, curves = [], [], {}, {}
        for model_name in cfg["models"]:
            model = make_model(model_name)
            rows, matrices[model_name] = _recovery_rows(model_name, model, clustering_problem,
                                                        np.array(clustering_problem.seeds), cfg)
            accuracy_rows, ifca_recovery, curves[model_name] = _accuracy_runs(model_name, model, problem, seeds, cfg)
            recovery += rows + [ifca_recovery]
            accuracy += accuracy_rows
        return {"accuracy": pd.concat(accuracy, ignore_index=True), "recovery": pd.concat(recovery, ignore_index=True),
                "matrices": matrices, "curves": curves, "membership": problem.membership[0], "config": cfg,
                "seeds": seeds}
    return ctx.shared(("lcfl-digits", ctx.scale, ctx.seed), compute)


def select(table: pd.DataFrame, **where) -> pd.DataFrame:
    """The rows matching ``where`` (column=value), ordered by trial."""
    rows = table
    for column, value in where.items():
        rows = rows[rows[column] == value]
    return rows.sort_values("trial")
