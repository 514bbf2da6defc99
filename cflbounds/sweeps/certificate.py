"""Certified early exit for the Fig. 2 protocol: stop a run once its outcome is certain.

A trial succeeds when some run ends (after exactly T iterations) below a distance
threshold, so a run can leave the batch as soon as its final distance is *certainly* on
one side of it, and a trial as soon as one of its runs certainly succeeds. The
certificate, for gradient averaging on the squared loss with full participation:

1. While the partition S_1..S_k stays fixed, cluster j follows gradient descent on a
   quadratic, ``theta <- theta - gamma (H_j theta - b_j)`` with
   ``H_j = (s/m) sum_{i in S_j} X_i^T X_i`` (``s`` the loss convention's gradient factor).
   With ``0 < gamma lambda(H_j) < 2`` its iterates stay in the ball ``B_j`` around the
   fixed point ``H_j^{-1} b_j`` of radius ``r_j = ||theta_j - fixed point||`` and the
   radius shrinks by ``q_j = max |1 - gamma lambda(H_j)|`` per step. A cluster nobody
   chooses does not move (radius 0).
2. If every machine strictly prefers its current model for every choice of models in the
   balls (``||X_i c - y_i|| +- ||X_i||_2 r`` bound its loss over a ball), the partition
   never changes again, so 1. holds until iteration T, by induction. Where the balls are
   still too wide and every model's machines are one true cluster, gradient descent is
   followed ahead instead until balls around its later iterates hold, each iterate before
   checked machine by machine (``FinalDistanceCertificate._path_holds``): a trial's success
   is then certified as soon as its partition settles, not once its balls have shrunk.
3. Then the final distance lies within ``sum-over-models radius q^(T-t) r`` of the
   fixed points' distance; if that interval is below (above) the threshold by a margin
   that covers float32 rounding, the run certainly succeeds (fails).

The fixed points, their errors and the eigenvalue bounds are certified for the exact
float64 copy of the data (:mod:`cflbounds.sweeps.cluster_quadratics`: Cholesky inertia tests,
every rounding bounded); the margin absorbs the rounding of the float32 iterations
(the benchmark and tests/test_certificate.py check outcomes against full runs).
"""
from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import numpy as np
import torch

from .._threads import PARALLEL_FLOPS, one_torch_thread
from .spectral_bounds import gamma

__all__ = ["FinalDistanceCertificate"]


# the most iterations _path_holds follows ahead: at paper size it needs 20-30 (step 0.1); a run that
# needs more is looked at again later, when its balls are smaller
_PATH_STEPS = 64


class _Plan(NamedTuple):
    """What a partition's interval needs at one step size, computed once: per model whether
    some machine chose it, its quadratic's fixed point (rows of the models nobody chose: zero,
    they stay where they are), that point's error and the contraction factor (1 for those);
    the fixed points' distance score when every model is chosen (else None: it depends on
    where the others stand); and every machine's residual norm at each chosen model's fixed
    point (``(m, k)``, NaN in the columns of the others). NumPy float64 throughout: a look
    checks runs one at a time, on arrays of ``k x d`` numbers, where each torch operation
    costs more than the arithmetic."""

    chosen: np.ndarray
    fixed: np.ndarray
    errors: np.ndarray
    factors: np.ndarray
    distance: float | None
    norms: np.ndarray
    step: float


class FinalDistanceCertificate:
    """An ``ifca(monitor=...)`` callback for the Fig. 2 protocol.

    ``theta_star`` ``(B, k*, d)`` float64 truths of the problems, ``quadratics`` their
    :class:`~cflbounds.sweeps.cluster_quadratics.ClusterQuadratics` (one per problem of the
    batch, in order; shared with whoever else asks them, e.g. :mod:`cflbounds.sweeps.step_order`),
    ``membership`` the true cluster of each machine (to pick which partitions are worth a
    certificate), ``iterations`` T, ``threshold`` the success distance, ``metric`` ``"nearest"``
    or ``"matched"``, ``look_every`` the iterations between looks.
    ``outcomes[(problem, run)]`` collects ``(verdict, iteration, lower, upper)`` with
    verdict ``success``, ``failure`` or ``stopped`` (its trial was decided by another run).
    """

    def __init__(self, theta_star, quadratics, membership, iterations: int, threshold: float, metric: str,
                 relative_margin: float = 1e-2, absolute_margin: float = 1e-4, look_every: int = 10):
        self.theta_star = np.asarray(theta_star, dtype=float)
        self.quadratics = list(quadratics)
        self.membership = np.asarray(membership)
        self.iterations, self.threshold, self.metric = iterations, threshold, metric
        self.look_every = look_every
        self.margin = relative_margin * threshold + absolute_margin
        self.outcomes: dict[tuple[int, int], tuple] = {}
        self._previous: dict[tuple[int, int], tuple[bytes, int]] = {}  # run -> (partition, looks held)
        self._plans: dict[tuple[int, bytes, float], _Plan | None] = {}  # (problem, partition, step) -> plan
        self._ahead: tuple = ()  # this look's runs from the current one on, and its arrays (__call__)

    def _worth_a_look(self, problem, partition, looks, shared, runs, remaining, view) -> bool:
        """Whether a certificate is worth its cost for a run whose partition has held for
        ``looks`` looks.

        A known partition costs next to nothing: it is looked at every time. A new one costs
        the Gram matrices of the machines
        :meth:`~cflbounds.sweeps.cluster_quadratics.ClusterQuadratics.gram_machines` counts,
        ``2 n d^2`` float64 flops each; it is computed only once it has held for a look (a
        partition in flux is not solved) and if the run-iterations a certificate could save are
        worth that many times more: four for a partition within 5% of the true one up to
        relabelling (the only kind that can end below the threshold: it can decide its trial,
        saving all ``runs`` of it; float64 runs at half the float32 rate, and a certificate may
        fail), sixteen for another (it can only retire the ``shared`` runs that hold it, and a
        partition far from the true one seldom holds). An iteration of one run costs
        ``2 m n d (k + 1)`` float32 flops (:func:`~cflbounds.algorithms.squared_loss.iteration_flops`)."""
        machines = sum(self.quadratics[problem].gram_machines(partition == j) for j in np.unique(partition))
        if machines == 0:
            return True
        if looks < 1:
            return False
        m, n, d = view.features.shape[1:]
        k = view.models.shape[2]
        near_true = self._misclustered(partition) <= 0.05 * partition.size
        saved = (runs if near_true else shared.get(_canonical(partition), 0)) * remaining
        return saved * 2 * m * n * d * (k + 1) >= (4 if near_true else 16) * machines * 2 * n * d * d

    def _misclustered(self, partition) -> int:
        """Machines outside their true cluster under the best relabelling of the models."""
        k = int(max(partition.max(), self.membership.max())) + 1
        return min(int(np.sum(partition != np.asarray(labels)[self.membership]))
                   for labels in itertools.permutations(range(k), int(self.membership.max()) + 1))

    # -- the monitor ----------------------------------------------------------------------------
    @one_torch_thread()  # the intervals are stored: the same digits on any thread count
    def __call__(self, view) -> np.ndarray:
        retire = np.zeros(view.run.shape, dtype=bool)
        assignment = view.assignment.cpu().numpy()
        steps = view.step_size.double().cpu().numpy()
        models = view.models.double().cpu().numpy()  # (B, C, k, d): one copy per look, not one per run
        remaining = self.iterations - view.iteration
        occupied = view.run >= 0
        shared = functools.cache(lambda row: _partition_counts(assignment[row], occupied[row]))
        runs = list(zip(*np.nonzero(occupied)))
        for position, (row, slot) in enumerate(runs):
            # what the certainty checks still to come at this look may need (:meth:`_idle_models_ahead`)
            self._ahead = (runs[position:], view.problem, assignment, steps, models, remaining)
            if retire[row].all():
                continue  # the trial was decided at this look
            problem, run = int(view.problem[row]), int(view.run[row, slot])
            partition = assignment[row, slot]
            key = partition.tobytes()
            previous, looks = self._previous.get((problem, run), (None, 0))
            looks = looks + 1 if previous == key else 0
            self._previous[(problem, run)] = (key, looks)
            if np.any(partition < 0):
                continue
            plan_key = (problem, key, float(steps[row, slot]))
            if plan_key not in self._plans:  # a planned partition is looked at every time: it costs no Gram
                if not self._worth_a_look(problem, partition, looks, shared(row), int(occupied[row].sum()),
                                          remaining, view):
                    continue
                self._plans[plan_key] = self._plan(problem, partition, plan_key[2], view.models.shape[2])
            if self._plans[plan_key] is None:
                continue  # no certificate for this partition at this step
            decided = self._verdict(models[row, slot], problem, partition, self._plans[plan_key], remaining)
            if decided is None:
                continue
            verdict, lower, upper = decided
            self.outcomes[(problem, run)] = (verdict, view.iteration, lower, upper)
            if verdict == "success":
                retire[row] = True  # the trial is decided: every run of the problem leaves
            else:
                retire[row, slot] = True
        for row in np.flatnonzero(retire.all(axis=1) & (view.run >= 0).any(axis=1)):
            for slot in np.flatnonzero(view.run[row] >= 0):
                key = (int(view.problem[row]), int(view.run[row, slot]))
                self.outcomes.setdefault(key, ("stopped", view.iteration, np.nan, np.nan))
        return retire

    def _plan(self, problem, partition, step, k) -> _Plan | None:
        """The partition's :class:`_Plan` at ``step`` with ``k`` models; None when some chosen
        model's quadratic is not certified positive definite or does not contract (no
        certificate)."""
        quadratics = self.quadratics[problem]
        chosen = np.array([(partition == j).any() for j in range(k)])
        d = self.theta_star.shape[-1]
        fixed, norms = np.zeros((k, d)), np.full((len(partition), k), np.nan)
        errors, factors = np.zeros(k), np.ones(k)
        masks = [partition == j for j in np.flatnonzero(chosen)]
        contractions = quadratics.contractions(masks, step)  # the chosen models' quadratics at once
        if None in contractions:
            return None
        for j, mask, factor in zip(np.flatnonzero(chosen), masks, contractions):
            quadratic = quadratics.quadratic(mask)
            fixed[j], errors[j], factors[j] = quadratic.fixed.cpu().numpy(), quadratic.fixed_error, factor
            norms[:, j] = quadratic.residual_norms
        distance = self._distance(problem, fixed) if chosen.all() else None
        return _Plan(chosen, fixed, errors, factors, distance, norms, step)

    def _distance(self, problem, centers: np.ndarray) -> float:
        """The protocol's distance score of the ``(k, d)`` centers to the problem's truths."""
        return _score(np.linalg.norm(centers[:, None] - self.theta_star[problem][None], axis=-1), self.metric)

    def _interval(self, models: np.ndarray, problem, plan: _Plan, remaining):
        """``(verdict, lower, upper, radii)`` of a run whose ``(k, d)`` float64 ``models`` hold the
        partition of ``plan``: its final distance lies in ``[lower, upper]``, certainly below
        (``success``) or above (``failure``) the threshold by the margin, else verdict None, if
        the partition holds; ``radii`` bound each model's distance to its fixed point."""
        centers = np.where(plan.chosen[:, None], plan.fixed, models)  # a model nobody chose stays where it is
        # the iterates stay within ||theta_j - x*|| <= radius of the exact fixed point x*, which is
        # within the error of the computed one
        radii = np.linalg.norm(models - centers, axis=-1) + plan.errors
        final_radius = plan.factors ** remaining * radii + plan.errors
        center_distance = self._distance(problem, centers) if plan.distance is None else plan.distance
        lower, upper = center_distance - final_radius.mean(), center_distance + final_radius.mean()
        verdict = "success" if upper < self.threshold - self.margin else \
            "failure" if lower > self.threshold + self.margin else None
        return verdict, lower, upper, radii

    def _verdict(self, models: np.ndarray, problem, partition, plan: _Plan, remaining):
        """``(verdict, lower, upper)`` if the run's final distance is certainly below
        (``success``) or above (``failure``) the threshold by the margin, else None. The
        interval comes first (it needs only the partition's ``plan``); the partition's certainty,
        which needs every machine's loss at every model, is checked only when the interval
        decides. ``models``: the run's ``(k, d)`` models in float64."""
        quadratics = self.quadratics[problem]
        verdict, lower, upper, radii = self._interval(models, problem, plan, remaining)
        if verdict is None:
            return None
        norms = plan.norms.copy()  # (m, k): the models nobody chose filled in below
        idle = np.flatnonzero(~plan.chosen)
        m, n, d = quadratics.features.shape
        if 2 * m * n * d >= PARALLEL_FLOPS and not all(quadratics.knows_residual_norms(models[j]) for j in idle):
            quadratics.remember_residual_norms(self._idle_models_ahead(problem))
        for j in idle:
            norms[:, j] = quadratics.residual_norms(torch.as_tensor(models[j], device=quadratics.features.device))
        spectral = quadratics.spectral_norms()
        # every iterate lies within radii + errors of the computed fixed point
        if not (_ball_holds(norms, spectral, radii + plan.errors, partition)
                or self._path_holds(models, quadratics, partition, plan, remaining, spectral)):
            return None  # some machine could switch models: the partition is not certain
        return verdict, lower, upper

    def _path_holds(self, models, quadratics, partition, plan: _Plan, remaining, spectral) -> bool:
        """Whether the partition certainly holds for the ``remaining`` iterations, by following
        gradient descent ahead where the balls of :func:`_ball_holds` are still too wide: for a
        partition whose every model's machines are exactly one true cluster (``H = c G`` known,
        :meth:`~cflbounds.sweeps.cluster_quadratics.ClusterQuadratics.cluster_hessian`).

        While the partition holds, model ``j`` is at ``x*_j + P_j^s (theta_j - x*_j)`` after ``s``
        more iterations, ``P_j = I - gamma H_j`` (``||P_j|| < 1``: the plan's contraction factor)
        and ``x*_j`` the exact fixed point. The offsets ``e_s`` from the computed fixed point are
        followed in float64 until the balls around it of radii ``||e_s|| + delta_s + 2 error_j``
        hold (:func:`_ball_holds`; they then hold at every later step), at step ``L``, or until
        they cover every remaining iteration; at most ``_PATH_STEPS``. The ``L`` iterates before
        are checked one by one: every machine's residual norm at each model, from the data in one
        pass in its own dtype (:meth:`~cflbounds.sweeps.cluster_quadratics.ClusterQuadratics.residual_norm_matrix`),
        must be lower at its own model than at every other, each norm widened by ``||X_i||_2``
        times the iterate's distance to the exact one (``2 error_j + delta_s``, and its rounding to
        float64 and to the data's dtype), by that pass's rounding and by what the loop's own
        evaluation in the data's dtype may round (each
        :meth:`~cflbounds.sweeps.cluster_quadratics.ClusterQuadratics.residual_norm_rounding`).

        ``delta_s`` bounds ``||e_s - P^s e_0||``: ``e_0 = theta - x`` rounds by ``u ||e_0||``, and
        each step ``e - (gamma c) (G e)`` by ``gamma (error + gamma_{d+2} F) ||e||`` for the product
        (``error`` bounds ``||c G - H||_2``; ``F = sqrt(d) (lambda_max bound + error)`` bounds
        ``|| |c G| ||_2``) plus ``gamma_4 (1 + gamma F) ||e||`` for the scalings and the
        subtraction; ``P`` does not grow earlier errors. Like the balls, this follows exact
        gradient descent on the data; the float32 iterates differ by their own rounding, which the
        margins absorb (module docstring). At paper size (step 0.1) ``L`` is 20-31 and a check
        takes 45-70 ms (2 threads; the pass over the data 13-35 ms of it): a trial's success is
        certified 20-30 iterations sooner, which its batch of runs would spend at 12 ms each."""
        k = models.shape[0]
        if not plan.chosen.all():
            return False
        hessians = [quadratics.cluster_hessian(partition == j) for j in range(k)]
        if any(hessian is None for hessian in hessians):
            return False
        device = quadratics.features.device
        fixed = torch.as_tensor(plan.fixed, device=device)
        offsets = [torch.as_tensor(models[j], device=device) - fixed[j] for j in range(k)]
        step, d = plan.step, models.shape[-1]
        rates = [step * scale for _, scale, _ in hessians]  # gamma c
        # || |c G| ||_2 <= ||c G||_F <= sqrt(d) ||c G||_2 <= sqrt(d) (lambda_max(H) + error)
        frobenius = [np.sqrt(d) * (quadratics.quadratic(partition == j).upper + error) * (1 + gamma(2))
                     for j, (_, _, error) in enumerate(hessians)]
        drift = gamma(1) * np.array([float(offset.norm()) for offset in offsets])  # e_0 = theta - x, rounded
        path, drifts = [], []
        while len(path) < remaining:  # else every remaining iteration's assignment is on the path
            sizes = np.array([float(offset.norm()) for offset in offsets])
            if _ball_holds(plan.norms, spectral, sizes + drift + 2 * plan.errors, partition):
                break
            if len(path) == _PATH_STEPS:
                return False  # the balls shrink too slowly: no certificate at this look
            path.append(torch.stack(offsets))
            drifts.append(drift.copy())
            for j, (gram, _, error) in enumerate(hessians):
                offsets[j] = offsets[j] - rates[j] * (gram @ offsets[j])
                drift[j] += (step * (error + gamma(gram.shape[-1] + 2) * frobenius[j])
                             + gamma(4) * (1 + step * frobenius[j])) * sizes[j]
        if not path:
            return True
        steps = len(path)
        iterates = (fixed[None] + torch.stack(path)).reshape(steps * k, -1)  # step-major: (L k, d)
        model_norms = iterates.norm(dim=-1).cpu().numpy() * (1 + gamma(d + 2))
        dtype = quadratics.features.dtype
        norms = quadratics.residual_norm_matrix(iterates, in_data_dtype=True)  # (L k, m)
        # this computation's rounding and the loop's own (both in the data's dtype), and the iterate's
        # distance to the exact one, plus its rounding to float64 and to the data's dtype
        slack = (2 * quadratics.residual_norm_rounding(model_norms, norms, dtype)
                 + spectral[None, :] * (2 * np.tile(plan.errors, steps) + np.concatenate(drifts)
                                        + (gamma(1) + gamma(1, dtype)) * model_norms)[:, None]).reshape(steps, k, -1)
        norms = norms.reshape(steps, k, -1).transpose(0, 2, 1)  # (L, m, k)
        slack = slack.transpose(0, 2, 1)
        return _prefers_own(norms + slack, norms - slack, partition)

    def _idle_models_ahead(self, problem) -> np.ndarray:
        """The ``(J, d)`` models nobody chose of the problem's runs from the current one to the
        last of this look whose partition is planned and whose interval decides: the certainty
        checks this look may ask the residual norms of, computed in one pass over the data
        (:meth:`~cflbounds.sweeps.cluster_quadratics.ClusterQuadratics.remember_residual_norms`)
        rather than one per model. Asked only where one pass costs more than handing work to
        threads (``PARALLEL_FLOPS``: at paper size, 5 ms against about 20 us per interval here;
        at IFCA.F2's default scale the intervals would cost more than the passes they save). A
        run whose trial an earlier one decides is not checked, so its models may be computed for
        nothing; no check's outcome depends on it."""
        runs, problems, assignment, steps, models, remaining = self._ahead
        idle = []
        for row, slot in runs:
            partition = assignment[row, slot]
            if int(problems[row]) != problem:
                break  # a problem's runs are one row of the batch, in order
            if np.any(partition < 0):
                continue
            plan = self._plans.get((problem, partition.tobytes(), float(steps[row, slot])))
            if plan is None or plan.chosen.all():
                continue
            if self._interval(models[row, slot], problem, plan, remaining)[0] is not None:
                idle.extend(models[row, slot][~plan.chosen])
        return np.stack(idle)


def _ball_holds(norms: np.ndarray, spectral: np.ndarray, reach: np.ndarray, partition: np.ndarray) -> bool:
    """Whether every machine strictly prefers its model wherever the models are in balls of radii
    ``reach`` ``(k,)`` around points where its residual norms are ``norms`` ``(m, k)``: its loss
    over a ball is within ``||X_i||_2 <= spectral[i]`` times the radius of the center's."""
    widening = spectral[:, None] * reach[None, :]
    return _prefers_own(norms + widening, np.clip(norms - widening, 0, None), partition)


def _prefers_own(upper: np.ndarray, lower: np.ndarray, partition: np.ndarray) -> bool:
    """Whether every machine's residual norm at its own model (``partition``) is certainly below
    its norm at every other: ``upper`` and ``lower`` ``(..., m, k)`` bound the norms, the own one
    within a relative margin of 1e-6."""
    machines = np.arange(partition.size)
    worst_own = upper[..., machines, partition]
    best_other = lower.copy()
    best_other[..., machines, partition] = np.inf
    return bool(np.all(worst_own * (1 + 1e-6) < best_other.min(axis=-1)))


def _canonical(partition: np.ndarray) -> bytes:
    """A partition's key up to relabelling of the clusters: its machine sets, sorted."""
    return _canonical_of(partition.tobytes(), partition.dtype.str)


@functools.lru_cache(maxsize=1 << 16)
def _canonical_of(key: bytes, dtype: str) -> bytes:
    """:func:`_canonical` of the partition stored in ``key`` (remembered: every look asks it of
    every run, and runs hold few distinct partitions)."""
    partition = np.frombuffer(key, dtype=dtype)
    return b"|".join(sorted((partition == j).tobytes() for j in np.unique(partition)))


def _partition_counts(assignment: np.ndarray, occupied: np.ndarray) -> dict:
    """How many of a problem row's runs (``occupied`` slots of its ``assignment``) hold each
    partition, up to relabelling."""
    keys = [_canonical(assignment[slot]) for slot in np.flatnonzero(occupied)]
    return {key: keys.count(key) for key in set(keys)}


def _score(distances: np.ndarray, metric: str) -> float:
    """The protocol's distance of models to truths from the ``(k, k*)`` table."""
    if metric == "nearest":
        return float(distances.min(axis=1).mean())
    k = distances.shape[0]
    return float(min(distances[np.arange(k), list(p)].mean() for p in itertools.permutations(range(k))))
