"""Mixed linear regression across machines (IFCA Sec. 5.1) with its exact constants.

Machine ``i`` of cluster ``j`` holds ``n`` points ``y = <x, theta*_j> + eps`` with
``x ~ N(0, I_d)`` and ``eps ~ N(0, sigma^2)``. The per-point loss of the theory is
``f(theta; x, y) = (y - <x, theta>)^2`` (no 1/2), so with ``u = theta - theta*_j``:

* population loss        ``F^j(theta) = ||u||^2 + sigma^2``  (lambda = L = 2, Assumption 3)
* loss variance          ``Var f = 2 (||u||^2 + sigma^2)^2``  (eta^2 of Assumption 4)
* gradient variance      ``E||grad f - grad F^j||^2 = 4 ((d + 1) ||u||^2 + d sigma^2)``
  (v^2 of Assumption 5; from ``grad f = 2 (<x, u> - eps) x`` and Gaussian fourth moments).

Assumptions 4 and 5 ask for these bounds "for every theta", which no bound does here:
both grow with ``||u||``. The theorems only use them on the ball where the iterates stay,
so the problem reports their supremum over a stated ball (``variance_bounds``).

B independent problems are drawn at once; problem ``b`` depends only on its own seed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar
from numbers import Integral, Real

import numpy as np
import torch

from .._torch import TENSOR_CONSTRAINTS, resolve_device, resolve_dtype
from .._validation import (
    ArrayLike,
    Constraint,
    Interval,
    NoneOK,
    Options,
    require,
    validate_params,
)
from .batch_draws import draw_batch, gaussian_features
from .planted_clusters import PlantedClusters
from .seeding import BATCH_CONSTRAINTS, problem_seeds, stream

__all__ = [
    "MixedLinearRegression",
    "make_mixed_linear_regression",
    "cluster_sizes",
    "draw_ground_truth",
    "loss_variance",
    "gradient_variance",
]

TRUTHS = ("official", "paper-text")
_STREAM_DATA, _STREAM_FRESH = 0, 1


@dataclass(frozen=True, eq=False)
class MixedLinearRegression(PlantedClusters):
    """A batch of ``B`` mixed-linear-regression problems and their exact constants.

    Tensors carry a leading batch dimension: ``features`` ``(B, m, n, d)``, ``responses``
    ``(B, m, n)``, ``theta_star`` ``(B, k, d)``. ``membership[i]`` is machine ``i``'s true
    cluster (the same partition for every problem of the batch). ``theta_star_exact`` is
    the float64 ground truth that every constant is computed from.
    """

    features: torch.Tensor
    responses: torch.Tensor
    theta_star: torch.Tensor
    theta_star_exact: np.ndarray
    membership: np.ndarray
    sigma: float
    seeds: tuple[int, ...]
    truth: str
    scale: float

    # shapes, proportions, center distances, separation, max center norm: PlantedClusters

    @property
    def snr(self) -> np.ndarray:
        """``rho = Delta^2 / sigma^2`` (inf when sigma = 0)."""
        with np.errstate(divide="ignore"):
            if self.sigma == 0:
                return np.full(self.batch_size, np.inf)
            return np.square(self.separation) / np.square(np.float64(self.sigma))

    strong_convexity: ClassVar[float] = 2.0  # lambda of Assumption 3: Hessian of F^j is 2 I
    smoothness: ClassVar[float] = 2.0  # L of Assumption 3

    def population_loss(self, distance):
        """``F^j(theta) = ||theta - theta*_j||^2 + sigma^2`` as a function of the distance."""
        return np.square(np.asarray(distance, dtype=float)) + np.square(np.float64(self.sigma))

    def loss_variance(self, distance):
        """eta^2(theta) of Assumption 4 at ``||theta - theta*_j|| = distance``."""
        return loss_variance(distance, self.sigma)

    def gradient_variance(self, distance):
        """v^2(theta) of Assumption 5 at ``||theta - theta*_j|| = distance``."""
        return gradient_variance(distance, self.sigma, self.d)

    def variance_bounds(self, radius, cross_cluster: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Sup of (eta^2, v^2) over ``theta`` within ``radius`` of some ``theta*_j``, per problem.

        With ``cross_cluster`` (the default) the sup also runs over every data
        distribution ``D_j'``, as Assumptions 4-5 say "for every j" and cluster
        estimation evaluates cluster ``j``'s model on other clusters' data: the distance
        is then up to ``max_{j,j'} ||theta*_j - theta*_j'|| + radius``. Without it, only
        ``D_j`` at ``theta`` near ``theta*_j`` (distance up to ``radius``).
        """
        radius = np.asarray(radius, dtype=float)
        reach = radius + (self.center_distances.max(axis=(1, 2)) if cross_cluster else 0.0)
        return self.loss_variance(reach), self.gradient_variance(reach)

    # -- fresh samples from the same population ----------------------------------------
    def draw(self, n: int, draw_index: int, index=None) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` new points per machine from each problem's population, ``(B, m, n, d)``.

        Draw ``draw_index`` of problem ``b`` depends only on ``(seeds[b], draw_index)``,
        never on the batch it sits in; re-sampling with ``resample="fresh"`` uses it.
        ``index`` restricts the draw to some problems of the batch.
        """
        index = range(self.batch_size) if index is None else index
        return _sample_batch([stream(self.seeds[b], _STREAM_FRESH, draw_index) for b in index],
                             self.theta_star_exact[list(index)], self.membership, n, self.sigma,
                             self.dtype, self.device)

    def subset(self, index) -> "MixedLinearRegression":
        """The problems at ``index`` (a sequence of batch positions) as a new batch (a copy)."""
        index = list(index)
        position = torch.as_tensor(index, device=self.device)
        return self._problems(index, lambda tensor: tensor.index_select(0, position))

    def slice(self, start: int, stop: int) -> "MixedLinearRegression":
        """Problems ``start`` to ``stop - 1`` as a new batch whose tensors are views of this
        batch's (no copy: this batch's memory lives as long as either)."""
        return self._problems(list(range(start, stop)), lambda tensor: tensor[start:stop])

    def _problems(self, index: list[int], select) -> "MixedLinearRegression":
        return MixedLinearRegression(
            features=select(self.features),
            responses=select(self.responses),
            theta_star=select(self.theta_star),
            theta_star_exact=self.theta_star_exact[index],
            membership=self.membership,
            sigma=self.sigma,
            seeds=tuple(self.seeds[i] for i in index),
            truth=self.truth,
            scale=self.scale,
        )


def loss_variance(distance, sigma):
    """``Var_{z~D_j} f(theta; z) = 2 (||u||^2 + sigma^2)^2`` with ``u = theta - theta*_j``:
    the residual ``<x, -u> + eps`` is N(0, ||u||^2 + sigma^2) and ``Var(r^2) = 2 s^4``."""
    return 2.0 * np.square(np.square(np.asarray(distance, dtype=float)) + np.square(np.float64(sigma)))


def gradient_variance(distance, sigma, d):
    """``E||grad f - grad F^j||^2 = 4 ((d + 1) ||u||^2 + d sigma^2)``: ``grad f = 2 (<x,u> - eps) x``
    has mean ``2u`` and ``E||grad f||^2 = 4 ((d + 2) ||u||^2 + d sigma^2)`` (Gaussian moments)."""
    distance = np.asarray(distance, dtype=float)
    return 4.0 * ((d + 1) * np.square(distance) + d * np.square(np.float64(sigma)))


def cluster_sizes(m: int, k: int, proportions=None) -> np.ndarray:
    """Machines per cluster: equal split (sizes differ by at most one) or ``p_j * m``."""
    if proportions is None:
        return np.array([m // k + (j < m % k) for j in range(k)])
    proportions = np.asarray(proportions, dtype=float)
    require(
        proportions.shape == (k,),
        f"The 'proportions' parameter must hold k={k} values; got shape {proportions.shape}.",
    )
    require(
        bool(np.all(proportions > 0)) and abs(proportions.sum() - 1.0) < 1e-9,
        f"The 'proportions' parameter must be positive and sum to 1; got {proportions.tolist()}.",
    )
    sizes = proportions * m
    require(
        bool(np.allclose(sizes, np.round(sizes), atol=1e-9)) and bool(np.all(np.round(sizes) >= 1)),
        f"The 'proportions' parameter times m={m} must give whole machine counts of at least 1; "
        f"got {sizes.tolist()}.",
    )
    return np.round(sizes).astype(int)


def draw_ground_truth(k: int, d: int, truth: str, scale: float, seeds) -> np.ndarray:
    """The ``(B, k, d)`` centers that ``make_mixed_linear_regression`` draws for these
    per-problem seeds, without drawing any data (for assumption checks)."""
    return np.stack([_draw_truth(stream(s, _STREAM_DATA), k, d, truth, float(scale)) for s in seeds])


def _draw_truth(rng: np.random.Generator, k: int, d: int, truth: str, scale: float) -> np.ndarray:
    """Ground truth per DESIGN.md's Fig. 2 protocol variants.

    ``official``: coordinates Bernoulli(0.5) * r (the authors' code; not normalised).
    ``paper-text``: Bernoulli(0.5) vectors rescaled to norm R. An all-zero draw cannot be
    rescaled, and the paper's separation Delta = min ||theta*_j - theta*_j'|| must be positive
    (in small d two draws coincide with probability 2^-d), so that variant draws each vector
    conditioned on being non-zero and unlike the vectors before it.
    """
    centers = rng.binomial(1, 0.5, size=(k, d)).astype(float)
    if truth == "official":
        return centers * scale
    require(d >= 63 or k < 2**d, f"The paper-text ground truth needs k = {k} distinct non-zero 0/1 directions in "
                                 f"d = {d} dimensions; there are only 2^d - 1 = {2**min(d, 62) - 1}.")
    for j in range(k):
        while not centers[j].any() or any(np.array_equal(centers[j], centers[i]) for i in range(j)):
            centers[j] = rng.binomial(1, 0.5, size=d)
    return centers / np.linalg.norm(centers, axis=1, keepdims=True) * scale


def _sample_batch(rngs, centers, membership, n, sigma, dtype, device):
    """``(B, m, n, d)`` features and ``(B, m, n)`` responses, problem ``b`` from ``rngs[b]``
    (the problems at once, one per thread: :func:`~.batch_draws.draw_batch`)."""
    m, d = membership.shape[0], centers.shape[-1]
    return tuple(draw_batch(rngs, lambda rng, b, rows: _sample_machines(rng, centers[b], membership, sigma, *rows),
                            [(m, n, d), (m, n)], dtype, device))


def _sample_machines(rng, theta_star, membership, sigma, features, responses):
    """One problem's Gaussian features and responses ``<x, theta*_j> + sigma eps`` (IFCA Sec. 5.1)
    into ``features`` ``(m, n, d)`` and ``responses`` ``(m, n)``: the features first, then the
    noise, from one stream."""
    signal = gaussian_features(rng, features, theta_star[membership])
    noise = rng.standard_normal(signal.shape) * sigma
    responses.copy_(torch.from_numpy(signal + noise))


_GIVEN_TRUTH = Constraint(
    lambda v: v is None or ArrayLike.is_satisfied_by(v) and np.ndim(v) in (2, 3),
    "None or a finite array of shape (k, d) or (B, k, d)",
)


@validate_params(
    {
        "k": [Interval(Integral, 1, None, closed="left")],
        "m": [Interval(Integral, 1, None, closed="left")],
        "n": [Interval(Integral, 1, None, closed="left")],
        "d": [Interval(Integral, 1, None, closed="left")],
        "sigma": [Interval(Real, 0, None, closed="left")],
        "proportions": [NoneOK, ArrayLike],
        "truth": [Options(TRUTHS)],
        "scale": [Interval(Real, 0, None, closed="neither")],
        "theta_star": [_GIVEN_TRUTH],
        **BATCH_CONSTRAINTS,
        **TENSOR_CONSTRAINTS,
    }
)
def make_mixed_linear_regression(
    k: int = 2,
    m: int = 100,
    n: int = 100,
    d: int = 1000,
    *,
    sigma: float = 0.1,
    proportions=None,
    truth: str = "official",
    scale: float = 1.0,
    theta_star=None,
    batch_size: int = 1,
    seed=0,
    dtype: str = "float64",
    device: str = "cpu",
) -> MixedLinearRegression:
    """Draw ``batch_size`` independent mixed-linear-regression problems (IFCA Sec. 5.1).

    Parameters
    ----------
    k, m, n, d : clusters, machines, points per machine, dimension (``k <= m``).
    sigma : noise standard deviation (0 allowed: noiseless responses).
    proportions : cluster proportions ``p_j`` (``p_j * m`` whole numbers); ``None`` splits
        the machines equally (contiguous blocks, as the authors' code does).
    truth, scale : how ``theta*`` is drawn when not given: ``"official"`` draws
        Bernoulli(0.5) coordinates times ``scale`` (the sweep's ``r``), ``"paper-text"``
        rescales Bernoulli(0.5) vectors to norm ``scale`` (the paper's ``R``).
    theta_star : a given ground truth, ``(k, d)`` shared by the batch or ``(B, k, d)``.
    batch_size : number of independent problems ``B``.
    seed : one non-negative int (problem ``b`` gets the ``b``-th seed spawned from it, so
        it does not depend on ``batch_size``) or ``B`` explicit per-problem seeds.
    dtype, device : of the tensors; the data are drawn in float64 on the CPU and then
        cast, so every device and dtype sees the same draw.
    """
    require(k <= m, f"IFCA needs at least one machine per cluster: k={k} > m={m}.")
    sizes = cluster_sizes(m, k, proportions)
    membership = np.repeat(np.arange(k), sizes)
    seeds = problem_seeds(seed, batch_size)

    given = None
    if theta_star is not None:
        given = np.asarray(theta_star.detach().cpu() if hasattr(theta_star, "detach") else theta_star, dtype=float)
        if given.ndim == 2:
            given = np.broadcast_to(given, (batch_size,) + given.shape)
        require(
            given.shape == (batch_size, k, d),
            f"The 'theta_star' parameter must have shape (k, d)=({k}, {d}) or "
            f"(B, k, d)=({batch_size}, {k}, {d}); got {tuple(np.shape(theta_star))}.",
        )

    torch_device, torch_dtype = resolve_device(device), resolve_dtype(dtype)
    rngs = [stream(problem_seed, _STREAM_DATA) for problem_seed in seeds]
    # each problem's stream draws its centers first, then its data
    theta_star_exact = given.copy() if given is not None else np.stack(
        [_draw_truth(rng, k, d, truth, float(scale)) for rng in rngs])
    features, responses = _sample_batch(rngs, theta_star_exact, membership, n, float(sigma), torch_dtype,
                                        torch_device)
    return MixedLinearRegression(
        features=features,
        responses=responses,
        theta_star=torch.as_tensor(theta_star_exact, dtype=torch_dtype, device=torch_device),
        theta_star_exact=theta_star_exact,
        membership=membership,
        sigma=float(sigma),
        seeds=seeds,
        truth="given" if given is not None else truth,
        scale=float(scale),
    )
