"""Batched kernels of clustered FL on the squared loss (mixed linear regression).

Shapes: ``B`` problems, ``m`` machines, ``n`` points, ``d`` features, ``C`` run slots per
problem, ``k`` models per run. A machine's empirical loss is the paper's
``F_i(theta; Z) = (1/|Z|) sum_{z in Z} (y - <x, theta>)^2`` (Sec. 3 with Sec. 5.1's f);
``LOSS_CONVENTIONS`` also offers the plain sum of squares and the 1/2-scaled mean. The
convention scales the gradient (hence the effective step size), never the argmin.
:class:`SquaredLoss` puts these kernels behind the interface of
:mod:`cflbounds.algorithms.kernels`.
"""
from __future__ import annotations

import functools

import torch

from .kernels import StoredData
from .rounds import cluster_sums

# gradient of F_i with respect to theta, as a multiple of X^T (X theta - y)
LOSS_CONVENTIONS = {
    "mean": lambda n: 2.0 / n,  # (1/n) sum (y - <x,theta>)^2: the paper's F_i, the code's MSELoss
    "sum": lambda n: 2.0,  # sum (y - <x,theta>)^2
    "half-mean": lambda n: 1.0 / n,  # (1/(2n)) sum (y - <x,theta>)^2
}


# oneDNN's GEMM of the residuals: a CPU float32 problem, alone in its batch, of at least this many
# feature values (onednn_residuals). The GEMM's few columns (k times the runs left) are where MKL
# falls to half its rate: (10000 x 1000) @ (1000 x 20), Fig. 2's first wave at paper size, took
# 4.7 ms on oneDNN against 7.6 ms on MKL at 2 threads, and 9.5 against 16.2 ms at 1 (torch 2.13,
# 2026-11-28). IFCA.F2 at verify's default scale (d = 100, 40 problems per batch) stays on MKL
ONEDNN_VALUES = 10**6


def onednn_residuals(batch: int, m: int, n: int, d: int, dtype: torch.dtype, device: torch.device) -> bool:
    """Whether :func:`residuals` of ``batch`` problems of ``m x n x d`` features runs on oneDNN:
    one problem, float32, on a CPU with oneDNN, at least ``ONEDNN_VALUES`` values. Never the
    number of runs: a run's numbers must not depend on which other runs share its batch."""
    return (batch == 1 and m * n * d >= ONEDNN_VALUES and dtype == torch.float32
            and torch.device(device).type == "cpu" and _onednn_works())


def _onednn_linear(features: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``features @ weight.T`` by oneDNN's linear primitive (torch's private
    ``mkldnn::_linear_pointwise``), from and into ordinary strided tensors: no oneDNN copy of the
    features, no conversion of the result. Bit for bit what ``mkldnn_linear`` gives on a oneDNN
    copy of the features (torch 2.13, 2 to 80 columns, one thread and two), without that copy's
    40 MB per paper-size run and without its result's conversion, whose freed buffers the
    allocator returned and faulted in again at every iteration (423 page faults, 0.7 ms, per
    GEMM of Fig. 2's first wave; docs/performance.md)."""
    return torch.ops.mkldnn._linear_pointwise(features, weight, None, "none", [], "")


@functools.cache
def _onednn_works() -> bool:
    """Whether this torch has oneDNN and its private linear primitive (:func:`_onednn_linear`)
    computes a small product right: a torch that renamed or changed it keeps MKL instead of
    failing or going wrong."""
    if not torch.backends.mkldnn.is_available():
        return False
    features, models = torch.arange(12.0).reshape(4, 3), torch.arange(6.0).reshape(2, 3) - 2
    try:  # small integers: the product is exact either way
        product = _onednn_linear(features, models)
        return product.layout == torch.strided and torch.equal(product, features @ models.T)
    except (AttributeError, RuntimeError, TypeError):  # NotImplementedError is a RuntimeError
        return False


def residuals(features: torch.Tensor, responses: torch.Tensor, models: torch.Tensor,
              onednn: bool | None = None) -> torch.Tensor:
    """``r[b, i, l, c, j] = <x_il, theta_cj> - y_il``: one GEMM per problem over all runs.

    features ``(B, m, n, d)``, responses ``(B, m, n)``, models ``(B, C, k, d)`` ->
    ``(B, m, n, C, k)``. The GEMM runs on oneDNN where :func:`onednn_residuals` says so, on MKL
    elsewhere; ``onednn`` forces one or the other (for tests and benchmarks).
    """
    B, m, n, d = features.shape
    C, k = models.shape[1:3]
    if onednn is None:
        onednn = onednn_residuals(B, m, n, d, features.dtype, features.device)
    if onednn:
        predictions = _onednn_linear(features.reshape(m * n, d), models.reshape(C * k, d).contiguous())[None]
    else:
        predictions = torch.bmm(features.reshape(B, m * n, d), models.reshape(B, C * k, d).transpose(1, 2))
    return predictions.sub_(responses.reshape(B, m * n, 1)).view(B, m, n, C, k)  # in place: no second tensor


def machine_gradients(features: torch.Tensor, residual: torch.Tensor, scale: float) -> torch.Tensor:
    """``scale * X_i^T r_i`` per machine and run: ``(B, m, n, d)``, ``(B, m, n, C)`` -> ``(B, m, C, d)``,
    as one batched GEMM ``r_i^T X_i`` over the machines (the data untransposed: a GEMM of a few
    columns stays near the GEMM rate, where ``X^T r`` ran 10-20x slower, benchmarks/README.md)."""
    return torch.matmul(residual.transpose(-1, -2), features).mul_(scale)


def cluster_gradient_sums(features: torch.Tensor, residual: torch.Tensor, chosen: torch.Tensor,
                          scale: float) -> torch.Tensor:
    """``sum_{i in S_j} grad F_i(theta_j)`` for every run and model (Alg. 1 line 13's sum).

    Each machine's gradient at its chosen model only (:func:`machine_gradients` of the
    residual of that model, ``2 m n d C`` flops: a k-th of differentiating every model), then
    summed per cluster: ``(B, m, n, d)``, residuals ``(B, m, n, C, k)``, one-hot
    ``(B, m, C, k)`` -> ``(B, C, k, d)``.
    """
    return cluster_sums(machine_gradients(features, chosen_residuals(residual, chosen), scale), chosen)


def chosen_residuals(residual: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """Each machine's residual at its chosen model, ``sum_j s_{i,j} r_{i,j}``: ``(B, m, n, C, k)``,
    one-hot ``(B, m, C, k)`` -> ``(B, m, n, C)``.

    Accumulated over the ``k`` models into one ``+0``-filled tensor, bit for bit
    ``(residual * chosen[:, :, None]).sum(dim=-1)`` (every product but one is an exact zero,
    so the order of the sum cannot round, a non-finite residual of any model still makes NaN,
    and the sum's ``+0`` start still makes a zero ``+0``). A reduction over a last dimension of
    ``k`` elements runs far below memory speed: at IFCA.F2's default cells (k = 2, 2 threads)
    this takes about a third of its time, at ``k = 4`` about two thirds; on tiny tensors, where
    the k dispatches dominate, slightly more (``benchmarks/bench_loop_kernels.py``;
    docs/performance.md, "The IFCA loop's elementwise work")."""
    chosen = chosen[:, :, None]
    own = residual.new_zeros(residual.shape[:-1])
    for j in range(residual.shape[-1]):
        own.addcmul_(residual[..., j], chosen[..., j])
    return own


class SquaredLoss(StoredData):
    """Mixed linear regression's ``F_i`` under a loss convention (``LOSS_CONVENTIONS``)."""

    fields = ("features", "responses")

    def __init__(self, problem, loss: str = "mean"):
        super().__init__(problem)
        self.gradient_factor = LOSS_CONVENTIONS[loss]

    def evaluate(self, estimation, models):
        features, responses = estimation
        return residuals(features, responses, models)

    def losses(self, residual):
        """``n F_i(theta_j)`` (the sum of squares: same argmin as the mean)."""
        return residual.square().sum(dim=2)

    def cluster_gradient_sums(self, gradient, models, chosen, residual=None):
        features, responses = gradient
        if residual is None:
            residual = residuals(features, responses, models)
        return cluster_gradient_sums(features, residual, chosen, self.gradient_factor(features.shape[2]))

    def machine_gradients(self, gradient, local):
        features, responses = gradient
        residual = torch.matmul(features, local.transpose(-1, -2)) - responses[..., None]  # (B, m, n, C)
        return machine_gradients(features, residual, self.gradient_factor(features.shape[2]))


def iteration_flops(m: int, n: int, d: int, k: int, slots: int = 1) -> dict[str, float]:
    """Flops of one IFCA iteration (gradient averaging, no re-sampling) of one problem with
    ``slots`` runs, by kernel, counted from the kernels above:

    * ``residuals``: one GEMM ``(m n x d) @ (d x C k)`` = ``2 m n d C k``, minus the responses;
    * ``estimate_clusters``: square and sum over the n points, ``2 m n C k``;
    * ``cluster_gradient_sums``: each machine's chosen model's residual (mask and sum,
      ``2 m n C k``), one GEMM ``(C x n) @ (n x d)`` per machine = ``2 m n d C``, the per-cluster
      sums of the machines' gradients ``2 m C k d`` and the scale ``m C d``;
    * ``update``: the server step ``(gamma/m) * sums`` and the subtraction, ``2 C k d``.
    """
    C = slots
    terms = {
        "residuals": 2.0 * m * n * d * C * k + m * n * C * k,
        "estimate_clusters": 2.0 * m * n * C * k,
        "cluster_gradient_sums": 2.0 * m * n * d * C + 2.0 * m * n * C * k + 2.0 * m * C * k * d + m * C * d,
        "update": 2.0 * C * k * d,
    }
    terms["total"] = sum(terms.values())
    return terms
