"""A batch of problems drawn at once: each problem from its own stream, on its own thread.

Every generator draws a batch's ``B`` problems one per stream (:func:`~.seeding.stream`), in
float64 NumPy, and casts them into the batch's tensors (Gaussian features a few machines at a
time, :func:`gaussian_features`). Problems share nothing, so they are
drawn at once, one per thread (:func:`cflbounds._threads.on_one_thread_each`: NumPy's fills
and torch's copies release the GIL): every number is the one a serial loop draws, whatever
the thread count; only the wall time changes. One problem's stream cannot be split, so a batch
of one problem is drawn on one thread (``run_fig2_cell`` draws several batches at once for that).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from .._threads import on_one_thread_each

__all__ = ["draw_batch", "gaussian_features", "chunk_machines", "DRAW_FLOPS", "CHUNK_BYTES"]

# a float64 standard normal costs NumPy about as long as 20 flops of a GEMM on this project's CPU
# (10^7 normals in 0.12-0.14 s, one thread): the work estimate that decides whether threads pay
DRAW_FLOPS = 20
# the float64 buffer :func:`gaussian_features` draws through: small enough to stay in cache and
# to be reused by the allocator, never handed back to the kernel and faulted in again
CHUNK_BYTES = 8 << 20


def draw_batch(rngs: Sequence[np.random.Generator], draw: Callable[[np.random.Generator, int, list], None],
               shapes: Sequence[tuple[int, ...]], dtype: torch.dtype, device: torch.device) -> list[torch.Tensor]:
    """Tensors of ``(B, *shape)`` for each of ``shapes`` and ``dtype`` on ``device``, whose
    ``b``-th rows ``draw(rngs[b], b, rows)`` fills (``rows``: those rows, in ``shapes``' order).

    The problems are drawn at once on the caller's threads; ``draw`` must use only its own
    generator and rows (and read-only shared arguments)."""
    tensors = [torch.empty((len(rngs), *shape), dtype=dtype, device=device) for shape in shapes]

    def one_problem(b):
        draw(rngs[b], b, [tensor[b] for tensor in tensors])

    values = sum(int(np.prod(shape)) for shape in shapes)
    on_one_thread_each(one_problem, range(len(rngs)), flops=DRAW_FLOPS * values * len(rngs))
    return tensors


def gaussian_features(rng: np.random.Generator, out: torch.Tensor, weights: np.ndarray) -> np.ndarray:
    """Fill ``out`` ``(m, n, d)`` with ``rng.standard_normal((m, n, d))`` cast to its dtype, and
    return the float64 ``(m, n)`` products ``<x_il, weights_i>`` of the float64 draws
    (``weights`` ``(m, d)``).

    Bit for bit one call's draw and ``np.einsum("mnd,md->mn", x, weights)`` (a generator fills
    consecutive calls from one stream, and each product is one machine's own), but drawn a few
    machines at a time through one float64 buffer of at most :data:`CHUNK_BYTES`: never the
    whole float64 array (80 MB per paper-size problem), which landed on fresh memory at every
    problem (docs/performance.md, "The draws")."""
    m, n, d = out.shape
    products = np.empty((m, n))
    buffer = np.empty((chunk_machines(m, n, d), n, d))
    for start in range(0, m, buffer.shape[0]):
        machines = slice(start, min(start + buffer.shape[0], m))
        chunk = buffer[:machines.stop - start]
        rng.standard_normal(out=chunk)
        out[machines] = torch.from_numpy(chunk)
        products[machines] = np.einsum("mnd,md->mn", chunk, weights[machines])
    return products


def chunk_machines(m: int, n: int, d: int) -> int:
    """Machines per chunk of :func:`gaussian_features`: as many as :data:`CHUNK_BYTES` of float64
    hold, at least one, at most ``m``."""
    return max(1, min(m, CHUNK_BYTES // (8 * n * d)))
