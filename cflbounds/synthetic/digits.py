"""Real data for every paper: scikit-learn's hand-written digits split over clients.

``load_digits`` ships with scikit-learn (1797 images of 8x8 pixels, 10 classes; no
download). A batch of ``B`` trials splits it over ``m`` clients with a planted cluster
structure, the ground truth returned with the data:

* ``"rotation"``: cluster ``c`` sees the images rotated by ``90 c`` degrees
  (``np.rot90``; 0, 90, 180, 270 as the papers' Rotated MNIST, IFCA Sec. 6.2);
* ``"label-swap"``: cluster ``c`` sees its labels through a permutation ``pi_c``
  (``pi_0`` the identity, the others drawn per trial);
* ``"label-skew"``: each client holds ``labels_per_client`` random labels (DSC Sec. IV:
  "400 to 800 samples of two random labels"); a client's cluster is its label set.

Each trial first splits the images into a train and a test pool, stratified by label
(``test_fraction`` of each class goes to test), so no test image is ever trained on.
Under rotation and label swap, every cluster sees the whole pool (as Rotated MNIST
augments the whole data set) and partitions it among its clients without overlap; under
label skew each client draws its samples of each of its labels without replacement from
that label's pool, independently of the other clients (pools are too small to keep
clients disjoint). Features are pixel intensities / 16, in [0, 1].

Trial ``b`` depends only on its own seed, never on the batch it is drawn in.
"""
from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import torch

from .._torch import TENSOR_CONSTRAINTS, resolve_device, resolve_dtype
from .._validation import Constraint, Interval, NoneOK, Options, require, validate_params
from .client_data import ClientData
from .mixed_linear_regression import cluster_sizes
from .seeding import BATCH_CONSTRAINTS, problem_seeds, stream

__all__ = ["DigitClients", "make_digit_clients", "STRUCTURES", "CLASSES", "PIXELS", "label_set_index"]

STRUCTURES = ("rotation", "label-swap", "label-skew")
CLASSES, PIXELS = 10, 64
ROTATIONS = (0, 90, 180, 270)
# DSC's client sizes, 400-800 samples of MNIST's 60000 training images, scaled to the train pool
_DSC_SIZES, _MNIST_TRAIN = (400, 800), 60000
_STREAM_SPLIT = 0


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.images.astype(np.float64) / 16.0, data.target.astype(np.int64)


@dataclass(frozen=True, eq=False)
class DigitClients:
    """A batch of ``B`` digit-classification federations with their planted clusters.

    ``train``/``test``: :class:`ClientData` ``(B, m, n, 64)``; ``membership`` ``(B, m)``:
    each client's planted cluster (under label skew, the index of its label set among
    all sets of that size, :func:`label_set_index`); ``rotations``: degrees per cluster
    (rotation only, else zeros); ``label_permutations`` ``(B, k, 10)``: the label map of
    each cluster (identity unless label swap); ``client_labels`` ``(B, m, L)``: each
    client's labels (label skew only, else None).
    """

    train: ClientData
    test: ClientData
    membership: np.ndarray
    structure: str
    rotations: tuple[int, ...]
    label_permutations: np.ndarray
    client_labels: np.ndarray | None
    seeds: tuple[int, ...]

    classes = CLASSES
    features = PIXELS

    @property
    def batch_size(self) -> int:
        return self.train.batch_size

    @property
    def m(self) -> int:
        return self.train.clients

    @property
    def k(self) -> int:
        """Planted clusters (under label skew: distinct label sets, the largest over trials)."""
        return int(max(len(np.unique(row)) for row in self.membership))

    @property
    def device(self) -> torch.device:
        return self.train.device

    @property
    def dtype(self) -> torch.dtype:
        return self.train.dtype


def label_set_index(labels: np.ndarray) -> np.ndarray:
    """Index of each sorted label set among ``itertools.combinations(range(10), L)``;
    ``labels`` ``(..., L)`` -> ``(...)``."""
    size = labels.shape[-1]
    table = {combo: i for i, combo in enumerate(itertools.combinations(range(CLASSES), size))}
    flat = np.sort(labels.reshape(-1, size), axis=-1)
    return np.array([table[tuple(row)] for row in flat], dtype=np.int64).reshape(labels.shape[:-1])


def _stratified_pools(rng, labels, test_fraction):
    """Per label, (train indices, test indices): ``round(test_fraction * count)`` to test."""
    pools = []
    for label in range(CLASSES):
        index = rng.permutation(np.flatnonzero(labels == label))
        cut = int(round(test_fraction * index.size))
        pools.append((index[cut:], index[:cut]))
    return pools


def _pool_sizes(test_fraction):
    counts = np.bincount(_digits()[1], minlength=CLASSES)
    test = np.array([int(round(test_fraction * c)) for c in counts])
    return counts - test, test


def _rotate(images, degrees):
    return np.rot90(images, k=degrees // 90, axes=(1, 2))


def _partition(rng, pool, clients, per_client):
    """``clients`` disjoint draws of ``per_client`` indices from ``pool``, ``(clients, per_client)``."""
    return rng.permutation(pool)[: clients * per_client].reshape(clients, per_client)


def _clustered_trial(rng, structure, sizes, k, train_per_client, test_per_client, test_fraction):
    """Rotation / label swap: per cluster, disjoint shares of the whole pools."""
    images, labels = _digits()
    pools = _stratified_pools(rng, labels, test_fraction)
    train_pool = np.concatenate([p[0] for p in pools])
    test_pool = np.concatenate([p[1] for p in pools])
    permutations = np.tile(np.arange(CLASSES), (k, 1))
    if structure == "label-swap":
        for c in range(1, k):
            permutations[c] = rng.permutation(CLASSES)
    out = {"train": ([], []), "test": ([], [])}
    for c, clients in enumerate(sizes):
        degrees = ROTATIONS[c] if structure == "rotation" else 0
        for split, pool, per in (("train", train_pool, train_per_client), ("test", test_pool, test_per_client)):
            index = _partition(rng, pool, clients, per)
            out[split][0].append(_rotate(images[index.ravel()], degrees).reshape(clients, per, PIXELS))
            out[split][1].append(permutations[c][labels[index]])
    arrays = {split: (np.concatenate(x), np.concatenate(y), np.ones(np.concatenate(y).shape, bool))
              for split, (x, y) in out.items()}
    return arrays, np.repeat(np.arange(k), sizes), permutations, None


def _skew_client(rng, pools, chosen, size, split):
    """``size`` samples split evenly over the client's labels (the first labels get the
    remainder), each label's drawn without replacement from its pool."""
    images, labels = _digits()
    shares = np.full(len(chosen), size // len(chosen)) + (np.arange(len(chosen)) < size % len(chosen))
    index = np.concatenate([rng.choice(pools[label][split], share, replace=False)
                            for label, share in zip(chosen, shares)])
    return images[index].reshape(-1, PIXELS), labels[index]


def _skew_trial(rng, m, labels_per_client, size_range, test_per_client, test_fraction):
    pools = _stratified_pools(rng, _digits()[1], test_fraction)
    chosen = np.stack([np.sort(rng.choice(CLASSES, labels_per_client, replace=False)) for _ in range(m)])
    train_sizes = rng.integers(size_range[0], size_range[1] + 1, size=m)
    arrays = {}
    for split, sizes, capacity in (("train", train_sizes, size_range[1]), ("test", np.full(m, test_per_client),
                                                                           test_per_client)):
        x = np.zeros((m, capacity, PIXELS))
        y = np.zeros((m, capacity), dtype=np.int64)
        mask = np.zeros((m, capacity), dtype=bool)
        for i in range(m):
            xi, yi = _skew_client(rng, pools, chosen[i], sizes[i], 0 if split == "train" else 1)
            x[i, : sizes[i]], y[i, : sizes[i]], mask[i, : sizes[i]] = xi, yi, True
        arrays[split] = (x, y, mask)
    return arrays, label_set_index(chosen), np.tile(np.arange(CLASSES), (1, 1)), chosen


def _default_sizes(test_fraction):
    train_pool = int(_pool_sizes(test_fraction)[0].sum())
    return tuple(max(1, int(round(s * train_pool / _MNIST_TRAIN))) for s in _DSC_SIZES)


_SIZE_RANGE = Constraint(
    lambda v: len(v) == 2 and all(isinstance(s, Integral) and not isinstance(s, bool) for s in v)
    and 1 <= v[0] <= v[1],
    "None or a pair (low, high) of ints with 1 <= low <= high",
)


@validate_params(
    {
        "m": [Interval(Integral, 1, None, closed="left")],
        "k": [Interval(Integral, 1, None, closed="left")],
        "structure": [Options(STRUCTURES)],
        "train_per_client": [Interval(Integral, 1, None, closed="left")],
        "test_per_client": [Interval(Integral, 1, None, closed="left")],
        "test_fraction": [Interval(Real, 0, 1, closed="neither")],
        "labels_per_client": [Interval(Integral, 1, CLASSES, closed="both")],
        "client_sizes": [NoneOK, _SIZE_RANGE],
        **BATCH_CONSTRAINTS,
        **TENSOR_CONSTRAINTS,
    }
)
def make_digit_clients(
    m: int = 40,
    k: int = 4,
    *,
    structure: str = "rotation",
    train_per_client: int = 30,
    test_per_client: int = 20,
    test_fraction: float = 0.25,
    labels_per_client: int = 2,
    client_sizes=None,
    batch_size: int = 1,
    seed=0,
    dtype: str = "float32",
    device: str = "cpu",
) -> DigitClients:
    """Split the digits over ``m`` clients with a planted cluster structure (module docstring).

    Parameters
    ----------
    m : clients; under rotation and label swap they form ``k`` clusters of equal size
        (contiguous blocks, sizes differing by at most one).
    k : clusters (rotation: at most 4; label swap: at most m; ignored under label skew).
    structure : ``"rotation"``, ``"label-swap"`` or ``"label-skew"``.
    train_per_client, test_per_client : samples per client (rotation, label swap); under
        label skew ``test_per_client`` is each client's test size.
    test_fraction : share of each class held out as the test pool.
    labels_per_client : labels per client under label skew (DSC: 2).
    client_sizes : ``(low, high)``: label-skew train sizes, uniform on the integers of the
        range; default DSC's 400-800 scaled by (train pool / 60000), here (9, 18).
    batch_size, seed : trials ``B``; one int (trial ``b`` gets the ``b``-th spawned seed)
        or ``B`` explicit seeds.
    dtype, device : of the feature tensors (labels are int64, masks bool).
    """
    train_pool, test_pool = _pool_sizes(test_fraction)
    if structure == "label-skew":
        sizes_range = _default_sizes(test_fraction) if client_sizes is None else tuple(client_sizes)
        per_label = -(-sizes_range[1] // labels_per_client)
        require(per_label <= train_pool.min(),
                f"Label skew draws up to ceil(high / labels_per_client)={per_label} train samples of one label; "
                f"the smallest label's train pool holds {train_pool.min()} (lower client_sizes or test_fraction).")
        per_label_test = -(-test_per_client // labels_per_client)
        require(per_label_test <= test_pool.min(),
                f"Label skew draws up to {per_label_test} test samples of one label; the smallest label's test "
                f"pool holds {test_pool.min()} (lower test_per_client or raise test_fraction).")
    else:
        require(k <= m, f"make_digit_clients needs at least one client per cluster: k={k} > m={m}.")
        require(structure != "rotation" or k <= len(ROTATIONS),
                f"Rotation has {len(ROTATIONS)} angles (0, 90, 180, 270): k={k} is too many.")
        sizes = cluster_sizes(m, k)
        for name, per, pool in (("train", train_per_client, train_pool.sum()), ("test", test_per_client,
                                                                                 test_pool.sum())):
            require(sizes.max() * per <= pool,
                    f"Each cluster partitions the {name} pool ({pool} images) among its {sizes.max()} clients "
                    f"without overlap: {name}_per_client={per} asks for {sizes.max() * per}.")
    seeds = problem_seeds(seed, batch_size)
    trials = []
    for trial_seed in seeds:
        rng = stream(trial_seed, _STREAM_SPLIT)
        if structure == "label-skew":
            trials.append(_skew_trial(rng, m, labels_per_client, sizes_range, test_per_client, test_fraction))
        else:
            trials.append(_clustered_trial(rng, structure, sizes, k, train_per_client, test_per_client,
                                           test_fraction))
    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)

    def stack(split):
        x, y, mask = (np.stack([t[0][split][i] for t in trials]) for i in range(3))
        return ClientData(torch.as_tensor(x, dtype=torch_dtype, device=torch_device),
                          torch.as_tensor(y, device=torch_device), torch.as_tensor(mask, device=torch_device))

    return DigitClients(
        train=stack("train"),
        test=stack("test"),
        membership=np.stack([t[1] for t in trials]),
        structure=structure,
        rotations=tuple(ROTATIONS[:k]) if structure == "rotation" else (0,) * (1 if structure == "label-skew" else k),
        label_permutations=np.stack([t[2] for t in trials]),
        client_labels=None if structure != "label-skew" else np.stack([t[3] for t in trials]),
        seeds=seeds,
    )
