"""Counter-based random numbers for the hot path.

A uniform number is a hash of (run seed, iteration, index), so every run draws the same
numbers however many runs share its batch, without a generator object per run. The
hash is SplitMix64 (Steele, Lea & Flood 2014) on NumPy uint64, whose arithmetic wraps
modulo 2**64 by definition.
"""
from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _splitmix64(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        return z ^ (z >> np.uint64(31))


def counter_hash(*keys) -> np.ndarray:
    """A 64-bit hash of integer keys (arrays broadcast), e.g. (seed, restart, step bits)."""
    arrays = np.broadcast_arrays(*(np.asarray(k, dtype=np.uint64) for k in keys))
    state = np.zeros(arrays[0].shape, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for key in arrays:
            state = _splitmix64(state ^ key)
    return state


def counter_uniform(seeds: np.ndarray, counter: int, size: int) -> np.ndarray:
    """Uniforms in [0, 1) of shape ``seeds.shape + (size,)``; entry ``[..., i]`` depends
    only on ``(seed, counter, i)``."""
    seeds = np.asarray(seeds, dtype=np.uint64)[..., None]
    index = np.arange(size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        key = _splitmix64(_splitmix64(seeds ^ _splitmix64(np.uint64(counter))) + index)
    return (key >> np.uint64(11)).astype(np.float64) * 2.0**-53


def participation_mask(seeds: np.ndarray, iteration: int, m: int, fraction: float) -> np.ndarray:
    """The machines M_t of Alg. 1 line 3: ``max(1, round(fraction * m))`` of the ``m``
    machines, chosen uniformly without replacement, per run; boolean ``seeds.shape + (m,)``."""
    count = max(1, int(round(fraction * m)))
    if count >= m:
        return np.ones(np.shape(seeds) + (m,), dtype=bool)
    uniforms = counter_uniform(seeds, iteration, m)
    cutoff = np.partition(uniforms, count - 1, axis=-1)[..., count - 1 : count]
    return uniforms <= cutoff
