"""A batch of problems drawn at once: each problem from its own stream, on its own thread.

Every generator draws a batch's ``B`` problems one per stream (:func:`~.seeding.stream`), in
float64 NumPy, and casts them into the batch's tensors. Problems share nothing, so they are
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

__all__ = ["draw_batch", "DRAW_FLOPS"]

# a float64 standard normal costs NumPy about as long as 20 flops of a GEMM on this project's CPU
# (10^7 normals in 0.12-0.14 s, one thread): the work estimate that decides whether threads pay
DRAW_FLOPS = 20


def draw_batch(rngs: Sequence[np.random.Generator], draw: Callable[[np.random.Generator, int], Sequence],
               shapes: Sequence[tuple[int, ...]], dtype: torch.dtype, device: torch.device) -> list[torch.Tensor]:
    """Tensors of ``(B, *shape)`` for each of ``shapes``, whose ``b``-th rows are the arrays
    ``draw(rngs[b], b)`` returns (in ``shapes``' order), cast to ``dtype`` on ``device``.

    The problems are drawn at once on the caller's threads; ``draw`` must use only its own
    generator (and read-only shared arguments)."""
    tensors = [torch.empty((len(rngs), *shape), dtype=dtype, device=device) for shape in shapes]

    def one_problem(b):
        for tensor, array in zip(tensors, draw(rngs[b], b)):
            tensor[b] = torch.as_tensor(array)

    values = sum(int(np.prod(shape)) for shape in shapes)
    on_one_thread_each(one_problem, range(len(rngs)), flops=DRAW_FLOPS * values * len(rngs))
    return tensors
