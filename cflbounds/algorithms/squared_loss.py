"""Batched kernels of clustered FL on the squared loss, shared by IFCA-style methods.

Shapes: ``B`` problems, ``m`` machines, ``n`` points, ``d`` features, ``C`` run slots per
problem, ``k`` models per run. A machine's empirical loss is the paper's
``F_i(theta; Z) = (1/|Z|) sum_{z in Z} (y - <x, theta>)^2`` (Sec. 3 with Sec. 5.1's f);
``LOSS_CONVENTIONS`` also offers the plain sum of squares and the 1/2-scaled mean. The
convention scales the gradient (hence the effective step size), never the argmin.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

# gradient of F_i with respect to theta, as a multiple of X^T (X theta - y)
LOSS_CONVENTIONS = {
    "mean": lambda n: 2.0 / n,  # (1/n) sum (y - <x,theta>)^2: the paper's F_i, the code's MSELoss
    "sum": lambda n: 2.0,  # sum (y - <x,theta>)^2
    "half-mean": lambda n: 1.0 / n,  # (1/(2n)) sum (y - <x,theta>)^2
}


def residuals(features: torch.Tensor, responses: torch.Tensor, models: torch.Tensor) -> torch.Tensor:
    """``r[b, i, l, c, j] = <x_il, theta_cj> - y_il``: one GEMM per problem over all runs.

    features ``(B, m, n, d)``, responses ``(B, m, n)``, models ``(B, C, k, d)`` ->
    ``(B, m, n, C, k)``.
    """
    B, m, n, d = features.shape
    C, k = models.shape[1:3]
    predictions = torch.bmm(features.reshape(B, m * n, d), models.reshape(B, C * k, d).transpose(1, 2))
    return predictions.view(B, m, n, C, k) - responses[..., None, None]


def estimate_clusters(residual: torch.Tensor, participating: torch.Tensor | None = None) -> torch.Tensor:
    """Alg. 1 line 5: ``argmin_j F_i(theta_j)`` per machine and run, ``(B, m, C)``.

    Ties go to the lowest index (``torch.argmin`` returns the first minimum). Machines
    outside M_t get ``-1``.
    """
    assignment = residual.square().sum(dim=2).argmin(dim=-1)
    if participating is not None:
        assignment = torch.where(participating, assignment, -1)
    return assignment


def machine_gradients(features: torch.Tensor, residual: torch.Tensor, scale: float) -> torch.Tensor:
    """``scale * X_i^T r_i`` per machine and run: ``(B, m, n, d)``, ``(B, m, n, C)`` -> ``(B, m, C, d)``."""
    return torch.matmul(features.transpose(-1, -2), residual).transpose(-1, -2) * scale


def one_hot(assignment: torch.Tensor, k: int, dtype: torch.dtype) -> torch.Tensor:
    """``s_{i,j}`` of Alg. 1 line 6 as ``(B, m, C, k)``; non-participants are all-zero."""
    return F.one_hot(assignment + 1, k + 1)[..., 1:].to(dtype)


def cluster_sums(values: torch.Tensor, membership: torch.Tensor) -> torch.Tensor:
    """``sum_i s_{i,j} values_i``: ``(B, m, C, d)``, one-hot ``(B, m, C, k)`` -> ``(B, C, k, d)``."""
    return torch.einsum("bmck,bmcd->bckd", membership, values)


def cluster_gradient_sums(features: torch.Tensor, residual: torch.Tensor, chosen: torch.Tensor,
                          scale: float) -> torch.Tensor:
    """``sum_{i in S_j} grad F_i(theta_j)`` for every run and model (Alg. 1 line 13's sum).

    Zeroing every residual but the machine's chosen model's turns the sum into one GEMM,
    ``X^T (r * s)``, over all machines: ``(B, m, n, d)``, residuals ``(B, m, n, C, k)``,
    one-hot ``(B, m, C, k)`` -> ``(B, C, k, d)``.
    """
    B, m, n, d = features.shape
    C, k = residual.shape[3:]
    masked = (residual * chosen[:, :, None]).reshape(B, m * n, C * k)
    sums = torch.bmm(features.reshape(B, m * n, d).transpose(1, 2), masked)  # (B, d, C k)
    return sums.transpose(1, 2).reshape(B, C, k, d) * scale


def local_descent(features, responses, start, step, steps: int, scale: float) -> torch.Tensor:
    """LocalUpdate of Alg. 1 (lines 18-21): ``steps`` full-batch gradient steps per machine.

    ``start`` ``(B, m, C, d)`` (each machine from its chosen model), ``step`` ``(B, C)``.
    """
    models = start
    for _ in range(steps):
        residual = torch.matmul(features, models.transpose(-1, -2)) - responses[..., None]  # (B, m, n, C)
        models = models - step[:, None, :, None] * machine_gradients(features, residual, scale)
    return models
