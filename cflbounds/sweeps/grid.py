"""Sweep grids: named axes, the cells of their product, and per-cell seeds."""
from __future__ import annotations

import hashlib
import itertools
import json

from ..synthetic.seeding import spawn_seeds

__all__ = ["cell_key", "expand", "cell_seed", "trial_seeds"]


def cell_key(cell: dict) -> str:
    """A canonical text key for a cell (sorted JSON), stable across runs and machines."""
    return json.dumps(cell, sort_keys=True, separators=(",", ":"))


def expand(fixed: dict, axes: dict) -> list[dict]:
    """Every combination of the ``axes`` values, each merged into ``fixed``."""
    names = list(axes)
    return [{**fixed, **dict(zip(names, values))} for values in itertools.product(*(axes[n] for n in names))]


def cell_seed(sweep_seed: int, cell: dict) -> int:
    """The cell's seed: spawned from the sweep seed under a hash of the cell's key, so a
    cell's results do not depend on which other cells the grid holds or their order."""
    digest = int.from_bytes(hashlib.sha256(cell_key(cell).encode()).digest()[:4], "little")
    return spawn_seeds(sweep_seed, 1, digest)[0]


def trial_seeds(sweep_seed: int, cell: dict, trials: int) -> tuple[int, ...]:
    """Per-trial (data seed) seeds of a cell; trial ``i`` does not depend on ``trials``."""
    return spawn_seeds(cell_seed(sweep_seed, cell), trials)
