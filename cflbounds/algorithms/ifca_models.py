"""IFCA (Ghosh et al. 2020, Alg. 1) for any small model, batched over trials.

Each round every client picks the model of lowest loss on its training data (line 5,
ties to the lowest index), then

* ``aggregation="model"`` (option II, the Rotated MNIST experiments of Sec. 6.2): each
  client runs ``local_steps`` steps from its chosen model and each model becomes the
  sample-count-weighted average of its clients' results (a model nobody chose is kept);
* ``aggregation="gradient"`` (option I): ``theta_j <- theta_j - (gamma/m) sum_{i in S_j}
  grad L_i(theta_j)``, ``/m`` the number of clients as in Alg. 1.

The ``k`` models start from independent random draws per trial (Sec. 6.2 uses random
initialisation). Test accuracy is scored two ways: each client with the model it chose on
its training data (``accuracy``), and, as the paper's Sec. 6.2 protocol does, with the
model of lowest loss on the client's own test data (``accuracy_test_argmin``).

For the squared-loss linear model and its theory, see :mod:`cflbounds.algorithms.ifca`.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

import numpy as np
import torch

from .._threads import follow_load
from .._validation import Interval, Options, require, validate_params
from ..synthetic.client_data import ClientData
from .federated import (
    TRAINING_CONSTRAINTS,
    FederatedTrace,
    client_accuracy,
    client_gradients,
    client_losses,
    evaluation_rounds,
    federated_round,
    gather_groups,
    group_sums,
    run_seeds,
)
from .small_models import initial_parameters

__all__ = ["ifca_models", "IfcaModelsTrace", "choose_models"]

_STREAM_IFCA_INIT, _STREAM_IFCA_RUN = 31, 32


@dataclass(frozen=True)
class IfcaModelsTrace(FederatedTrace):
    """A :class:`FederatedTrace` with the paper's test protocol's accuracy ``(B, E)`` too."""

    accuracy_test_argmin: np.ndarray | None = None


def choose_models(model, models: torch.Tensor, data: ClientData) -> torch.Tensor:
    """Alg. 1 line 5: each client's model of lowest loss on ``data``, ``(B, m)``."""
    return client_losses(model, models[:, None], data).argmin(dim=-1)


def _scores(model, models, train, test):
    chosen = choose_models(model, models, train)
    accuracy = client_accuracy(model, models[:, None], test)  # (B, m, k)
    by_training = accuracy.gather(-1, chosen[..., None])[..., 0]
    by_test = accuracy.gather(-1, choose_models(model, models, test)[..., None])[..., 0]
    own_loss = client_losses(model, gather_groups(models, chosen)[:, :, None], train)[..., 0]
    pooled = lambda values, data: ((values * data.counts).sum(-1) / data.counts.sum(-1)).cpu().numpy()
    return pooled(by_training, test), pooled(by_test, test), pooled(own_loss, train), by_training.cpu().numpy()


@validate_params({**TRAINING_CONSTRAINTS, "k": [Interval(Integral, 1, None, closed="left")],
                  "aggregation": [Options(("model", "gradient"))]})
@follow_load()
def ifca_models(model, train: ClientData, test: ClientData, *, seeds, k: int = 4, rounds: int = 20,
                local_steps: int = 10, step_size: float = 0.1, decay: float = 1.0, batch_size: int | None = None,
                aggregation: str = "model", eval_every: int = 1) -> IfcaModelsTrace:
    """Run IFCA with ``k`` models of ``model`` for ``rounds`` rounds on every trial
    (module docstring); step size ``step_size * decay^round``."""
    require(k <= train.clients, f"IFCA needs k <= m: got k={k} models for m={train.clients} clients.")
    B, m = train.batch_size, train.clients
    models = initial_parameters(model, seeds, k, _STREAM_IFCA_INIT, dtype=train.dtype, device=train.device)
    minibatch_seeds = run_seeds(seeds, _STREAM_IFCA_RUN)
    evaluated = evaluation_rounds(rounds, eval_every)
    accuracy, by_test, loss = (np.zeros((B, evaluated.size)) for _ in range(3))
    assignments = np.zeros((B, rounds, m), dtype=np.int64)
    column = 0
    for t in range(rounds + 1):
        if t == evaluated[column]:
            accuracy[:, column], by_test[:, column], loss[:, column], per_client = _scores(model, models, train, test)
            column += 1
        if t == rounds:
            break
        chosen = choose_models(model, models, train)
        assignments[:, t] = chosen.cpu().numpy()
        gamma = step_size * decay**t
        if aggregation == "model":
            models = federated_round(model, models, chosen, train, step_size=gamma, local_steps_count=local_steps,
                                     batch_size=batch_size, seeds=minibatch_seeds, counter=t * local_steps)
        else:
            gradients, _ = client_gradients(model, gather_groups(models, chosen)[:, :, None], train)
            sums, _ = group_sums(gradients[:, :, 0], chosen, k)
            models = models - (gamma / m) * sums
    final_choice = choose_models(model, models, train).cpu().numpy()
    return IfcaModelsTrace(accuracy, loss, evaluated, models, final_choice, per_client, assignments, by_test)
