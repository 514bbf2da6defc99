"""Clustered binary classification on a finite support: bounded losses, exact populations.

Every cluster's distribution ``D_c`` is uniform over the same ``A`` atoms ``x_a`` (drawn
uniformly in the ball of radius ``input_radius`` in R^d) with cluster-specific labels
``y_{c,a} = sign(<theta_c, x_a>)``, flipped independently with probability
``label_noise`` (``theta_c`` a random unit vector per cluster). Client ``i`` of cluster
``c(i)`` holds ``n_i`` i.i.d. draws from ``D_c(i)``.

Because the support is finite, every population quantity is an exact finite sum:
``L_D(w) = (1/A) sum_a loss(<w, x_a>, y_a)`` for any loss, the total variation between
two clusters is the fraction of atoms whose labels differ, and the input constants are
``B_x = max_a ||x_a||`` and ``E||x||^2 = (1/A) sum_a ||x_a||^2``. These are the
"bounded-loss problems where T1 is checkable" of LCFL Thm 1 (Assumption 1: loss in [0, 1]).

The distributions (atoms, directions, labels) come from ``distribution_seed`` and are
shared by the whole batch; each trial draws its clients' samples from its own seed, so
the trials are independent repetitions of the sampling that Thm 1's probability is over.
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import torch

from .._torch import TENSOR_CONSTRAINTS, resolve_device, resolve_dtype
from .._validation import Constraint, Interval, require, validate_params
from .client_data import ClientData
from .seeding import BATCH_CONSTRAINTS, problem_seeds, stream

__all__ = ["BoundedLinearClusters", "make_bounded_linear_clusters"]

_STREAM_DISTRIBUTION, _STREAM_SAMPLES = 0, 1


@dataclass(frozen=True, eq=False)
class BoundedLinearClusters:
    """``B`` independent samplings of the clients of one clustered distribution.

    ``train``: the clients' samples (labels in {-1, +1}), ``(B, m, n, d)``;
    ``population``: each cluster's whole distribution as data, ``(B, k, A, d)`` (one
    "client" per cluster, every atom once; the same for every trial). The population
    loss of models ``(B, M, P)`` is their mean loss on ``population``
    (``algorithms.federated.client_losses``), exact. ``membership`` ``(m,)``: each
    client's cluster; ``atoms`` ``(A, d)`` and ``atom_labels`` ``(k, A)`` in float64.
    """

    train: ClientData
    population: ClientData
    membership: np.ndarray
    atoms: np.ndarray
    atom_labels: np.ndarray
    label_noise: float
    seeds: tuple[int, ...]

    @property
    def batch_size(self) -> int:
        return self.train.batch_size

    @property
    def k(self) -> int:
        return self.atom_labels.shape[0]

    @property
    def d(self) -> int:
        return self.atoms.shape[1]

    @property
    def sizes(self) -> np.ndarray:
        """``m_i``, the sample count of each client, ``(m,)``."""
        return self.train.mask[0].sum(-1).cpu().numpy()

    @property
    def input_norm(self) -> float:
        """``B_x = max_a ||x_a||``."""
        return float(np.linalg.norm(self.atoms, axis=1).max())

    @property
    def second_moment(self) -> float:
        """``E||x||^2``."""
        return float(np.mean(np.sum(self.atoms**2, axis=1)))

    def total_variation(self) -> np.ndarray:
        """``TV(D_c, D_c')``, the fraction of atoms labelled differently, ``(k, k)``: it
        bounds the discrepancy of any loss with values in [0, 1], ``disc_W <= TV``."""
        return np.mean(self.atom_labels[:, None, :] != self.atom_labels[None, :, :], axis=-1)


def _distribution(rng, k, d, atoms, radius, noise):
    """Atoms uniform in the ball ``(A, d)`` and each cluster's labels ``(k, A)``."""
    directions = rng.standard_normal((atoms, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    x = directions * radius * rng.uniform(size=(atoms, 1)) ** (1.0 / d)
    theta = rng.standard_normal((k, d))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    y = np.where(x @ theta.T >= 0, 1, -1).T
    return x, np.where(rng.uniform(size=y.shape) < noise, -y, y)


def _samples(rng, x, y, membership, sizes):
    """Client ``i``'s ``n_i`` i.i.d. draws from ``D_c(i)``, padded to the largest client."""
    capacity = int(max(sizes))
    features = np.zeros((len(sizes), capacity, x.shape[1]))
    labels = np.zeros((len(sizes), capacity), dtype=np.int64)
    mask = np.zeros((len(sizes), capacity), dtype=bool)
    for i, (c, n) in enumerate(zip(membership, sizes)):
        index = rng.integers(x.shape[0], size=n)
        features[i, :n], labels[i, :n], mask[i, :n] = x[index], y[c, index], True
    return features, labels, mask


_INT_SEQUENCE = Constraint(
    lambda v: np.ndim(v) == 1 and len(v) > 0
    and all(isinstance(s, Integral) and not isinstance(s, bool) for s in v),
    "a non-empty sequence of ints",
)


@validate_params({
    "client_sizes": [_INT_SEQUENCE],
    "membership": [_INT_SEQUENCE],
    "d": [Interval(Integral, 1, None, closed="left")],
    "atoms": [Interval(Integral, 2, None, closed="left")],
    "input_radius": [Interval(Real, 0, None, closed="neither")],
    "label_noise": [Interval(Real, 0, 0.5, closed="both")],
    "distribution_seed": [Interval(Integral, 0, None, closed="left")],
    **BATCH_CONSTRAINTS,
    **TENSOR_CONSTRAINTS,
})
def make_bounded_linear_clusters(client_sizes=(200, 300, 300), membership=(0, 0, 1), *, d: int = 5,
                                 atoms: int = 1000, input_radius: float = 1.0, label_noise: float = 0.1,
                                 distribution_seed: int = 0, batch_size: int = 1, seed=0, dtype: str = "float64",
                                 device: str = "cpu") -> BoundedLinearClusters:
    """Draw one clustered distribution and ``batch_size`` samplings of its clients (module docstring).

    Parameters
    ----------
    client_sizes : ``m_i`` per client; membership : each client's cluster (``0..k-1``,
        every cluster used).
    d, atoms, input_radius : the support: ``atoms`` points uniform in the ball of radius
        ``input_radius`` in R^d.
    label_noise : probability that an atom's label is flipped (per cluster).
    distribution_seed : seed of the distributions (shared by the batch).
    batch_size, seed : samplings ``B``; one int (trial ``b`` gets the ``b``-th spawned
        seed, independent of ``batch_size``) or ``B`` explicit seeds.
    dtype, device : of the tensors (everything is drawn in float64 first).
    """
    sizes, membership = np.asarray(client_sizes), np.asarray(membership)
    require(sizes.shape == membership.shape,
            f"client_sizes and membership need one entry per client: got {sizes.size} and {membership.size}.")
    require(bool(np.all(sizes >= 1)), f"Every client needs at least one sample: client_sizes={sizes.tolist()}.")
    k = int(membership.max()) + 1
    require(membership.min() >= 0 and np.array_equal(np.unique(membership), np.arange(k)),
            f"membership must number the clusters 0..k-1, each used: got {membership.tolist()}.")
    x, y = _distribution(stream(distribution_seed, _STREAM_DISTRIBUTION), k, d, atoms, float(input_radius),
                         float(label_noise))
    seeds = problem_seeds(seed, batch_size)
    draws = [_samples(stream(s, _STREAM_SAMPLES), x, y, membership, sizes) for s in seeds]
    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    stacked = [torch.as_tensor(np.stack([draw[i] for draw in draws]), device=torch_device) for i in range(3)]
    train = ClientData(stacked[0].to(torch_dtype), stacked[1], stacked[2])
    B = len(seeds)
    population = ClientData(
        torch.as_tensor(x, dtype=torch_dtype, device=torch_device).expand(B, k, atoms, d),
        torch.as_tensor(y, device=torch_device).expand(B, k, atoms),
        torch.ones((1, 1, 1), dtype=torch.bool, device=torch_device).expand(B, k, atoms),
    )
    return BoundedLinearClusters(train, population, membership, x, y, float(label_noise), seeds)
