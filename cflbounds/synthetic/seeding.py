"""Seeds: one integer per problem or run, derived from a parent seed by spawning.

A problem's (or run's) randomness depends only on its own integer seed, so results do
not change with how many problems are batched together, the executor, or the machine
count. Seeds are recorded with every result so that any row can be reproduced alone.
"""
from __future__ import annotations

from numbers import Integral

import numpy as np

from .._validation import Interval, SeedArray, require

__all__ = ["spawn_seeds", "problem_seeds", "stream", "BATCH_CONSTRAINTS"]

# every generator draws ``batch_size`` problems from one seed or from one seed per problem
BATCH_CONSTRAINTS = {
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "seed": [Interval(Integral, 0, None, closed="left"), SeedArray],
}


def spawn_seeds(parent: int, count: int, *path: int) -> tuple[int, ...]:
    """``count`` independent 63-bit seeds spawned from ``parent`` (and a key ``path``).

    Child ``i`` is the same whatever ``count`` is: ``spawn_seeds(s, 10)[:3] ==
    spawn_seeds(s, 3)``.
    """
    return tuple(
        int(np.random.SeedSequence(parent, spawn_key=(*path, i)).generate_state(1, np.uint64)[0] >> np.uint64(1))
        for i in range(count)
    )


def problem_seeds(seed, count: int) -> tuple[int, ...]:
    """Per-problem seeds: spawned from one int, or ``count`` explicit non-negative ints."""
    if np.ndim(seed) == 0:
        return spawn_seeds(int(seed), count)
    seeds = np.asarray(seed)
    require(
        seeds.shape == (count,) and np.all(seeds == np.floor(seeds)) and np.all(seeds >= 0),
        f"The 'seed' parameter must be one non-negative int or {count} of them (one per "
        f"problem); got {seeds.tolist()}.",
    )
    return tuple(int(s) for s in seeds)


def stream(seed: int, *key: int) -> np.random.Generator:
    """The random stream ``key`` of a seed (e.g. data, fresh draws, initialisations)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(key)))
