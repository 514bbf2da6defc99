"""IFCA's falsification domains (cflbounds.papers.ifca.domain): IFCA.A3-6's constants eta^2, v^2
and IFCA.T2c's one-step contraction; the other IFCA claims say why they have none."""
from dataclasses import replace

import numpy as np
import pytest
import torch

import cflbounds.falsify.run as falsify_run
from cflbounds.falsify import falsify_claim
from cflbounds.synthetic import make_mixed_linear_regression
from cflbounds.synthetic.mixed_linear_regression import draw_ground_truth, gradient_variance, loss_variance
from cflbounds.verify.context import VerifyContext
from cflbounds.verify.domain import Domain
from cflbounds.papers.ifca import CLAIMS
from cflbounds.papers.ifca import domain as domains
from cflbounds.verify.registry import get_claim

CTX = VerifyContext(seed=0, device="cpu")
BY_ID = {claim.id: claim for claim in CLAIMS}
VARIANCE_POINT = {"constant": 0, "k": 3, "d": 6, "sigma": 0.3, "R": 1.0, "truth": 4, "model_cluster": 0.0, "data_cluster": 0.9,
                  "radius": 1.0, "alignment": 1.0}
STEP_POINT = {"k": 2, "m": 24, "n_prime": 8, "d": 6, "sigma": 0.5, "Delta": 1.2, "share": 1.0, "radius": 0.5,
              "alignment": 0.5, "delta": 0.2}


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _with_domain(monkeypatch, claim_id, domain):
    """Make ``falsify_claim(claim_id)`` search ``domain`` (a planted variant of the claim's)."""
    claim = replace(get_claim(claim_id), domain=domain)
    monkeypatch.setattr(falsify_run, "get_claim", lambda requested: claim)


# -- declarations -----------------------------------------------------------------------------------
def test_every_ifca_claim_has_a_domain_or_says_why_not():
    assert {c.id for c in CLAIMS if c.domain is not None} == {"IFCA.A3-6", "IFCA.T2c"}
    for claim in CLAIMS:
        claim.validate()
        assert (claim.domain is None) == bool(claim.no_domain.strip()), claim.id
        assert claim.as_dict()["falsify"].startswith("yes" if claim.domain else "no: ")


@pytest.mark.parametrize("domain", [domains.variance_domain(), domains.contraction_domain(),
                                    domains.contraction_domain("unit")])
def test_domain_parameters_decode_and_encode(domain):
    assert isinstance(domain, Domain)
    rng = np.random.default_rng(1)
    for unit in rng.uniform(0, 1, size=(20, len(domain.parameters))):
        point = domain.decode(unit)
        domain.check_point(point)
        again = domain.decode(domain.encode(point))
        assert again == pytest.approx(point)
    simplest = {p.name: p.simplest for p in domain.parameters}
    domain.check_point(simplest)


def test_unit_floor_has_no_delta_and_an_unknown_floor_is_refused():
    assert "delta" not in {p.name for p in domains.contraction_domain("unit").parameters}
    assert "delta" in {p.name for p in domains.contraction_domain().parameters}
    with pytest.raises(ValueError, match="floor"):
        domains.contraction_domain("none")


# -- instances: alone = in a batch; against straightforward computations ---------------------------------
@pytest.mark.parametrize("domain, point, other", [
    (domains.variance_domain(), VARIANCE_POINT, {**VARIANCE_POINT, "constant": 1, "d": 4}),
    (domains.contraction_domain(), STEP_POINT, {**STEP_POINT, "m": 16, "radius": 0.0}),
])
def test_an_instance_is_the_same_alone_and_in_a_batch(domain, point, other):
    batch = domain.evaluate([other, point], [11, 12], CTX)
    alone = domain.evaluate([point], [12], CTX)[0]
    assert batch[1].as_dict() == alone.as_dict()
    assert batch[1].samples == alone.samples and batch[1].exceedances == alone.exceedances
    assert batch[1].margin == alone.margin


def test_variance_instance_agrees_with_a_direct_computation_and_the_closed_forms():
    """A4 and A5 at the corner of the ball (theta pushed away from the data cluster's center): the
    Monte Carlo samples equal numpy's (y - <x,theta>)^2 and 2 x (<x,theta> - y) on the same data;
    their means match the closed forms at theta within 5 standard errors; the bound is the sup
    at reach = max center distance + Delta/4, which the corner attains when it sits on the
    farthest pair."""
    domain, seed = domains.variance_domain(), 5
    loss, grad = domain.evaluate([VARIANCE_POINT, {**VARIANCE_POINT, "constant": 1}], [seed, seed], CTX)
    centers = draw_ground_truth(3, 6, "paper-text", 1.0, [domains.truth_draw_seed(4)])[0]
    problem = make_mixed_linear_regression(3, 3, domains.VARIANCE_SAMPLES, 6, sigma=0.3, theta_star=centers, seed=seed)
    c, j = loss.details["model_cluster"], loss.details["data_cluster"]
    assert (c, j) == (0, 2)
    distance = loss.details["distance_to_data_center"]
    x, y = problem.features[0, j].numpy(), problem.responses[0, j].numpy()
    separation = min(np.linalg.norm(centers[a] - centers[b]) for a in range(3) for b in range(a))
    radius = separation / 4
    # theta = theta*_c + (Delta/4) (theta*_c - theta*_j)/||.||, as the docstring says
    away = (centers[c] - centers[j]) / np.linalg.norm(centers[c] - centers[j])
    theta = centers[c] + radius * away
    assert distance == pytest.approx(np.linalg.norm(theta - centers[j]), rel=1e-12)
    f = (y - x @ theta) ** 2
    np.testing.assert_allclose(loss.samples, (f - (distance**2 + 0.09)) ** 2, rtol=1e-10)
    g = 2 * x * (x @ theta - y)[:, None]
    np.testing.assert_allclose(grad.samples, np.square(g - 2 * (theta - centers[j])).sum(axis=1), rtol=1e-10)
    for instance, exact in ((loss, loss_variance(distance, 0.3)), (grad, gradient_variance(distance, 0.3, 6))):
        error = np.std(instance.samples) / np.sqrt(len(instance.samples))
        assert abs(instance.measured - exact) < 5 * error
    reach = radius + max(np.linalg.norm(centers[a] - centers[b]) for a in range(3) for b in range(3))
    assert loss.bound == pytest.approx(loss_variance(reach, 0.3), rel=1e-12)
    assert grad.bound == pytest.approx(gradient_variance(reach, 0.3, 6), rel=1e-12)
    assert loss.admissible and grad.admissible
    assert loss.details["closed_form_at_theta"] <= loss.bound * (1 + 1e-12)


def _reference_step(point, seed):
    """One theory-version IFCA step written out in numpy on the instance's data, and the bound
    with Thm 2's coefficients from closed forms (reach Delta + Delta/4 for equidistant centers)."""
    from cflbounds.bounds import ifca as bounds
    from cflbounds.synthetic.seeding import spawn_seeds, stream

    k, m, n_prime, d, sigma, separation = (point[name] for name in ("k", "m", "n_prime", "d", "sigma", "Delta"))
    sizes = domains._sizes(point)
    truth_seed, data_seed, init_seed = spawn_seeds(seed, 3, 11)
    centers = domains.equidistant_centers(k, d, separation, truth_seed)
    assert np.allclose(np.linalg.norm(centers[0] - centers[1]), separation)
    trials = domains._trials(point)
    problem = make_mixed_linear_regression(k, m, 2 * n_prime, d, sigma=sigma, proportions=sizes / m,
                                           theta_star=centers, batch_size=trials, seed=data_seed)
    assert k == 2  # "another center" is then the other one
    rng = stream(init_seed, 0)
    models = []
    for j in range(k):
        toward = (centers[1 - j] - centers[j]) / separation
        random = rng.standard_normal(d)
        random /= np.linalg.norm(random)
        mixed = point["alignment"] * toward + (1 - point["alignment"]) * random
        models.append(centers[j] + point["radius"] * separation / 4 * mixed / np.linalg.norm(mixed))
    models = np.array(models)
    X, Y = problem.features.numpy(), problem.responses.numpy()
    p = sizes.min() / m
    reach = separation * 1.25
    eta2, v2 = loss_variance(reach, sigma), gradient_variance(reach, sigma, d)
    eps = bounds.theorem2(p=p, m=m, k=k, n_prime=n_prime, separation=separation, strong_convexity=2.0,
                          smoothness=2.0, loss_variance=eta2, gradient_variance=v2, delta=point["delta"]).value
    floor = p * 2.0 / (8 * 2.0) * eps
    factor = 1 - p / 8
    exceed, worst = 0, -np.inf
    for b in range(trials):
        updated = models.copy()
        for i in range(m):
            xe, ye = X[b, i, :n_prime], Y[b, i, :n_prime]
            choice = np.argmin([np.mean((ye - xe @ models[j]) ** 2) for j in range(k)])
            xg, yg = X[b, i, n_prime:], Y[b, i, n_prime:]
            updated[choice] -= 0.5 / m * (2.0 / n_prime) * xg.T @ (xg @ models[choice] - yg)
        before = np.linalg.norm(models - centers, axis=1)
        after = np.linalg.norm(updated - centers, axis=1)
        excess = ((after - factor * before) / floor).max()
        worst = max(worst, excess)
        exceed += excess > 1
    return exceed, trials, worst


@pytest.mark.parametrize("point", [STEP_POINT, {**STEP_POINT, "radius": 0.0, "delta": 0.5}])
def test_contraction_instance_agrees_with_a_step_written_out(point):
    instance = domains.contraction_domain().evaluate([point], [3], CTX)[0]
    exceed, trials, worst = _reference_step(point, 3)
    assert (instance.exceedances, instance.trials) == (exceed, trials)
    assert instance.details["largest_excess_over_floor"] == pytest.approx(worst, rel=1e-9, abs=1e-12)
    assert instance.bound == point["delta"] and instance.admissible


def test_contraction_in_check_t2c_regime_matches_its_measured_factor():
    """check_t2c's regime (k = 2, start at Delta/4, sigma = 0.01): the measured step factor is
    about 1 - p = 1/2 (its smoke run: 95 % quantile 0.573), far below 1 - p/8 = 0.9375."""
    point = {"k": 2, "m": 128, "n_prime": 25, "d": 10, "sigma": 0.01, "Delta": 1.0, "share": 1.0, "radius": 1.0,
             "alignment": 0.0, "delta": 0.1}
    instance = domains.contraction_domain().evaluate([point], [0], CTX)[0]
    assert 0.45 < instance.details["median_step_factor"] < 0.6
    assert instance.details["contraction_factor"] == pytest.approx(0.9375)
    assert instance.exceedances == 0


def test_unit_floor_is_exceeded_where_the_hidden_factor_sigma_sqrt_pd_is_large():
    """From theta*_j with sigma sqrt(p d) = 8 the step's noise, about sigma sqrt(p d/(m n')), is
    several times the unit floor 1/sqrt(mn') + 1/n' + ...: every trial exceeds it, none exceeds
    the floor with Thm 2's coefficients."""
    point = {"k": 2, "m": 50, "n_prime": 20, "d": 32, "sigma": 2.0, "Delta": 1.41, "share": 1.0, "radius": 0.0,
             "alignment": 0.0}
    unit = domains.contraction_domain("unit")
    assert all(row["holds"] for row in unit.constraint_rows(point))
    instance = unit.evaluate([point], [5], CTX)[0]
    assert instance.admissible and instance.bound == pytest.approx(1 / 50)
    assert instance.exceedances == instance.trials and instance.margin > 1
    full = domains.contraction_domain().evaluate([{**point, "delta": 0.5}], [5], CTX)[0]
    assert full.exceedances == 0 and full.details["largest_excess_over_floor"] < 0.1
    assert 0 < full.margin < 1  # the search's slope on the plateau where no trial exceeds


def test_contraction_constraints_state_assumption_6():
    rows = domains.contraction_constraints(STEP_POINT)
    names = [row["name"] for row in rows]
    assert any(name.startswith("p >~") for name in names) and any(name.startswith("n' >~") for name in names)
    assert not any(name.startswith("||theta_j^(0)") for name in names)  # stated by every instance instead
    assert all(row["holds"] for row in rows)
    tight = domains.contraction_constraints({**STEP_POINT, "Delta": 0.37, "n_prime": 2})
    assert not all(row["holds"] for row in tight)


# -- the search --------------------------------------------------------------------------------------
def test_a36_search_finds_no_counterexample():
    result = falsify_claim("IFCA.A3-6", seed=0, budget=None, max_evaluations=30)
    assert result["outcome"] == "no counterexample found"
    assert result["best_ratio"] < 1.15


def test_a36_with_halved_constants_is_falsified(monkeypatch):
    _with_domain(monkeypatch, "IFCA.A3-6", domains.variance_domain(0.5))
    result = falsify_claim("IFCA.A3-6", seed=0, budget=None, max_evaluations=20)
    assert result["outcome"] == "violated"
    assert result["confirmation"]["violated"] and result["confirmation"]["interval"][0] > 0
    example = result["counterexample"]
    replayed = domains.variance_domain(0.5).evaluate([example["parameters"]], [example["seed"]], CTX)[0]
    assert replayed.ratio == example["ratio"]


def test_t2c_search_finds_no_counterexample():
    result = falsify_claim("IFCA.T2c", seed=0, budget=None, max_evaluations=40)
    assert result["outcome"] == "no counterexample found"
    assert result["search"]["admissible"] > 0
