"""The three problem families CFL-MGD's claims are measured on, with their exact constants.

* ``mlr``: IFCA's mixed linear regression (mu = L = 2; sigma^2, v^2 closed forms of the
  distance), centers ``(Delta/sqrt 2) e_1, (Delta/sqrt 2) e_2``;
* ``quadratics``: per-cluster stochastic quadratics with ``mu != L`` (every constant closed);
* ``logistic``: the regularized logistic mixture (``mu = lam``, ``L = lam + 1/4`` exact;
  sigma^2, v^2 by quadrature at the points used).

A family builds a batch of problems for given per-problem seeds and says how the
algorithms are to draw ``n'`` points per batch; its constants come from the generators,
never from a run. All families have two equal clusters (``l = 1/2``, ``P = 2``). The
readings the theory checks share: Assumption 4's ``<~ 1`` with constant ``A4_CONSTANT`` and
Lemma 2's failure probability ``FAILURE``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cflbounds.synthetic import make_logistic_mixture, make_mixed_linear_regression
from cflbounds.synthetic.mixed_linear_regression import gradient_variance as mlr_gradient_variance, loss_variance as mlr_loss_variance
from cflbounds.synthetic.quadratics import make_quadratic_federation

__all__ = ["Family", "FAMILIES", "init_radius", "placed_models", "P", "PROPORTION", "A4_CONSTANT", "FAILURE"]

P, PROPORTION = 2, 0.5
A4_CONSTANT = 1.0  # Assumption 4's max||chi*|| <~ 1 read as <= 1, as the proof uses it (A10, A26)
FAILURE = 0.1  # P lambda5, Lemma 2's failure probability the lambdas are chosen for


@dataclass(frozen=True)
class Family:
    """``kind`` (mlr | quadratics | logistic), dimension ``d``, separation ``delta``,
    ``noise`` (MLR's sigma, the quadratics' tau; unused by the logistic mixture),
    curvature (``mu``, ``L``) where the family takes them as parameters, and the
    logistic ``regularization``."""

    kind: str
    d: int
    delta: float = 1.0
    noise: float = 0.1
    mu: float = 1.0
    L: float = 4.0
    regularization: float = 0.1

    @property
    def label(self) -> str:
        return {"mlr": f"mixed linear regression (sigma={self.noise:g})",
                "quadratics": f"quadratics (mu={self.mu:g}, L={self.L:g}, tau={self.noise:g})",
                "logistic": f"logistic mixture (lam={self.regularization:g})"}[self.kind] + f", Delta={self.delta:g}"

    @property
    def strong_convexity(self) -> float:
        return {"mlr": 2.0, "quadratics": self.mu, "logistic": self.regularization}[self.kind]

    @property
    def smoothness(self) -> float:
        return {"mlr": 2.0, "quadratics": self.L, "logistic": self.regularization + 0.25}[self.kind]

    def problems(self, seeds, m: int, n_prime: int, iterations: int, resample: str, device: str = "cpu"):
        """``(problem batch, algorithm keywords)`` for batches of ``n_prime`` points:
        ``split`` stores ``2 T n'`` points per machine (Sec. 5), ``fresh`` draws them, ``none``
        stores ``n'`` points used in every round."""
        seeds = list(seeds)
        stored = 2 * iterations * n_prime if resample == "split" else n_prime
        if self.kind == "quadratics":
            problem = make_quadratic_federation(m, self.d, clusters=P, hessians="cluster", strong_convexity=self.mu,
                                                smoothness=self.L, separation=self.delta, noise_std=self.noise,
                                                batch_size=len(seeds), seed=seeds, device=device)
            return problem, {"samples": n_prime, "resample": resample}
        if self.kind == "logistic":
            problem = make_logistic_mixture(P, m, stored, self.d, separation=self.delta,
                                            regularization=self.regularization, batch_size=len(seeds), seed=seeds,
                                            device=device)
            return problem, {"resample": resample}
        centers = self.delta / np.sqrt(2.0) * np.eye(self.d)[:P]
        problem = make_mixed_linear_regression(P, m, stored, self.d, sigma=self.noise, theta_star=centers,
                                               batch_size=len(seeds), seed=seeds, device=device)
        return problem, {"resample": resample}

    # -- exact constants of a built batch ---------------------------------------------------
    @staticmethod
    def truth(problem) -> np.ndarray:
        truth = getattr(problem, "theta_star_exact", None)
        return problem.cluster_minimizers if truth is None else truth

    def loss_variance(self, problem, points, cluster: int) -> np.ndarray:
        """``Var_{D_cluster} f(w)`` at ``points`` ``(B, ..., d)`` (sigma^2 of Assumption 3 there)."""
        u = points - self.truth(problem)[:, cluster].reshape((problem.batch_size,) + (1,) * (points.ndim - 2) + (-1,))
        if self.kind == "mlr":
            return mlr_loss_variance(np.linalg.norm(u, axis=-1), self.noise)
        if self.kind == "logistic":
            return problem.loss_variance(points, cluster)
        hessian = problem.cluster_hessians[:, cluster].reshape((problem.batch_size,) + (1,) * (points.ndim - 2)
                                                               + (self.d, self.d))
        curved = np.einsum("...ij,...j->...i", hessian, u)
        frobenius2 = np.square(problem.cluster_hessians[:, cluster]).sum(axis=(-2, -1))
        return self.noise**2 * np.sum(curved**2, axis=-1) + 0.5 * self.noise**4 * frobenius2.reshape(
            (problem.batch_size,) + (1,) * (points.ndim - 2))

    def variance_bounds(self, problem, radius: float) -> tuple[float, float]:
        """``(sigma^2, v^2)`` of Assumption 3 where the proofs use them: every model within
        ``radius`` of its own optimum, under every cluster's data (the farthest optimum
        is ``Delta + radius`` away). MLR and quadratics in closed form; the logistic mixture
        at the farthest points along the line of centers (quadrature)."""
        reach = self.delta + radius
        if self.kind == "mlr":
            return float(mlr_loss_variance(reach, self.noise)), float(mlr_gradient_variance(reach, self.noise, self.d))
        if self.kind == "quadratics":
            frobenius2 = np.square(problem.hessians_exact).sum(axis=(-2, -1)).max()
            sigma2 = self.noise**2 * reach**2 * self.L**2 + 0.5 * self.noise**4 * frobenius2
            return float(sigma2), float(self.noise**2 * frobenius2)
        truth = self.truth(problem)
        line = (truth[:, 1] - truth[:, 0]) / self.delta
        points = truth[:, 1] + radius * line  # cluster 1's model, pushed away from cluster 0's optimum
        return float(problem.loss_variance(points, 0).max()), float(problem.gradient_variance(points, 0).max())

    def excess_loss(self, problem, points, cluster: int) -> np.ndarray:
        """``phi_p(w) - phi_p(chi*_p)`` of the cluster's population objective at ``points`` ``(B, ..., d)``."""
        truth = self.truth(problem)[:, cluster].reshape((problem.batch_size,) + (1,) * (points.ndim - 2) + (-1,))
        u = points - truth
        if self.kind == "mlr":
            return np.sum(u**2, axis=-1)
        if self.kind == "logistic":
            return problem.population_loss(points, cluster) - problem.min_loss()[:, cluster].reshape(
                (problem.batch_size,) + (1,) * (points.ndim - 2))
        hessian = problem.cluster_hessians[:, cluster].reshape((problem.batch_size,) + (1,) * (points.ndim - 2)
                                                               + (self.d, self.d))
        return 0.5 * np.einsum("...i,...ij,...j->...", u, hessian, u)


FAMILIES = ("mlr", "quadratics", "logistic")


def init_radius(family: Family) -> float:
    """Assumption 4's initial radius ``(1/4) sqrt(mu/L) Delta``."""
    return 0.25 * np.sqrt(family.strong_convexity / family.smoothness) * family.delta


def placed_models(truth: np.ndarray, radius: float) -> np.ndarray:
    """Both models moved by ``radius`` along the line of centers, towards cluster 1's side:
    cluster 0's model is as far as Assumption 4 allows from its optimum, cluster 1's as
    close to cluster 0's optimum as it allows (the hardest case for cluster 0's clients in
    Lemma 1's proof). ``(B, 2, d)`` -> ``(B, 2, d)``."""
    line = (truth[:, 0] - truth[:, 1]) / np.linalg.norm(truth[:, 0] - truth[:, 1], axis=-1, keepdims=True)
    return truth + radius * line[:, None, :]
