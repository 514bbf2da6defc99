"""Certified eigenvalue bounds (cflbounds.sweeps.spectral_bounds) and the cluster quadratics
built on them (cflbounds.sweeps.cluster_quadratics), against numpy's eigvalsh and lstsq.

A bound must hold whatever its estimate was: planted wrong estimates (far inside the
spectrum) must give a looser bound, never a wrong one.
"""
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from conftest import examples

import cflbounds._threads as threads_module
from cflbounds.sweeps import spectral_bounds
from cflbounds.sweeps.cluster_quadratics import ClusterQuadratics
from cflbounds.sweeps.spectral_bounds import gershgorin_upper, lower_bound, rayleigh_quotient, upper_bound


@pytest.fixture(scope="module", autouse=True, params=["default estimates", "Lanczos at every size"])
def estimates(request):
    """Every test runs with both estimators placing the tests: the default (``eigh`` up to
    ``_EIGH_SIZE``, Lanczos above) and Lanczos forced at every size (module-scoped: hypothesis
    refuses function-scoped fixtures)."""
    default = spectral_bounds._EIGH_SIZE
    if request.param == "Lanczos at every size":
        spectral_bounds._EIGH_SIZE = 0
    yield request.param
    spectral_bounds._EIGH_SIZE = default


def gram(seed: int, rows: int, p: int, batch=()) -> torch.Tensor:
    x = torch.as_tensor(np.random.default_rng(seed).standard_normal((*batch, rows, p)))
    return x.transpose(-1, -2) @ x


@examples(40)
@given(seed=st.integers(0, 2**32 - 1), p=st.integers(1, 40), extra=st.integers(0, 60))
def test_bounds_contain_the_spectrum(seed, p, extra):
    """On Gram matrices of every conditioning (rows from p to p + 60; square ones are badly
    conditioned), lower <= lambda_min and lambda_max <= upper <= Gershgorin."""
    matrix = gram(seed, p + extra, p)
    exact = np.linalg.eigvalsh(matrix.numpy())
    lower = lower_bound(matrix)
    upper = upper_bound(matrix)
    assert float(lower) <= exact[0]
    assert exact[-1] <= float(upper) <= float(gershgorin_upper(matrix))
    assert float(rayleigh_quotient(matrix)) <= exact[-1] * (1 + 1e-12)


@pytest.mark.parametrize("p", [100, 400])
def test_bounds_are_tight_on_well_conditioned_matrices(p):
    """Rows = 5 p (the Fig. 2 clusters' shape): the estimates (Lanczos' too) are close enough that
    the first tests, 1/64 away, pass: both bounds within 2 % of the exact extremes, so a
    contraction factor built on them is close to the true one."""
    matrix = gram(0, 5 * p, p)
    exact = np.linalg.eigvalsh(matrix.numpy())
    assert 0.98 * exact[0] <= float(lower_bound(matrix)) <= exact[0]
    assert exact[-1] <= float(upper_bound(matrix)) <= 1.02 * exact[-1]


def test_bounds_placed_by_eigh_are_within_a_thousandth(estimates):
    """Up to ``_EIGH_SIZE`` the default estimates are eigh's, exact to rounding, so the first tests,
    2^-10 away, pass (p = 100: the IFCA.F2 claim's d). Lanczos forced there is held to 2 %."""
    matrix = gram(0, 5 * 100, 100)
    exact = np.linalg.eigvalsh(matrix.numpy())
    slack = 2.0**-10 + 1e-9 if estimates == "default estimates" else 0.02
    assert (1 - slack) * exact[0] <= float(lower_bound(matrix)) <= exact[0]
    assert exact[-1] <= float(upper_bound(matrix)) <= (1 + slack) * exact[-1]


@pytest.mark.parametrize("matrix", [torch.eye(6, dtype=torch.float64), torch.diag(torch.arange(1.0, 4.0, dtype=torch.float64)),
                                    torch.zeros(5, 5, dtype=torch.float64)], ids=["identity", "3 eigenvalues", "zero"])
def test_estimates_survive_an_exhausted_krylov_space(matrix):
    """Krylov spaces smaller than the steps (a start that spans an invariant subspace after one or a
    few products; the zero matrix): the estimates stay Rayleigh quotients of unit vectors, so
    they lie in the spectrum's hull, and the bounds hold."""
    exact = np.linalg.eigvalsh(matrix.numpy())
    estimate = float(rayleigh_quotient(matrix))
    assert exact[0] - 1e-12 <= estimate <= exact[-1] + 1e-12
    assert float(upper_bound(matrix)) >= exact[-1]
    lower = float(lower_bound(matrix))
    assert lower <= exact[0] and (exact[0] == 0 or lower >= 0.98 * exact[0])


def test_batched_bounds_match_one_at_a_time():
    batch = gram(1, 30, 8, batch=(5,))
    lower, upper = lower_bound(batch), upper_bound(batch)
    for i in range(5):
        assert float(lower[i]) == pytest.approx(float(lower_bound(batch[i])), rel=1e-12)
        assert float(upper[i]) == pytest.approx(float(upper_bound(batch[i])), rel=1e-12)


def test_wrong_estimates_give_looser_bounds_never_wrong_ones():
    """Planted: estimates far inside the spectrum (10x the smallest, a tenth of the largest).
    The tests at those shifts fail, the bounds fall back further out and still hold."""
    matrix = gram(2, 200, 50)
    exact = np.linalg.eigvalsh(matrix.numpy())
    lower = lower_bound(matrix, estimate=torch.tensor(10 * exact[0]))
    assert float(lower) <= exact[0]
    upper = upper_bound(matrix, estimate=torch.tensor(exact[-1] / 10))
    assert float(upper) >= exact[-1]


def test_singular_and_indefinite_matrices_have_no_lower_bound():
    singular = gram(3, 5, 10)  # rank 5 of 10
    assert float(lower_bound(singular)) == -np.inf
    indefinite = torch.diag(torch.tensor([1.0, -1.0], dtype=torch.float64))
    assert float(lower_bound(indefinite)) == -np.inf
    assert float(upper_bound(indefinite)) >= 1.0


def test_a_negative_estimate_cannot_give_an_indefinite_matrix_a_finite_bound():
    """Planted: an estimate far below an indefinite matrix's lambda_min puts the shifted tests at
    a negative shift, where one would pass; shifts stop at 0, so the matrix keeps no bound."""
    indefinite = torch.diag(torch.tensor([1.0, -1.0], dtype=torch.float64))
    assert float(lower_bound(indefinite, estimate=torch.tensor(-10.0, dtype=torch.float64))) == -np.inf


def _regression_quadratic(seed: int, rows: int, p: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``H = X^T X / rows`` and ``b = X^T y / rows`` of a least-squares problem, ``y = X theta + noise``:
    the start the fixed points' Krylov spaces take (b leans towards H's top eigenvectors)."""
    rng = np.random.default_rng(seed)
    x = torch.as_tensor(rng.standard_normal((rows, p)))
    y = x @ torch.ones(p, dtype=torch.float64) / np.sqrt(p) + 0.1 * torch.as_tensor(rng.standard_normal(rows))
    return x.T @ x / rows, x.T @ y / rows


@pytest.mark.parametrize("p", [200, 400])
def test_a_krylov_space_from_the_right_hand_side_solves_and_places_the_tests(p):
    """The space the fixed point and the estimates share (5p points, as a paper-size true
    cluster): its Galerkin solution is the system's to 1e-12 with a residual orthogonal to the
    space, and the bounds its Ritz vectors place contain lambda_min within 2 %."""
    hessian, offset = _regression_quadratic(p, 5 * p, p)
    space = spectral_bounds.krylov_space(hessian, start=offset)
    solution, image = spectral_bounds.galerkin_solution(space, offset)
    exact = torch.linalg.solve(hessian, offset)
    torch.testing.assert_close(image, hessian @ solution, rtol=1e-12, atol=0)
    assert float((solution - exact).norm() / exact.norm()) <= 1e-12
    assert float((space.basis @ (hessian @ solution - offset)).norm()) <= 1e-12 * float(offset.norm())
    bottom, top = spectral_bounds.extreme_quotients(hessian, space)
    eigenvalues = np.linalg.eigvalsh(hessian.numpy())
    assert 0.98 * eigenvalues[0] <= float(lower_bound(hessian, estimate=bottom)) <= eigenvalues[0]
    assert 0.99 * eigenvalues[-1] <= float(top) <= eigenvalues[-1] * (1 + 1e-12)


@pytest.mark.parametrize("rhs", ["zero", "in a 2-dimensional invariant subspace"])
def test_an_exhausted_krylov_space_still_solves_exactly(rhs):
    """A right-hand side the Krylov space exhausts on (zero rows in its basis, a singular small
    system): the Galerkin solution is the exact one, finite."""
    matrix = torch.diag(torch.arange(1.0, 251.0, dtype=torch.float64))
    offset = torch.zeros(250, dtype=torch.float64)
    if rhs != "zero":
        offset[[0, 5]] = 1.0
    solution = spectral_bounds.galerkin_solution(spectral_bounds.krylov_space(matrix, start=offset), offset)[0]
    torch.testing.assert_close(solution, offset / torch.diagonal(matrix), rtol=1e-13, atol=1e-15)


def test_a_space_that_only_solves_ends_once_its_solution_is_accurate():
    """``enough`` ends the space early: on a well-conditioned system (condition about 4, as the
    collapsed partition's at paper size) the solution is accurate before 40 steps, and the
    shorter space's solution is as accurate as the check asked; ``enough`` never True runs
    the full 40 steps."""
    from cflbounds.sweeps.cluster_quadratics import _GALERKIN_RESIDUAL, _accurate
    hessian, offset = _regression_quadratic(1, 10 * 200, 200)
    asked = []
    space = spectral_bounds.krylov_space(hessian, start=offset,
                                         enough=lambda part: asked.append(len(part.basis)) or _accurate(offset)(part))
    assert len(space.basis) < spectral_bounds._LANCZOS_STEPS and asked[-1] == len(space.basis)
    assert all(steps % spectral_bounds._CHECK_STEPS == 0 for steps in asked)
    solution = spectral_bounds.galerkin_solution(space, offset)[0]
    assert float((hessian @ solution - offset).norm()) <= 2 * _GALERKIN_RESIDUAL * float(offset.norm())
    never = spectral_bounds.krylov_space(hessian, start=offset, enough=lambda part: False)
    assert len(never.basis) == spectral_bounds._LANCZOS_STEPS


def test_small_matrices_take_no_krylov_space(estimates):
    """Up to ``_EIGH_SIZE`` (160) eigh places the tests and Cholesky solves: no Lanczos loop
    (unless Lanczos is forced at every size)."""
    space = spectral_bounds.krylov_space(gram(0, 500, 100))
    assert (space is None) == (estimates == "default estimates")


def test_a_fixed_point_the_krylov_space_cannot_give_comes_from_cholesky(monkeypatch):
    """Planted: a condition number of 10^8 leaves the 40-step Galerkin solution far from the
    system's; ``_fixed_point`` sees it in the residual and solves by Cholesky (the same numbers
    as a direct Cholesky solve), while a well-conditioned system keeps the Galerkin solution."""
    from cflbounds.sweeps import cluster_quadratics
    p = 200
    rng = np.random.default_rng(7)
    basis = torch.linalg.qr(torch.as_tensor(rng.standard_normal((p, p))))[0]
    ill = basis @ torch.diag(torch.logspace(0, 8, p, dtype=torch.float64)) @ basis.T
    ill = (ill + ill.T) / 2
    offset = torch.as_tensor(rng.standard_normal(p))
    factorised = []
    cholesky = torch.linalg.cholesky_ex
    monkeypatch.setattr(torch.linalg, "cholesky_ex", lambda matrix: factorised.append(matrix) or cholesky(matrix))
    fixed = cluster_quadratics._fixed_point(ill, offset, spectral_bounds.krylov_space(ill, start=offset))
    assert len(factorised) == 1
    assert torch.equal(fixed, torch.cholesky_solve(offset[:, None], cholesky(ill)[0])[:, 0])
    hessian, offset = _regression_quadratic(0, 5 * p, p)
    fixed = cluster_quadratics._fixed_point(hessian, offset, spectral_bounds.krylov_space(hessian, start=offset))
    assert len(factorised) == 1
    assert float((hessian @ fixed - offset).norm()) <= cluster_quadratics._GALERKIN_RESIDUAL * float(offset.norm())


def test_krylov_fixed_points_lie_within_their_certified_error(monkeypatch):
    """At d above ``_EIGH_SIZE`` (the Lanczos path, as at paper size) a true cluster's and the
    collapsed partition's fixed points come from their Krylov spaces, and each lies within its
    certified error of the least-squares solution of its machines' data."""
    rng = np.random.default_rng(3)
    m, n, d = 8, 300, 200
    x = torch.as_tensor(rng.standard_normal((m, n, d)))
    y = torch.as_tensor(rng.standard_normal((m, n)))
    quadratics = ClusterQuadratics(x, y, np.arange(m) % 2, 2.0 / n / m)
    monkeypatch.setattr(torch, "cholesky_solve", None)  # no fixed point may need it
    for mask in (np.arange(m) % 2 == 0, np.ones(m, bool)):
        quadratic = quadratics.quadratic(mask)
        solution = np.linalg.lstsq(x[mask].reshape(-1, d).numpy(), y[mask].reshape(-1).numpy(), rcond=None)[0]
        assert np.linalg.norm(quadratic.fixed.numpy() - solution) <= quadratic.fixed_error
        assert quadratic.fixed_error <= 1e-10


def test_error_widens_both_bounds():
    matrix = gram(4, 40, 10)
    assert float(lower_bound(matrix, 0.5)) == pytest.approx(float(lower_bound(matrix)) - 0.5)
    assert float(upper_bound(matrix, 0.5)) == pytest.approx(float(upper_bound(matrix)) + 0.5)


# -- the cluster quadratics ---------------------------------------------------------------------
def make_problem(dtype=torch.float64, n=6):
    """12 machines of ``n`` points in d = 8, two true clusters (interleaved), in ``dtype``; the data
    returned as float64 arrays (exactly the data the quadratics are of)."""
    rng = np.random.default_rng(5)
    m, d = 12, 8
    membership = np.arange(m) % 2
    x = torch.as_tensor(rng.standard_normal((m, n, d)), dtype=dtype)
    y = torch.as_tensor(rng.standard_normal((m, n)), dtype=dtype)
    scale = 2.0 / n / m
    return ClusterQuadratics(x, y, membership, scale), x.double().numpy(), y.double().numpy(), scale


@pytest.fixture(scope="module")
def problem():
    return make_problem()


MASKS = {
    "true cluster": np.arange(12) % 2 == 0,
    "all machines (collapsed)": np.ones(12, bool),
    "true cluster with one moved": np.isin(np.arange(12), [0, 2, 4, 6, 8, 10, 3]),
    "true cluster with one missing": np.isin(np.arange(12), [0, 2, 4, 6, 8]),
    "a mixed set": np.isin(np.arange(12), [0, 1, 2, 5, 7, 11]),
}


@pytest.mark.parametrize("dtype, n", [(torch.float64, 6), (torch.float32, 6), (torch.float32, 300)],
                         ids=["float64", "float32", "float32 in chunks"])
@pytest.mark.parametrize("name", MASKS)
def test_quadratic_agrees_with_a_direct_least_squares_solution(name, dtype, n):
    """The Hessian assembled from blocks and differences has the same spectrum as the direct
    Gram of the machines; the fixed point is the least-squares solution within its error. With
    float32 data (the protocol's; 300 points per machine: Grams summed over several float32
    chunks) the bounds hold for that data's exact quadratic."""
    quadratics, x, y, scale = make_problem(dtype, n)
    mask = MASKS[name]
    rows, targets = x[mask].reshape(-1, x.shape[-1]), y[mask].reshape(-1)
    hessian = scale * rows.T @ rows
    exact = np.linalg.eigvalsh(hessian)
    quadratic = quadratics.quadratic(mask)
    assert quadratic.lower <= exact[0] and exact[-1] <= quadratic.upper
    solution = np.linalg.lstsq(rows, targets, rcond=None)[0]
    assert np.linalg.norm(quadratic.fixed.numpy() - solution) <= quadratic.fixed_error + 1e-12
    np.testing.assert_allclose(quadratic.residual_norms, np.linalg.norm(x @ quadratic.fixed.numpy() - y, axis=-1))
    for step in (0.5 / exact[-1], 1.0 / exact[-1], 1.5 / exact[-1], 1.95 / exact[-1]):
        factor = quadratics.contraction(mask, step)
        if step <= 1.0 / exact[-1]:  # the upper bound's looseness cannot matter yet
            assert factor is not None
        # near 2 / lambda_max a loose upper bound may refuse, but never claim a smaller factor
        assert factor is None or factor >= max(abs(1 - step * exact[0]), abs(1 - step * exact[-1]))
    assert quadratics.contraction(mask, 2.0 / exact[-1]) is None  # not a contraction at 2 / lambda_max


@pytest.mark.parametrize("name", MASKS)
def test_a_refused_step_leaves_the_bounds_of_smaller_steps_intact(name):
    """A step refused because a Rayleigh quotient already reaches 2 / step (a lower bound on
    lambda_max) must not make that lower bound serve as an upper one: a smaller step, where the
    lambda_max side decides the factor, still gets a factor at least the exact one."""
    quadratics, x, _, scale = make_problem()  # nothing cached yet
    mask = MASKS[name]
    rows = x[mask].reshape(-1, x.shape[-1])
    exact = np.linalg.eigvalsh(scale * rows.T @ rows)
    assert quadratics.contraction(mask, 2.5 / exact[-1]) is None
    # past 2 / (lambda_min + lambda_max) the factor is |1 - step lambda_max|
    step = 1.99 / exact[-1]
    assert step > 2 / (exact[0] + exact[-1])
    factor = quadratics.contraction(mask, step)
    assert factor is None or factor >= step * exact[-1] - 1


@pytest.mark.parametrize("dtype, n", [(torch.float64, 6), (torch.float32, 300)], ids=["float64", "float32 in chunks"])
def test_a_union_of_solved_true_clusters_takes_weyls_bounds(dtype, n, monkeypatch):
    """Once both true clusters are solved, the collapsed partition's bounds come from theirs
    (Weyl: no Lanczos estimate, no Cholesky test) and still contain its exact spectrum, its fixed
    point within its error of the least-squares solution; a set that is not a union of whole
    true clusters is estimated and tested as before."""
    quadratics, x, y, scale = make_problem(dtype, n)
    clusters = [quadratics.quadratic(np.arange(12) % 2 == c) for c in (0, 1)]
    estimates = []
    monkeypatch.setattr("cflbounds.sweeps.cluster_quadratics.extreme_quotients",
                        lambda matrix, *space: estimates.append(matrix) or spectral_bounds.extreme_quotients(matrix, *space))
    collapsed = quadratics.quadratic(np.ones(12, bool))
    assert estimates == []
    exact = np.linalg.eigvalsh(scale * x.reshape(-1, 8).T @ x.reshape(-1, 8))
    assert 0 < collapsed.lower <= exact[0] and collapsed.top_floor <= exact[-1] <= collapsed.upper
    assert collapsed.lower == pytest.approx(clusters[0].lower + clusters[1].lower, rel=1e-12)
    assert collapsed.top_floor == max(c.top_floor for c in clusters)
    solution = np.linalg.lstsq(x.reshape(-1, 8), y.reshape(-1), rcond=None)[0]
    assert np.linalg.norm(collapsed.fixed.numpy() - solution) <= collapsed.fixed_error + 1e-12
    quadratics.quadratic(MASKS["true cluster with one moved"])
    assert len(estimates) == 1


def test_gram_machines_counts_what_is_left_to_compute():
    """The count the certificate weighs a new partition by: a near-true partition needs its true
    cluster's block (6 machines) plus the machine that moved, then only that machine once the
    block is computed (the remembered count must follow), and nothing once it is solved."""
    quadratics = make_problem()[0]  # nothing cached yet
    moved = MASKS["true cluster with one moved"]
    assert quadratics.gram_machines(moved) == 6 + 1
    quadratics.quadratic(MASKS["true cluster"])  # computes that cluster's block
    assert quadratics.gram_machines(moved) == 1
    quadratics.quadratic(moved)
    assert quadratics.gram_machines(moved) == 0


def test_too_few_points_give_no_quadratic(problem):
    quadratics = problem[0]
    assert quadratics.quadratic(np.isin(np.arange(12), [0])) is None  # 6 points in d = 8: singular


def test_spectral_norms_are_upper_bounds(problem):
    quadratics, x, _, _ = problem
    exact = np.linalg.norm(x, ord=2, axis=(1, 2))
    bounds = quadratics.spectral_norms()
    assert np.all(bounds >= exact) and np.all(bounds <= 1.3 * exact)


@pytest.mark.parametrize("groups", [False, True], ids=["one pass", "machine groups"])
def test_residual_norms_of_several_models_at_once(groups, monkeypatch):
    """Remembered from one product with all the models (in machine groups when the work is
    worth threads): each model's ``||X_i theta - y_i||`` of the exact data, a model given twice
    or already known computed once; residual_norms then reads them back."""
    if groups:
        monkeypatch.setattr(threads_module, "PARALLEL_FLOPS", 0)
    quadratics, x, y, _ = make_problem()
    rng = np.random.default_rng(8)
    models = rng.standard_normal((3, 8))
    known = quadratics.residual_norms(torch.as_tensor(models[0]))
    passes, residual_matrix = [], quadratics._residual_matrix
    monkeypatch.setattr(quadratics, "_residual_matrix", lambda model: passes.append(model) or residual_matrix(model))
    assert not quadratics.knows_residual_norms(models[1])
    quadratics.remember_residual_norms(np.stack([models[1], models[0], models[2], models[1]]))
    assert all(quadratics.knows_residual_norms(model) for model in models)
    for model in models:
        exact = np.linalg.norm(np.einsum("mnd,d->mn", x, model) - y, axis=1)
        np.testing.assert_allclose(quadratics.residual_norms(torch.as_tensor(model)), exact, rtol=1e-13)
    assert np.array_equal(quadratics.residual_norms(torch.as_tensor(models[0])), known)  # not recomputed
    assert passes == []  # every model read back, none computed alone


@pytest.mark.parametrize("n, d", [(6, 40), (40, 6)])
def test_spectral_norms_of_float32_data_bound_its_exact_norms(n, d):
    """float32 features (the protocol's): the machines' small Grams are computed in float32, with
    their rounding bounded; the bounds hold for the exact norms of that data (in float64)."""
    rng = np.random.default_rng(7)
    x = torch.as_tensor(rng.standard_normal((12, n, d)), dtype=torch.float32)
    quadratics = ClusterQuadratics(x, torch.zeros(12, n), np.arange(12) % 2, 1.0)
    exact = np.linalg.norm(x.double().numpy(), ord=2, axis=(1, 2))
    bounds = quadratics.spectral_norms()
    assert np.all(bounds >= exact) and np.all(bounds <= 1.05 * exact)


def test_gram_in_blocks_is_the_exactly_symmetric_product(problem):
    quadratics, x, _, _ = problem
    machines = np.array([1, 4, 5, 9])
    gram = quadratics._gram(machines).numpy()
    rows = x[machines].reshape(-1, x.shape[-1])
    assert np.array_equal(gram, gram.T)
    np.testing.assert_allclose(gram, rows.T @ rows, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("machines", [np.array([0, 2, 4]), np.array([1, 4, 5, 9])], ids=["consecutive", "gathered"])
def test_float32_gram_is_within_its_rounding_bound(machines):
    """float32 data, 300 points per machine (several chunks and a remainder): the Gram's distance
    from the exact one (float64 of the same data) is within ``_gram_rounding`` times the trace,
    the bound the eigenvalue tests subtract, and that bound is not vacuous (under 1e-4 of it)."""
    quadratics, x, _, _ = make_problem(torch.float32, 300)
    rows = x[machines].reshape(-1, x.shape[-1])
    exact = rows.T @ rows
    gap = np.linalg.norm(quadratics._gram(machines).numpy() - exact, 2)
    bound = quadratics._gram_rounding * np.trace(exact)
    assert gap <= bound < 1e-4 * np.trace(exact)


def test_a_given_storage_holds_the_same_quadratics_and_is_checked():
    """Quadratics whose float64 copy lives in another problem's released storage are the ones
    built in fresh memory, bit for bit; storage of the wrong shape is refused before any work,
    and quadratics that gave their storage away cannot be used by mistake."""
    fresh = make_problem()[0]
    previous = make_problem(n=6)[0]
    previous.quadratic(MASKS["true cluster"])
    storage = previous.release()
    rng = np.random.default_rng(5)
    x = torch.as_tensor(rng.standard_normal((12, 6, 8)))
    y = torch.as_tensor(rng.standard_normal((12, 6)))
    reused = ClusterQuadratics(x, y, np.arange(12) % 2, 2.0 / 6 / 12, storage)
    assert reused._points is storage
    for name, mask in MASKS.items():
        a, b = fresh.quadratic(mask), reused.quadratic(mask)
        assert torch.equal(a.fixed, b.fixed), name
        assert (a.fixed_error, a.lower, a.upper) == (b.fixed_error, b.lower, b.upper), name
    with pytest.raises(ValueError, match="cannot be stored"):
        ClusterQuadratics(x, y, np.arange(12) % 2, 1.0, torch.empty(12, 6, 9, dtype=torch.float64))
    with pytest.raises(ValueError, match="cannot be stored"):
        ClusterQuadratics(x, y, np.arange(12) % 2, 1.0, torch.empty(12, 6, 8, dtype=torch.float32))
    with pytest.raises((TypeError, AttributeError)):
        previous.quadratic(MASKS["a mixed set"])
