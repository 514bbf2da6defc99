"""Runs laid out as (problem row, slot) tensors, compacted as runs leave the batch.

All runs of all problems advance as one tensor computation: run state is stored as
``(B', C, ...)`` tensors where row ``b'`` is an active problem and slot ``c`` one of its
active runs. When runs leave (diverged, or retired by a monitor) the survivors of each
problem are packed to the front, ``C`` shrinks to the largest survivor count, and
problems with no run left are dropped with their data, so no work is spent on them.
Empty slots of a shorter row carry zero models and a zero step size.
"""
from __future__ import annotations

import numpy as np
import torch


class SlotBatch:
    def __init__(self, data: dict[str, torch.Tensor], state: dict[str, torch.Tensor], seeds: np.ndarray):
        """``data``: per-problem tensors ``(B, ...)``; ``state``: per-run tensors ``(B, R, ...)``;
        ``seeds``: per-run seeds ``(B, R)``."""
        B, R = seeds.shape
        self.problem = np.arange(B)
        self.run = np.tile(np.arange(R), (B, 1))
        self.data, self.state, self.seeds = dict(data), dict(state), np.asarray(seeds, dtype=np.uint64)

    @property
    def empty(self) -> bool:
        return self.problem.size == 0

    @property
    def occupied(self) -> np.ndarray:
        """``(B', C)`` bool: the slot holds a run (not padding)."""
        return self.run >= 0

    def retire(self, leaving: np.ndarray) -> None:
        """Remove the runs in the ``(B', C)`` mask and compact the layout."""
        keep = self.occupied & ~leaving
        counts = keep.sum(axis=1)
        rows = np.flatnonzero(counts > 0)
        width = int(counts.max()) if rows.size else 0
        order = np.argsort(~keep[rows], axis=1, kind="stable")[:, :width]  # survivors first
        filled = np.take_along_axis(keep[rows], order, axis=1)

        device = next(iter(self.state.values())).device
        rows_t = torch.as_tensor(rows, device=device)
        order_t = torch.as_tensor(order, device=device)
        filled_t = torch.as_tensor(filled, device=device)
        for name, tensor in self.state.items():
            picked = tensor.index_select(0, rows_t)
            index = order_t.reshape(order.shape + (1,) * (tensor.dim() - 2)).expand(
                order.shape + tensor.shape[2:]
            )
            picked = picked.gather(1, index)
            mask = filled_t.reshape(filled.shape + (1,) * (tensor.dim() - 2))
            self.state[name] = torch.where(mask, picked, torch.zeros((), dtype=picked.dtype, device=device))
        if rows.size < self.problem.size:
            self.data = {name: tensor.index_select(0, rows_t) for name, tensor in self.data.items()}
        self.problem = self.problem[rows]
        self.run = np.where(filled, np.take_along_axis(self.run[rows], order, axis=1), -1)
        self.seeds = np.take_along_axis(self.seeds[rows], order, axis=1)
