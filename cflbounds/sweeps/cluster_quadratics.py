"""The quadratic a cluster of machines descends while the partition holds, with certified constants.

Under gradient averaging on the squared loss with full participation (IFCA Alg. 1 line 13,
the Fig. 2 protocol), the models chosen by a machine set ``S`` follow gradient descent on
``theta -> theta^T H theta / 2 - b^T theta`` with ``H = c sum_{i in S} X_i^T X_i`` and
``b = c sum_{i in S} X_i^T y_i`` (``c`` the loss convention's gradient factor over ``m``).
:class:`ClusterQuadratics` gives, per machine set of one problem, what the early-exit
certificate (:mod:`cflbounds.sweeps.certificate`) needs: the fixed point ``H^{-1} b`` with a
certified bound on its error, certified bounds on ``H``'s extreme eigenvalues
(:mod:`cflbounds.sweeps.spectral_bounds`), and each machine's residual at the fixed point;
certified upper bounds on every ``||X_i||_2``; and, for following gradient descent ahead, a
true cluster's ``H`` as its Gram block (:meth:`ClusterQuadratics.cluster_hessian`) and every
machine's residual norm at many models from one pass over the data, with its rounding bound
(:meth:`ClusterQuadratics.residual_norm_matrix`, :meth:`ClusterQuadratics.residual_norm_rounding`).

Cost. ``H`` is assembled from the true clusters' Gram matrices, each computed once per
problem: the part of ``S`` inside true cluster ``C`` is ``G_C`` minus the Gram of ``C``'s
machines outside ``S`` when those are the fewer, else the Gram of those inside. A partition
near the true one (the only kind that can end below the threshold) then costs the Grams of
the few machines that moved, and the collapsed partition a sum of blocks. The copy of the data
is sorted by true cluster, so a true cluster's Gram reads its points in place. Eigenvalues are
bounded by one Cholesky test each, placed by one Lanczos run per quadratic (both ends; ``eigh``
for small ``d``, :mod:`cflbounds.sweeps.spectral_bounds`), not computed (a tenth of ``eigvalsh``).
The run starts at ``b``, so its Krylov space also holds the fixed point (its Galerkin solution:
conjugate gradients' iterate), which saves the factorisation of ``H`` (:func:`_fixed_point`;
Cholesky for small ``d`` or where the Krylov space's solution is not accurate). A union of whole
true clusters already solved (the collapsed partition) takes Weyl's bounds from theirs
instead, at the cost of its fixed point alone (:meth:`ClusterQuadratics._whole_clusters`).

Rounding. The Gram matrices' products (the clusters', in chunks of ``_CHUNK_POINTS`` points
summed in float64, and the machines' small ones for their spectral norms) are computed in the
data's dtype (float32 in the protocol); everything else is float64
arithmetic on the float64 copy of the data. Every bound includes the rounding of the work
behind it (``gamma`` terms below, in the dtype used), so the bounds hold for the exact ``H``
and ``b`` of that data; the fixed point's error comes from its gradient computed from the data
in float64, not from the (float32-rounded) ``H``.

Threads. Every public method computes on one torch thread (:func:`cflbounds._threads.one_torch_thread`):
the Grams' chunk products, the Cholesky factorisations and the residuals' mat-vecs round
differently on two threads than on one, and these numbers end in the stored rows (the
certificate's ``final_lower``, ``final_upper``), which must not depend on ``--threads`` or the
executor. The cores come back through independent pieces run at once, each on one thread
(:func:`cflbounds._threads.on_one_thread_each`), split the same way whatever the thread count:
a Gram's ``_GRAM_BLOCKS`` row blocks and, when the work is large, the per-machine work in
``_MACHINE_GROUPS`` groups (the float64 copy, residuals, spectral norms) and the quadratics of a
partition's machine sets (:meth:`ClusterQuadratics.contractions`). Every number is the serial
one, bit for bit. At paper size on 2 threads this took the certificate from 3.4-3.5 s to 2.3 s
on the benchmark cells (docs/performance.md, "The early-exit certificate").
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
import torch

from .. import _threads
from .._threads import on_one_thread_each, one_torch_thread
from .spectral_bounds import (KrylovSpace, extreme_quotients, galerkin_solution, gamma, gershgorin_upper, krylov_space,
                              lower_bound, upper_bound)

__all__ = ["ClusterQuadratic", "ClusterQuadratics"]

_GRAM_BLOCKS = 10  # a Gram's lower triangle in this many row blocks, one thread each
# large per-machine work (the float64 copy, residuals, spectral norms) in this many groups, one thread each
_MACHINE_GROUPS = 4
# points per chunk of a float32 Gram: its rounding bound gamma_256 trace is 4.9 % of lambda_min at
# paper size (trace / lambda_min = 3200); 128 points would halve that and take 1.4x the time
# (104 against 74 ms per true cluster at one thread, float64: 133 ms)
_CHUNK_POINTS = 256
# a fixed point from the Krylov space is kept when ||H x - b|| <= this ||b|| (_fixed_point)
_GALERKIN_RESIDUAL = 2.0 ** -40


@dataclass(frozen=True)
class ClusterQuadratic:
    """One machine set's quadratic: ``fixed`` point (float64 ``(d,)``) within ``fixed_error``
    of the exact one, eigenvalues of ``H`` in ``[lower, upper]`` (``lower > 0``; ``upper`` is
    Gershgorin's bound unless ``tight``), ``lambda_max`` at least ``top_floor`` (a Rayleigh
    quotient, kept apart from ``upper``: it bounds the other way), and ``residual_norms[i] =
    ||X_i fixed - y_i||`` for every machine of the problem."""

    fixed: torch.Tensor
    fixed_error: float
    lower: float
    upper: float
    residual_norms: np.ndarray
    tight: bool = False
    top_floor: float = 0.0

    def contraction(self, step: float) -> float:
        """``max |1 - step lambda|`` over ``[lower, upper]``: the factor by which gradient descent
        with this step shrinks the distance to the fixed point (not a contraction if >= 1;
        infinite when ``step * top_floor >= 2``: some direction does not shrink)."""
        if step * self.top_floor >= 2:
            return np.inf
        return max(abs(1 - step * self.lower), abs(1 - step * self.upper))


class ClusterQuadratics:
    """The quadratics of machine sets of one problem (module docstring).

    ``features`` ``(m, n, d)`` and ``responses`` ``(m, n)`` (any float dtype: every bound is
    for their exact float64 copy), ``membership`` the true cluster of each machine, ``scale``
    the factor ``c`` of ``H`` and ``b``. ``storage``: a float64 tensor of the features' shape
    and device to hold the float64 copy of the data in, e.g. the one a previous problem's
    quadratics gave back (:meth:`release`): writing into used memory skips the page faults of
    fresh memory (40 against 4 ms per paper-size copy on one thread).
    """

    @classmethod
    def of_problem(cls, features: torch.Tensor, responses: torch.Tensor, membership,
                   gradient_factor: float, storage: torch.Tensor | None = None) -> "ClusterQuadratics":
        """The quadratics of one problem's ``(m, n, d)`` features and ``(m, n)`` responses (any
        float dtype) under gradient averaging: ``c`` is the loss convention's ``gradient_factor``
        over ``m`` (Alg. 1 line 13 divides the sum by m). ``storage``: see the class."""
        return cls(features, responses, membership, gradient_factor / features.shape[0], storage)

    @one_torch_thread()
    def __init__(self, features: torch.Tensor, responses: torch.Tensor, membership, scale: float,
                 storage: torch.Tensor | None = None):
        self.features = features  # as given: the spectral norms' Gram matrices are computed in its dtype
        self.responses, self.scale = responses.double(), scale
        self.membership = np.asarray(membership)
        m, n, d = features.shape
        # the float64 copy, sorted by true cluster: a true cluster's points are then a view, which its
        # Gram's blocks read without a gather
        self._order = order = np.argsort(self.membership, kind="stable")
        self._position = np.empty(m, dtype=np.int64)
        self._position[order] = np.arange(m)  # machine i is block _position[i] of the copy
        self._unsort = torch.as_tensor(self._position, device=features.device)
        # in the data's dtype (the Grams' products) and in float64 (everything else)
        if np.array_equal(order, np.arange(m)):  # already sorted (the generator's membership is)
            self._sorted = features
        else:
            self._sorted = features.index_select(0, torch.as_tensor(order, device=features.device))
        self._sorted_responses = self.responses[torch.as_tensor(order, device=features.device)]
        if storage is None:
            storage = torch.empty(self._sorted.shape, dtype=torch.float64, device=features.device)
        elif (storage.shape, storage.dtype, storage.device) != (self._sorted.shape, torch.float64, features.device):
            raise ValueError(f"The float64 copy of {tuple(features.shape)} {features.device} features cannot be "
                             f"stored in a {tuple(storage.shape)} {storage.dtype} {storage.device} tensor.")
        self._points = storage

        def copy(span):  # a group's float64 points (and, in fresh storage, its page faults), ||X_i||_F^2, X_i^T y_i
            points = self._points[span[0]:span[1]]
            points.copy_(self._sorted[span[0]:span[1]])
            return (torch.linalg.vector_norm(points, dim=(1, 2)).square(),
                    torch.matmul(self._sorted_responses[span[0]:span[1], None, :], points)[:, 0])

        traces, offsets = zip(*on_one_thread_each(copy, *_machine_groups(m, 4 * m * n * d)))
        self._traces = torch.cat(traces)[self._unsort].cpu().numpy()
        self._response_norms = self.responses.norm(dim=-1).cpu().numpy()  # ||y_i||
        self._offsets = torch.cat(offsets)[self._unsort]
        self._members = [(cluster, self.membership == cluster) for cluster in np.unique(self.membership)]
        self._blocks: dict[int, torch.Tensor] = {}  # true cluster -> its Gram matrix
        self._quadratics: dict[bytes, ClusterQuadratic | None] = {}
        self._needed: dict[bytes, tuple[int, int]] = {}  # mask -> (blocks computed when counted, gram_machines)
        self._spectral: np.ndarray | None = None
        self._residuals: dict[bytes, np.ndarray] = {}  # a model nobody chose stays put: its residuals are reused
        # a Gram entry sums chunks of at most _CHUNK_POINTS products in the data's dtype, at most
        # m n / _CHUNK_POINTS + 1 chunks in float64, and H is at most 2k sums and differences of Grams
        chunk = gamma(_CHUNK_POINTS, features.dtype)
        self._gram_rounding = chunk + gamma(m * n // _CHUNK_POINTS + 2 * (int(self.membership.max()) + 1) + 4) * (1 + chunk)

    def release(self) -> torch.Tensor:
        """The storage of the float64 copy, for another problem's quadratics (``storage``); these
        quadratics are unusable afterwards (a method that needs the copy fails)."""
        storage, self._points = self._points, None
        return storage

    def _gram(self, machines: np.ndarray) -> torch.Tensor:
        """``X_S^T X_S`` of the machines, float64: the lower triangle in ``_GRAM_BLOCKS`` column
        blocks, mirrored; each block the float64 sum of the products of chunks of
        ``_CHUNK_POINTS`` points computed in the data's dtype (float32 in the protocol: 1.7x faster
        than float64 at paper size, with a rounding bound ``gamma_{chunk}`` in float32,
        ``_gram_rounding``)."""
        positions = np.sort(self._position[machines])
        if positions[-1] - positions[0] + 1 == positions.size:  # consecutive (a true cluster): a view
            x = self._sorted[positions[0]:positions[-1] + 1]
        else:
            x = self._sorted.index_select(0, torch.as_tensor(positions, device=self._sorted.device))
        x = x.reshape(-1, x.shape[-1])  # X_S
        count, d = x.shape
        whole = count - count % _CHUNK_POINTS
        chunks = x[:whole].reshape(-1, _CHUNK_POINTS, d)
        gram = torch.empty(d, d, dtype=torch.float64, device=x.device)

        def rows(span):  # rows start:stop of the lower triangle; the spans write disjoint rows
            start, stop = span
            block = torch.bmm(chunks[:, :, start:stop].transpose(1, 2), chunks[:, :, :stop]).sum(0, dtype=torch.float64)
            if whole < count:
                block += (x[whole:, start:stop].T @ x[whole:, :stop]).double()
            gram[start:stop, :stop] = block
            diagonal = gram[start:stop, start:stop]
            diagonal.copy_(diagonal.tril() + diagonal.tril(-1).T)  # exactly symmetric

        spans = _spans(d, _GRAM_BLOCKS)
        on_one_thread_each(rows, spans[::-1], flops=count * d * d)  # the widest first: the threads end together
        for start, stop in spans:
            gram[start:stop, stop:] = gram[stop:, start:stop].T
        return gram

    def _block(self, cluster: int) -> torch.Tensor:
        if cluster not in self._blocks:
            self._blocks[cluster] = self._gram(np.flatnonzero(self.membership == cluster))
        return self._blocks[cluster]

    def _parts(self, mask: np.ndarray) -> list[tuple[int, bool, np.ndarray]]:
        """How :meth:`_assemble` builds the Gram of ``mask``: per true cluster with machines in
        it, ``(cluster, True, machines)`` for its block minus the Grams of ``machines`` (those
        outside ``mask``) when they are the fewer, else ``(cluster, False, machines)`` for the
        Gram of ``machines`` (those inside)."""
        parts = []
        for cluster, members in self._members:
            inside, outside = np.flatnonzero(members & mask), np.flatnonzero(members & ~mask)
            if inside.size:
                parts.append((cluster, True, outside) if outside.size < inside.size else (cluster, False, inside))
        return parts

    def _assemble(self, mask: np.ndarray) -> tuple[torch.Tensor, float]:
        """``sum_{i in mask} X_i^T X_i`` and the trace of every Gram added or subtracted."""
        total, involved = None, 0.0
        for cluster, from_block, machines in self._parts(mask):
            if from_block:
                part = self._block(cluster)
                involved += float(self._traces[self.membership == cluster].sum())
                if machines.size:
                    part = part - self._gram(machines)
            else:
                part = self._gram(machines)
            involved += float(self._traces[machines].sum())
            total = part if total is None else total + part
        return total, involved

    @one_torch_thread()
    def quadratic(self, mask: np.ndarray) -> ClusterQuadratic | None:
        """The quadratic of the machines in boolean ``mask``; None when ``H`` is not certified
        positive definite (fewer points than dimensions, or numerically singular)."""
        key = mask.tobytes()
        if key not in self._quadratics:
            self._quadratics[key] = self._solve(mask)
        return self._quadratics[key]

    def gram_machines(self, mask: np.ndarray) -> int:
        """How many machines' Gram matrices the quadratic of ``mask`` still needs computed
        (:meth:`_assemble`, with the true clusters' blocks computed so far); 0 if it is known.
        Remembered until another block is computed (the certificate asks at every look)."""
        key = mask.tobytes()
        if key in self._quadratics:
            return 0
        blocks, needed = self._needed.get(key, (-1, 0))
        if blocks != len(self._blocks):
            needed = sum(machines.size + (int(np.sum(self.membership == cluster))
                                          if from_block and cluster not in self._blocks else 0)
                         for cluster, from_block, machines in self._parts(mask))
            self._needed[key] = (len(self._blocks), needed)
        return needed

    def true_contraction(self, step: float) -> float | None:
        """The largest :meth:`contraction` at ``step`` over the true clusters' quadratics: how fast
        a run holding the true partition approaches its fixed points (None: some cluster does
        not contract)."""
        factors = self.contractions([members for _, members in self._members], step)
        return None if None in factors else max(factors)

    def contractions(self, masks: list[np.ndarray], step: float) -> list[float | None]:
        """:meth:`contraction` of each of ``masks`` (distinct) at ``step``, None where there is
        none; the caller needs them all, so it stops at the first None.

        Small solves go one by one and stop there: the masks after the first None are not solved
        (None). Large ones (``d^3`` at least ``PARALLEL_FLOPS`` in all) run at once, each on its
        own thread (:func:`~cflbounds._threads.on_one_thread_each`: the same numbers as one by
        one), the true clusters' Gram matrices they need first: every mask up to the first with
        fewer points than dimensions (its ``H`` is singular: None, and None after it) is solved,
        even after one that does not contract at ``step``. Which rule applies depends on the
        sizes only, never on the thread count, so neither do the quadratics known afterwards
        (which decide later looks)."""
        d = self._points.shape[-1]
        solvable = next((i for i, mask in enumerate(masks) if self._singular(mask)), len(masks))
        if solvable * d ** 3 < _threads.PARALLEL_FLOPS:
            factors = []
            for mask in masks[:solvable]:
                factors.append(self.contraction(mask, step))
                if factors[-1] is None:
                    break
            return factors + [None] * (len(masks) - len(factors))
        for mask in masks[:solvable]:
            if mask.tobytes() not in self._quadratics:
                for cluster, from_block, _ in self._parts(mask):
                    if from_block:
                        self._block(cluster)  # the solves below only read the blocks
        factors = on_one_thread_each(lambda mask: self.contraction(mask, step), masks[:solvable])
        return factors + [None] * (len(masks) - solvable)

    @one_torch_thread()
    def contraction(self, mask: np.ndarray, step: float) -> float | None:
        """:meth:`ClusterQuadratic.contraction` of ``mask``'s quadratic at ``step``, with a tight
        upper eigenvalue bound computed only if Gershgorin's would decide it; None when there
        is no quadratic or no contraction."""
        quadratic = self.quadratic(mask)
        if quadratic is None:
            return None
        if step * quadratic.upper > 2 - step * quadratic.lower and not quadratic.tight \
                and step * quadratic.top_floor < 2:
            hessian, error = self._hessian(mask)
            floor = torch.as_tensor(quadratic.top_floor, dtype=hessian.dtype, device=hessian.device)
            upper = float(upper_bound(hessian, error, floor))
            quadratic = replace(quadratic, upper=min(quadratic.upper, upper), tight=True)
            self._quadratics[mask.tobytes()] = quadratic
        factor = quadratic.contraction(step)
        return factor if factor < 1 else None

    def _hessian(self, mask: np.ndarray) -> tuple[torch.Tensor, float]:
        """``H`` of the machines in ``mask`` and a bound on its rounding error: ``||fl(G) - G||_2 <=
        gamma ||(|X|^T |X|)||_2 <= gamma`` times the sum of the traces of the Grams involved (``||P||_2
        <= trace P`` for PSD ``P = |X|^T |X|``, whose trace is ``X``'s), ``gamma`` the Grams'
        ``_gram_rounding``, plus the scaling's ``u ||H||``; inflated for the traces' own rounding."""
        gram, involved = self._assemble(mask)
        return self.scale * gram, self._hessian_error(involved)

    def _hessian_error(self, involved: float) -> float:
        """:meth:`_hessian`'s bound on ``||c fl(G) - H||_2`` for Grams whose traces sum to ``involved``."""
        m, n, d = self._points.shape
        return self.scale * involved * (self._gram_rounding + gamma(2)) * (1 + gamma(n * d + 8))

    def cluster_hessian(self, mask: np.ndarray) -> tuple[torch.Tensor, float, float] | None:
        """``(G, c, error)`` with ``H = c G`` the Hessian of ``mask`` when ``mask`` is exactly one
        true cluster (``G`` its Gram block, no copy: ``H v`` as ``c (G v)``), ``error`` bounding
        ``||c fl(G) - H||_2`` (:meth:`_hessian`); None for any other machine set."""
        parts = self._parts(mask)
        if len(parts) != 1 or not parts[0][1] or parts[0][2].size:
            return None
        cluster = parts[0][0]
        return self._block(cluster), self.scale, self._hessian_error(float(self._traces[self.membership == cluster].sum()))

    def _singular(self, mask: np.ndarray) -> bool:
        """Whether the machines in ``mask`` hold fewer points than dimensions: their ``H`` is singular."""
        m, n, d = self._points.shape
        return int(mask.sum()) * n < d

    def _solve(self, mask: np.ndarray) -> ClusterQuadratic | None:
        if self._singular(mask):
            return None
        hessian, error = self._hessian(mask)
        offset = self.scale * self._offsets[torch.as_tensor(mask, device=self._offsets.device)].sum(0)
        clusters = self._whole_clusters(mask)
        # the estimates' and the fixed point's (None at small d); only the fixed point's for a union
        # of solved clusters, which may end as soon as that is accurate
        space = krylov_space(hessian, start=offset, enough=_accurate(offset) if clusters else None)
        if clusters:  # Weyl's bounds from the clusters' certified ones: no estimate, no test
            summed = gamma(len(clusters))  # the sums' own rounding
            lower = sum(cluster.lower for cluster in clusters) * (1 - summed)
            upper = min(sum(cluster.upper for cluster in clusters) * (1 + summed),
                        float(gershgorin_upper(hessian, error)))
            top_floor = max(cluster.top_floor for cluster in clusters)
        else:
            bottom, top = extreme_quotients(hessian, space)
            lower = float(lower_bound(hessian, error, bottom))
            if not lower > 0:
                return None
            upper = float(gershgorin_upper(hessian, error))
            # a Rayleigh quotient is below lambda_max: at or past 2 / step no upper bound can help
            top_floor = float(top - error) * (1 - gamma(hessian.shape[0] + 2))
        fixed = _fixed_point(hessian, offset, space)
        if fixed is None:
            return None
        # ||x - x*|| <= ||H_exact x - b_exact|| / lambda_min, that gradient computed from the data in
        # float64 (not from H, whose float32 chunks' rounding bound would swamp it), plus its rounding
        residuals = self._residual_matrix(fixed)
        gradient, rounding = self._gradient(mask, fixed, residuals)
        return ClusterQuadratic(fixed, (gradient + rounding) / lower, lower, upper,
                                self.residual_norms(fixed, residuals), top_floor=top_floor)

    def _whole_clusters(self, mask: np.ndarray) -> list[ClusterQuadratic]:
        """The known quadratics of the true clusters ``mask`` is the union of, when it is the union
        of two or more whose quadratics are known (the collapsed partition's is); else empty.

        Their ``H`` sum to ``mask``'s exactly, so (Weyl) ``lambda_min`` is at least the sum of
        their certified lower bounds and ``lambda_max`` at most the sum of their upper ones, and
        (each ``H`` positive definite) at least the largest of their Rayleigh quotients: bounds
        that cost no Lanczos run and no Cholesky test. Looser than a test on the union's own
        ``H`` (its ``lambda_min`` exceeds the sum), they serve partitions far from the true one,
        whose fixed points mix several truths: a looser contraction factor only widens the
        interval of a run that ends far above the threshold. The true clusters are solved first
        (:meth:`true_contraction` orders the step sizes)."""
        parts = self._parts(mask)
        if len(parts) < 2 or any(not from_block or machines.size for _, from_block, machines in parts):
            return []
        clusters = [self._quadratics.get(members.tobytes()) for cluster, members in self._members
                    if mask[members].all()]
        return [] if any(cluster is None for cluster in clusters) else clusters

    def _gradient(self, mask: np.ndarray, model: torch.Tensor, residuals: torch.Tensor) -> tuple[float, float]:
        """``||c sum_{i in mask} X_i^T (X_i model - y_i)||`` (``H model - b``) from the float64 data,
        and a bound on its rounding: with ``r`` the computed residuals and ``F`` the machines'
        ``||X_S||_F^2``, ``c sqrt(F) (gamma_d sqrt(F) ||model|| + (u + gamma_{m n}) ||r||)`` (the
        residuals' dot products and subtraction, then ``X^T r`` over every point, the others'
        residuals set to 0, as ``||X_S||_2 <= sqrt(F)``), doubled for the scaling and the norms'
        own rounding. ``residuals``: :meth:`_residual_matrix` of ``model``."""
        m, n, d = self._points.shape
        inside = torch.as_tensor(mask[self._order], device=residuals.device)
        residuals = residuals * inside[:, None]
        gradient = float(self.scale * (residuals.reshape(-1) @ self._points.reshape(-1, d)).norm())
        frobenius = float(self._traces[mask].sum())
        rounding = self.scale * np.sqrt(frobenius) * (gamma(d + 2) * np.sqrt(frobenius) * float(model.norm())
                                                      + gamma(m * n + 2) * float(residuals.norm()))
        return gradient, 2 * rounding

    def _residual_matrix(self, model: torch.Tensor) -> torch.Tensor:
        """``X_i model - y_i`` of every machine, ``(m, n)`` in the copy's order (by true cluster), in
        groups of machines, one thread each (:func:`_machine_groups`)."""
        residuals = torch.empty(self._sorted_responses.shape, dtype=torch.float64, device=model.device)

        def rows(span):
            torch.sub(torch.matmul(self._points[span[0]:span[1]], model), self._sorted_responses[span[0]:span[1]],
                      out=residuals[span[0]:span[1]])

        on_one_thread_each(rows, *_machine_groups(residuals.shape[0], 2 * self._points.numel()))
        return residuals

    @one_torch_thread()
    def residual_norms(self, model: torch.Tensor, residuals: torch.Tensor | None = None) -> np.ndarray:
        """``||X_i model - y_i||`` for every machine (remembered per model: a model nobody
        chooses does not move, and is looked at again), from ``residuals`` if the caller has them
        (:meth:`_residual_matrix`)."""
        key = model.cpu().numpy().tobytes()
        if key not in self._residuals:
            residuals = self._residual_matrix(model) if residuals is None else residuals
            self._residuals[key] = residuals.norm(dim=-1)[self._unsort].cpu().numpy()
        return self._residuals[key]

    def knows_residual_norms(self, model: np.ndarray) -> bool:
        """Whether :meth:`residual_norms` of the float64 ``(d,)`` ``model`` are remembered."""
        return np.ascontiguousarray(model).tobytes() in self._residuals

    @one_torch_thread()
    def remember_residual_norms(self, models: np.ndarray) -> None:
        """Remember :meth:`residual_norms` of each of the float64 ``(J, d)`` ``models`` not known
        yet, from one pass over the data (:meth:`residual_norm_matrix`), where one model at a
        time reads the float64 copy once per model (at paper size 80 MB, 5 ms)."""
        index: dict[bytes, int] = {}
        for model in models:
            key = np.ascontiguousarray(model).tobytes()
            if key not in self._residuals and key not in index:
                index[key] = len(index)
        if not index:
            return
        norms = self.residual_norm_matrix(torch.as_tensor(np.stack([np.frombuffer(key) for key in index]),
                                                          device=self._points.device))
        for key, position in index.items():
            self._residuals[key] = norms[position]

    @one_torch_thread()
    def residual_norm_matrix(self, models: torch.Tensor, in_data_dtype: bool = False) -> np.ndarray:
        """``||X_i model_j - y_i||`` of every model of ``(J, d)`` ``models`` and machine ``i``, ``(J, m)``,
        not remembered: per group of machines (one thread each, :func:`_machine_groups`) one product
        ``X_i M^T`` with all the models ``M``. In float64 from the float64 copy, each within
        :meth:`residual_norm_rounding` of its exact value; ``in_data_dtype``: from the data as
        given, in its dtype (float32 in the protocol: half the bytes read and the GEMM rate), each
        within :meth:`residual_norm_rounding` in that dtype of the exact value at the models
        rounded to it (within ``u ||model||`` of each)."""
        points = self._sorted if in_data_dtype else self._points
        models, responses = models.to(points.dtype), self._sorted_responses.to(points.dtype)
        residuals = torch.empty((models.shape[0],) + responses.shape, dtype=points.dtype, device=points.device)

        def rows(span):  # (J, machines, n): each model's residuals
            start, stop = span
            torch.sub(torch.matmul(points[start:stop], models.T).permute(2, 0, 1), responses[start:stop],
                      out=residuals[:, start:stop])

        on_one_thread_each(rows, *_machine_groups(residuals.shape[1], 2 * points.numel() * models.shape[0]))
        return residuals.norm(dim=-1)[:, self._unsort].double().cpu().numpy()

    def residual_norm_rounding(self, model_norms: np.ndarray, norms: np.ndarray, dtype=torch.float64) -> np.ndarray:
        """A bound on ``| computed - exact |`` of :meth:`residual_norm_matrix`'s ``norms`` ``(J, m)``
        of models of norms ``model_norms`` ``(J,)``, computed in ``dtype``: each residual entry
        ``<x, theta> - y`` within ``gamma_{d+1} (|x|^T |theta| + |y|)``, so the residual within
        ``gamma_{d+1} (||X_i||_F ||theta|| + ||y_i||)``, and the norm's own sum of squares and root
        within ``gamma_{n+2}`` relative (of the exact norm, at most the computed one plus the rest),
        doubled for the bound's own rounding. With the data's dtype (float32 in the protocol) it
        bounds what the IFCA loop computes for the same model."""
        m, n, d = self._points.shape
        entry = gamma(d + 1, dtype) * (np.sqrt(self._traces)[None, :] * np.asarray(model_norms)[:, None]
                                       + self._response_norms[None, :])
        return 2 * (entry + gamma(n + 2, dtype) * (norms + entry))

    @one_torch_thread()
    def spectral_norms(self) -> np.ndarray:
        """Certified upper bounds on ``||X_i||_2`` for every machine: the largest eigenvalue of each
        machine's :meth:`_machine_grams` bounded by a Cholesky test in float64, placed by
        ``eigvalsh`` in the Grams' own dtype (an estimate: ``min(n, d)``-sized matrices, where it
        places the tests best, in half Lanczos' time at paper size); in groups of machines, one
        thread each (:func:`_machine_groups`)."""
        if self._spectral is None:
            gram, error = self._machine_grams()

            def bound(span):
                grams = gram[span[0]:span[1]]
                estimate = torch.linalg.eigvalsh(grams)[..., -1].double()
                return upper_bound(grams.double(), error[span[0]:span[1]], estimate)

            groups = _machine_groups(gram.shape[0], 10 * gram.shape[0] * gram.shape[-1] ** 3)  # eigvalsh, Cholesky
            upper = torch.cat(on_one_thread_each(bound, *groups))
            self._spectral = upper.clamp(min=0).sqrt().cpu().numpy()
        return self._spectral

    def _machine_grams(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Each machine's smaller Gram side, ``X_i X_i^T`` or ``X_i^T X_i``, in the features' own
        dtype (float32 in the protocol: half the float64 time), and a bound on each one's rounding,
        ``||fl(G) - G||_2 <= gamma_{max(n, d)} trace G`` in that dtype (doubled for the traces'
        rounding); in groups of machines, one thread each (:func:`_machine_groups`)."""
        x = self.features
        m, n, d = x.shape

        def grams(span):
            part = x[span[0]:span[1]]
            return torch.matmul(part, part.transpose(-1, -2)) if n <= d else torch.matmul(part.transpose(-1, -2), part)

        gram = torch.cat(on_one_thread_each(grams, *_machine_groups(m, 2 * m * n * d * min(n, d))))
        return gram, torch.as_tensor(2 * gamma(max(n, d) + 2, x.dtype) * self._traces, device=x.device)


def _fixed_point(hessian: torch.Tensor, offset: torch.Tensor, space: KrylovSpace | None) -> torch.Tensor | None:
    """``H^{-1} b``: the Galerkin solution in ``space`` (the Krylov space from ``b`` whose Lanczos
    vectors also give :meth:`ClusterQuadratics._solve`'s estimates, i.e. conjugate gradients'
    iterate) when its residual ``||H x - b||`` (``H x`` from the space's images) is within
    ``_GALERKIN_RESIDUAL ||b||`` (:func:`_within`), else a Cholesky solve; None where ``H`` does
    not factorise. Either is an approximation whose
    distance to the exact fixed point is certified afterwards from the float64 gradient at it,
    so the choice moves the certified error by rounding only. At paper size (a true cluster's
    ``H`` from 5000 points in d = 1000, condition about 7) 40 steps leave a relative residual of
    5e-15 against the factorisation's 1e-15, and save the factorisation (17 ms on one thread);
    ill-conditioned ones (1200 points: condition 440, residual 5e-4) go to Cholesky."""
    if space is not None:
        fixed, image = galerkin_solution(space, offset)
        if _within(image, offset):
            return fixed
    factor, info = torch.linalg.cholesky_ex(hessian)
    return None if info != 0 else torch.cholesky_solve(offset[:, None], factor)[:, 0]


def _within(image: torch.Tensor, offset: torch.Tensor) -> bool:
    """Whether ``||H x - b|| <= _GALERKIN_RESIDUAL ||b||``, given ``H x`` and ``b``."""
    return bool(torch.linalg.vector_norm(image - offset) <= _GALERKIN_RESIDUAL * torch.linalg.vector_norm(offset))


def _accurate(offset: torch.Tensor) -> Callable[[KrylovSpace], bool]:
    """:func:`~.spectral_bounds.krylov_space`'s ``enough`` for a space that only solves: its
    Galerkin solution is accurate (:func:`_within`). The collapsed partition's ``H`` (10000
    points in d = 1000 at paper size, condition about 4) gets there in 25 steps of 40."""
    return lambda space: _within(galerkin_solution(space, offset)[1], offset)


def _machine_groups(machines: int, flops: float) -> tuple[list[tuple[int, int]], float]:
    """The ``(start, stop)`` of the machines' groups for per-machine work of about ``flops``, and
    ``flops`` (:func:`~cflbounds._threads.on_one_thread_each`'s arguments): ``_MACHINE_GROUPS``
    groups when the work is worth threads (``PARALLEL_FLOPS``), else one. The choice depends on
    the sizes alone, never on the thread count, so the stored numbers cannot follow the count
    through it (and on this machine's kernels the groups give the ungrouped numbers: the
    paper-size benchmark cells' rows are identical either way)."""
    return _spans(machines, _MACHINE_GROUPS if flops >= _threads.PARALLEL_FLOPS else 1), flops


def _spans(size: int, parts: int) -> list[tuple[int, int]]:
    """The non-empty ``(start, stop)`` of ``parts`` consecutive ranges covering ``range(size)``,
    sizes within one of each other: pieces of work split the same way whatever the thread count
    (:func:`~cflbounds._threads.on_one_thread_each`)."""
    edges = [round(i * size / parts) for i in range(parts + 1)]
    return [(start, stop) for start, stop in zip(edges[:-1], edges[1:]) if start < stop]
