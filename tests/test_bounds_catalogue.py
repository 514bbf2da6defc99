"""The catalogue's formulas as code (FedAvg, local GD, SCAFFOLD, FedProx, CFL: bounds/fedavg.py ...
cfl.py): values against independent mpmath transcriptions of CATALOGUE.md's formulas and hand
arithmetic, closed-form identities, monotonicity, planted wrong constants that the value checks
catch, and every invalid constant refused with the one-line message naming it.
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import math

import mpmath as mp
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from cflbounds.bounds import cfl, fedavg, fedprox, localgd, scaffold
from cflbounds.cli import main
from cflbounds.verify.testing import assert_rejected, invalid_calls

from conftest import examples

mp.mp.dps = 40
REL = 1e-12


def close(value, reference) -> bool:
    return float(value) == pytest.approx(float(reference), rel=REL, abs=1e-300)


def planted(module, old: str, new: str):
    """``module`` loaded again from its source with one constant changed (``old`` must occur once)."""
    source = inspect.getsource(module)
    if source.count(old) != 1:  # not an AssertionError: a planted test must fail, not pass, when it plants nothing
        raise LookupError(f"{old!r} occurs {source.count(old)} times in {module.__name__}")
    spec = importlib.util.spec_from_loader(f"{module.__name__}_planted", loader=None)
    copy = importlib.util.module_from_spec(spec)
    exec(compile(source.replace(old, new), module.__file__, "exec"), copy.__dict__)
    return copy


# -- independent transcriptions of CATALOGUE.md's formulas (mpmath, 40 digits) -------------------
def fedavg_reference(L, mu, E, T, G, Gamma, v, D2, C=0):
    L, mu, G, Gamma, v, D2, C = map(mp.mpf, (L, mu, G, Gamma, v, D2, C))
    kappa = L / mu
    gamma = max(8 * kappa, E)
    B = v + 6 * L * Gamma + 8 * (E - 1) ** 2 * G**2
    return kappa / (gamma + T - 1) * (2 * (B + C) / mu + mu * gamma / 2 * D2)


def localgd_reference(D2, sigma2, L, gamma, H, T):
    D2, sigma2, L, gamma = map(mp.mpf, (D2, sigma2, L, gamma))
    return 2 * D2 / (gamma * T) + 24 * gamma**2 * sigma2 * H**2 * L


def rho_reference(mu, gamma, B, L, Lm, K):
    mu, gamma, B, L, Lm = map(mp.mpf, (mu, gamma, B, L, Lm))
    mb = mu - Lm
    return (1 / mu - gamma * B / mu - B * (1 + gamma) * mp.sqrt(2) / (mb * mp.sqrt(K)) - L * B * (1 + gamma) / (mb * mu)
            - L * (1 + gamma) ** 2 * B**2 / (2 * mb**2)
            - L * B**2 * (1 + gamma) ** 2 / (mb**2 * K) * (2 * mp.sqrt(2 * K) + 2))


def cross_reference(H, k):
    H = mp.mpf(H)
    a = mp.pi / (k - 1)
    return mp.cos(a) * H + mp.sin(a) * mp.sqrt(1 - H**2) if H >= mp.cos(a) else mp.mpf(1)


# -- FedAvg ---------------------------------------------------------------------------------------
FEDAVG_POINTS = [dict(L=4.0, mu=1.0, E=5, T=100, G=1.0, Gamma=0.5, weighted_variance=0.1, initial_distance_sq=2.0),
                 dict(L=1.0, mu=1.0, E=1, T=10, G=0.0, Gamma=0.0, weighted_variance=0.0, initial_distance_sq=1.0),
                 dict(L=10.0, mu=0.5, E=200, T=400, G=2.0, Gamma=0.0, weighted_variance=1.0, initial_distance_sq=0.0),
                 dict(L=3.0, mu=0.25, E=7, T=7, G=0.3, Gamma=2.0, weighted_variance=0.5, initial_distance_sq=5.0)]


def _reference_args(point):
    return (point["L"], point["mu"], point["E"], point["T"], point["G"], point["Gamma"], point["weighted_variance"],
            point["initial_distance_sq"])


def check_fedavg_theorem1(module):
    # by hand at the first point: kappa = 4, gamma = max(32, 5) = 32, B = 0.1 + 6*4*0.5 + 8*16*1 = 140.1,
    # 4/(32 + 99) * (2*140.1/1 + (1*32/2)*2) = 4/131 * 312.2 = 9.532824427480916
    assert close(module.theorem1(**FEDAVG_POINTS[0]).value, 4 / 131 * 312.2)
    # second: kappa = 1, gamma = 8, B = 0: 1/17 * (0 + 4*1) = 4/17
    assert close(module.theorem1(**FEDAVG_POINTS[1]).value, 4 / 17)
    for point in FEDAVG_POINTS:
        assert close(module.theorem1(**point).value, fedavg_reference(*_reference_args(point)))
    assert close(module.b_term(0.1, 4.0, 0.5, 5, 1.0), 140.1)


def check_fedavg_schemes(module):
    for point in FEDAVG_POINTS:
        K, N = 3, 10
        scheme1 = 4 * point["E"] ** 2 * point["G"] ** 2 / K
        scheme2 = (N - K) / (N - 1) * scheme1
        assert close(module.theorem2(**point, K=K, N=N).value, fedavg_reference(*_reference_args(point), C=scheme1))
        assert close(module.theorem3(**point, K=K, N=N).value, fedavg_reference(*_reference_args(point), C=scheme2))
    # by hand: E = 5, G = 1, K = 4: C1 = 4*25/4 = 25; N = 10: C2 = 6/9 * 25 = 16.666...
    assert close(module.scheme1_c(5, 1.0, 4), 25.0)
    assert close(module.scheme2_c(5, 1.0, 4, 10), 50 / 3)
    assert close(module.scheme2_c(2, 3.0, 1, 3), 1.0 * 4 * 4 * 9)  # (3-1)/(3-1) * 4/1 * 4 * 9 = 144


def test_fedavg_theorem1_by_hand_and_against_mpmath():
    check_fedavg_theorem1(fedavg)


def test_fedavg_schemes_by_hand_and_against_mpmath():
    check_fedavg_schemes(fedavg)


@pytest.mark.parametrize("old, new, check", [
    ('"heterogeneity": _times(6.0, L, Gamma)', '"heterogeneity": _times(3.0, L, Gamma)', check_fedavg_theorem1),
    ('_times(8.0, float(E - 1) ** 2, G, G)', '_times(8.0, float(E) ** 2, G, G)', check_fedavg_theorem1),
    ("1.0 / (max(8.0, E / kappa) + (T - 1) / kappa)", "1.0 / (max(8.0, E / kappa) + T / kappa)",
     check_fedavg_theorem1),
    ("C=_times(4.0 / K, float(E) ** 2, G, G)", "C=_times(2.0 / K, float(E) ** 2, G, G)", check_fedavg_schemes),
    ("_times((N - K) / (N - 1), 4.0 / K", "_times((N - K) / N, 4.0 / K", check_fedavg_schemes),
])
def test_a_planted_wrong_fedavg_constant_is_caught(old, new, check):
    with pytest.raises(AssertionError):
        check(planted(fedavg, old, new))


def test_fedavg_steps_variance_and_unbalance_by_hand():
    # gamma = max(8 * 4/1, 5) = 32; eta_1 = 2/(1 * 33); with E = 50 > 8 kappa = 16: gamma = 50, eta_10 = 2/(1 * 60)
    assert close(fedavg.gamma(4.0, 1.0, 5), 32.0) and close(fedavg.gamma(4.0, 1.0, 50), 50.0)
    assert close(fedavg.gamma(1.0, 0.5, 3), 16.0)
    assert close(fedavg.step_size(1, 4.0, 1.0, 5), 2 / 33) and close(fedavg.step_size(10, 2.0, 1.0, 50), 2 / 60)
    assert close(fedavg.step_size(3, 1.0, 1.0, 1), 2 / 11)
    # sum p_k^2 sigma_k^2 = 0.25*4 + 0.0625*1 + 0.0625*0 = 1.0625
    assert close(fedavg.variance_term([0.5, 0.25, 0.25], [2.0, 1.0, 0.0]), 1.0625)
    assert close(fedavg.variance_term([1.0], [3.0]), 9.0)
    assert close(fedavg.variance_term([0.1, 0.9], [1.0, 1.0]), 0.82)
    assert fedavg.unbalance([0.5, 0.25, 0.25]) == pytest.approx((1.5, 0.75))
    assert fedavg.unbalance([0.25] * 4) == pytest.approx((1.0, 1.0))
    assert fedavg.unbalance([0.7, 0.1, 0.1, 0.1]) == pytest.approx((2.8, 0.4))


def test_fedavg_unbalanced_is_theorem3_with_the_substitution():
    point = dict(L=2.0, mu=0.5, E=4, T=40, G=1.5, Gamma=0.3, initial_distance_sq=1.0)
    nu, varsigma, K, N, sigma_sq_sum = 1.5, 0.75, 2, 3, 3.0  # p = (0.5, 0.25, 0.25)
    for scaling, scale in (("printed", mp.sqrt(nu)), ("linear", mp.mpf(nu))):
        G = scale * point["G"]
        C = mp.mpf(N - K) / (N - 1) * 4 * point["E"] ** 2 * G**2 / K
        reference = fedavg_reference(nu * point["L"], varsigma * point["mu"], point["E"], point["T"], G, point["Gamma"],
                                     scale**2 * sigma_sq_sum / N**2, point["initial_distance_sq"], C=C)
        result = fedavg.theorem3_unbalanced(**point, sigma_sq_sum=sigma_sq_sum, nu=nu, varsigma=varsigma, K=K, N=N,
                                            noise_scaling=scaling)
        assert close(result.value, reference)
        assert result.derived["L_tilde"] == 3.0 and result.derived["mu_tilde"] == 0.375
    # balanced data (nu = varsigma = 1): exactly Theorem 3 with sum_k p_k^2 sigma_k^2 = sum sigma_k^2 / N^2
    balanced = fedavg.theorem3_unbalanced(**point, sigma_sq_sum=sigma_sq_sum, nu=1.0, varsigma=1.0, K=K, N=N)
    assert close(balanced.value, fedavg.theorem3(**point, weighted_variance=sigma_sq_sum / 9, K=K, N=N).value)


def test_fedavg_closed_forms():
    point = FEDAVG_POINTS[0]
    # E = 1 removes the drift term 8 (E - 1)^2 G^2 whatever G is
    one_step = {**point, "E": 1}
    assert fedavg.theorem1(**one_step).derived["B_drift"] == 0.0
    assert close(fedavg.theorem1(**one_step).value, fedavg.theorem1(**{**one_step, "G": 1e6}).value)
    # Scheme II with K = N: C = 0, Theorem 3 is Theorem 1
    full = fedavg.theorem3(**point, K=10, N=10)
    assert full.derived["C"] == 0.0 and full.value == fedavg.theorem1(**point).value
    # K = 1 of N = 1 too (no 0/0)
    assert fedavg.scheme2_c(5, 1.0, 1, 1) == 0.0
    # Theorem 4: E = 1 is gradient descent, which a constant step does not bias
    assert fedavg.theorem4_rate(1, 0.1) == 0.0
    assert close(fedavg.theorem4_rate(5, 0.1, c=2.0), 0.8) and close(fedavg.theorem4_rate(2, 0.5), 0.5)
    assert close(fedavg.theorem4_rate(11, 0.01, c=0.5), 0.05)


def test_fedavg_assumption_rows_by_hand():
    rows = fedavg.assumptions(L=4.0, mu=1.0, E=5, K=3, N=10)
    assert [row.as_dict()["holds"] for row in rows] == [True] * 4
    assert close(rows[1].lhs, 2 / 33) and close(rows[1].rhs, 1 / 16)  # eta_1 <= 1/(4L)
    assert rows[2].lhs == 5.0 and rows[2].rhs == 33.0  # E <= gamma + 1
    # a declared mu above L and K above N: the rows say so (the theorems refuse them)
    bad = fedavg.assumptions(L=1.0, mu=2.0, E=5, K=11, N=10)
    assert [row.as_dict()["holds"] for row in bad] == [False, True, True, False]


@given(st.floats(0.0, 10.0), st.floats(0.0, 10.0), st.floats(0.0, 10.0), st.floats(0.0, 10.0),
       st.integers(1, 20), st.integers(1, 50))
@examples(40)
def test_fedavg_bound_grows_with_heterogeneity_noise_and_distance_and_falls_with_steps(G, Gamma, v, D2, E, rounds):
    base = dict(L=2.0, mu=0.5, E=E, T=E * rounds, G=G, Gamma=Gamma, weighted_variance=v, initial_distance_sq=D2)
    value = fedavg.theorem1(**base).value
    for name in ("G", "Gamma", "weighted_variance", "initial_distance_sq"):
        assert fedavg.theorem1(**{**base, name: base[name] + 1.0}).value >= value * (1 - 1e-12)
    assert fedavg.theorem1(**{**base, "T": E * (rounds + 1)}).value <= value * (1 + 1e-12)
    schemes = [fedavg.theorem3(**base, K=K, N=8).value for K in range(1, 9)]  # more devices, smaller C
    assert all(later <= earlier * (1 + 1e-12) for earlier, later in zip(schemes, schemes[1:]))
    assert fedavg.theorem2(**base, K=3, N=8).value >= fedavg.theorem3(**base, K=3, N=8).value * (1 - 1e-12) >= (
        value * (1 - 1e-12) ** 2)


# -- local GD -------------------------------------------------------------------------------------
def check_localgd(module):
    # by hand: 2*1/(0.05*100) + 24*0.0025*1*16*1 = 0.4 + 0.96 = 1.36
    assert close(module.theorem1(initial_distance_sq=1.0, sigma_sq=1.0, L=1.0, gamma=0.05, H=4, T=100).value, 1.36)
    for D2, s2, L, gamma, H, T in [(2.0, 0.5, 3.0, 0.01, 5, 1000), (0.0, 4.0, 0.5, 0.1, 1, 7),
                                   (9.0, 0.0, 2.0, 0.125, 1, 3)]:
        value = module.theorem1(initial_distance_sq=D2, sigma_sq=s2, L=L, gamma=gamma, H=H, T=T).value
        assert close(value, localgd_reference(D2, s2, L, gamma, H, T))
    # Corollary 1 by hand: L = 1, D2 = 1, M = 4, T = 100, H = 5, sigma^2 = 2: 8/sqrt(400) + 3*4*2*25/(2*100) = 0.4 + 3
    assert close(module.corollary1(initial_distance_sq=1.0, sigma_sq=2.0, L=1.0, H=5, T=100, M=4).value, 3.4)
    assert close(module.corollary1(initial_distance_sq=4.0, sigma_sq=0.0, L=2.0, H=1, T=9, M=1).value, 64 / 3)
    assert close(module.corollary1(initial_distance_sq=0.0, sigma_sq=1.0, L=0.5, H=2, T=64, M=16).value, 3.0)
    assert close(module.corollary1_step(1.0, 4, 100), 0.05) and close(module.corollary1_step(2.0, 9, 16), 3 / 32)
    assert close(module.corollary1_step(0.25, 1, 1), 1.0)


def test_localgd_by_hand_and_against_mpmath():
    check_localgd(localgd)


@pytest.mark.parametrize("old, new", [('24.0 * gamma**2', '12.0 * gamma**2'),
                                      ('2.0 * initial_distance_sq / (gamma * T)', 'initial_distance_sq / (gamma * T)'),
                                      ('3.0 * M * sigma_sq', '2.0 * M * sigma_sq')])
def test_a_planted_wrong_localgd_constant_is_caught(old, new):
    with pytest.raises(AssertionError):
        check_localgd(planted(localgd, old, new))


@given(st.floats(0.0, 100.0), st.floats(0.0, 100.0), st.floats(0.01, 100.0), st.integers(1, 10**6),
       st.integers(1, 1000))
@examples(60)
def test_localgd_corollary_is_the_theorem_at_its_step_over_its_whole_range(D2, s2, L, T, M):
    H_max = math.isqrt(T // M) if T >= M else 0
    assume(H_max >= 1)
    for H in sorted({1, H_max, max(1, H_max // 2)}):
        follows = localgd.corollary1_follows(initial_distance_sq=D2, sigma_sq=s2, L=L, H=H, T=T, M=M)
        assert follows.assumptions_hold  # the step is in Theorem 1's range, and Theorem 1 <= Corollary 1
        assert follows.value == pytest.approx(follows.derived["corollary"], rel=1e-12, abs=1e-300)


@given(st.floats(0.01, 10.0), st.integers(1, 20))
@examples(30)
def test_localgd_bound_grows_with_the_synchronisation_gap(L, H):
    step = 1.0 / (4.0 * L * (H + 1))
    low = localgd.theorem1(initial_distance_sq=1.0, sigma_sq=1.0, L=L, gamma=step, H=H, T=100).value
    high = localgd.theorem1(initial_distance_sq=1.0, sigma_sq=1.0, L=L, gamma=step, H=H + 1, T=100).value
    assert high > low


# -- SCAFFOLD -------------------------------------------------------------------------------------
def check_scaffold(module):
    # T1 by hand: sigma^2 = 1, G = 1, B = 2, mu = 0.5, beta = 4, K = 10, S = 5, N = 10, eps = 0.01:
    # 1/(0.5*10*5*0.01) + 0.5*1/(0.5*5*0.01) + 2*1/(0.5*0.1) + 4*4/0.5 = 4 + 20 + 40 + 32 = 96
    t1 = dict(sigma_sq=1.0, G=1.0, B=2.0, mu=0.5, beta=4.0, K=10, S=5, N=10, epsilon=0.01)
    assert close(module.theorem1_rounds(**t1).value, 96.0) and close(module.theorem1_rounds(**t1, c=3.0).value, 288.0)
    assert close(module.theorem1_rounds(**{**t1, "S": 10, "G": 0.0, "B": 0.0}).value, 2.0)  # 1/(0.5*10*10*0.01)
    # T2: c G^2/(mu R^2) = 2*9/(0.5*36) = 1
    assert close(module.theorem2_lower(G=3.0, mu=0.5, R=6, c=2.0), 1.0)
    assert close(module.theorem2_lower(G=1.0, mu=1.0, R=1), 1.0) and close(module.theorem2_lower(G=0.5, mu=2.0, R=5),
                                                                          0.005)
    # T3: 1/(0.5*10*5*0.01) + 4/0.5 + 10/5 = 4 + 8 + 2 = 14
    t3 = {k: v for k, v in t1.items() if k not in ("G", "B")}
    assert close(module.theorem3_rounds(**t3).value, 14.0)
    assert close(module.theorem3_rounds(**{**t3, "sigma_sq": 0.0, "S": 10}).value, 9.0)
    assert close(module.theorem3_rounds(**{**t3, "K": 1}, c=0.5).value, 0.5 * (40 + 8 + 2))  # 1/(0.5*5*0.01) = 40
    # T4: 4*1/(0.5*10*10*0.01) + (4 + 0.1*10)/(0.5*10) = 8 + 1 = 9
    t4 = dict(sigma_sq=1.0, mu=0.5, beta=4.0, delta=0.1, K=10, N=10, epsilon=0.01)
    assert close(module.theorem4_rounds(**t4).value, 9.0)
    assert close(module.theorem4_rounds(**{**t4, "K": 1}).value, 80 + 4.1 / 0.5)
    assert close(module.theorem4_rounds(**{**t4, "delta": 0.0, "sigma_sq": 0.0}).value, 0.8)


def test_scaffold_rates_by_hand():
    check_scaffold(scaffold)


@pytest.mark.parametrize("old, new", [('_ratio(B**2 * beta, mu)', '_ratio(B * beta, mu)'),
                                      ('"sampling": N / S}', '"sampling": N / S / 2}'),
                                      ('(beta + delta * K) / (mu * K)', '(beta + delta) / (mu * K)')])
def test_a_planted_wrong_scaffold_term_is_caught(old, new):
    with pytest.raises(AssertionError):
        check_scaffold(planted(scaffold, old, new))


@given(st.floats(0.0, 10.0), st.integers(1, 50), st.integers(1, 20))
@examples(30)
def test_scaffold_orderings(G, K, S):
    base = dict(sigma_sq=1.0, mu=0.5, beta=4.0, K=K, S=S, N=20, epsilon=0.01)
    fedavg_rounds = scaffold.theorem1_rounds(**base, G=G, B=1.0).value
    assert scaffold.theorem1_rounds(**base, G=G + 1.0, B=1.0).value > fedavg_rounds  # FedAvg's grow with G
    assert "G" not in inspect.signature(scaffold.theorem3_rounds).parameters  # SCAFFOLD's have no G
    # T4's local-step term falls like 1/K until delta K is comparable to beta
    terms = [scaffold.theorem4_rounds(sigma_sq=0.0, mu=0.5, beta=4.0, delta=1e-6, K=k, N=20, epsilon=0.01).value
             for k in (K, 2 * K)]
    assert terms[1] == pytest.approx(terms[0] / 2, rel=1e-4)


# -- FedProx --------------------------------------------------------------------------------------
RHO_POINTS = [(10.0, 0.1, 1.5, 1.0, 0.5, 100), (100.0, 0.0, 1.0, 1.0, 0.0, 1), (5.0, 1.0, 3.0, 2.0, 4.5, 7),
              (600.0, 0.0, 10.0, 1.0, 0.0, 400)]


def check_fedprox(module):
    for mu, gamma, B, L, Lm, K in RHO_POINTS:
        reference = rho_reference(mu, gamma, B, L, Lm, K)
        assert close(module.rho(mu=mu, gamma=gamma, B=B, L=L, L_minus=Lm, K=K), reference)
        assert close(module.theorem4(mu=mu, gamma=gamma, B=B, L=L, L_minus=Lm, K=K).value, reference)
        terms = module.rho_terms(mu=mu, gamma=gamma, B=B, L=L, L_minus=Lm, K=K)
        assert close(sum(terms.values()), reference)
    # by hand, mu = 4, gamma = 0, B = 1, L = 1, L_minus = 0, K = 2: 1/4 - sqrt(2)/(4 sqrt 2) - 1/16 - 1/32
    # - 1/(16*2) * (2*2 + 2) = 0.25 - 0.25 - 0.0625 - 0.03125 - 0.1875 = -0.28125
    assert close(module.rho(mu=4.0, gamma=0.0, B=1.0, L=1.0, L_minus=0.0, K=2), -0.28125)
    # Corollary 7: mu = 6 L B^2 = 24, rho = 1/(24 * 1 * 4) with L = 1, B = 2
    c7 = module.corollary7(L=1.0, B=2.0, K=100)
    assert close(c7.value, 1 / 96) and close(c7.derived["mu"], 24.0)
    assert close(module.corollary7(L=0.5, B=1.0, K=4).value, 1 / 12)
    assert close(module.corollary7(L=2.0, B=5.0, K=100).value, 1 / 1200)


def test_fedprox_rho_by_hand_and_against_mpmath():
    check_fedprox(fedprox)


@pytest.mark.parametrize("old, new", [("(2.0 * np.sqrt(2.0 * K) + 2.0)", "(2.0 * np.sqrt(K) + 2.0)"),
                                      ('"inexactness": gamma * B', '"inexactness": gamma * B / 2'),
                                      ("1.0 / (24.0 * L * B**2), {}", "1.0 / (12.0 * L * B**2), {}"),
                                      ("L * spread**2 / (2.0 * mu_bar)", "L * spread**2 / (4.0 * mu_bar)")])
def test_a_planted_wrong_fedprox_constant_is_caught(old, new):
    with pytest.raises(AssertionError):
        check_fedprox(planted(fedprox, old, new))


def test_fedprox_theorem6_and_theorem11_by_hand():
    point = dict(mu=600.0, gamma=0.0, B=10.0, L=1.0, L_minus=0.0, K=400)
    rho = float(rho_reference(*point.values()))
    result = fedprox.theorem6_rounds(Delta=2.0, epsilon=0.01, **point)
    assert result.value == math.ceil(2.0 / (rho * 0.01)) and close(result.derived["rho"], rho)
    assert result.derived["average_gradient_bound"] <= 0.01
    assert fedprox.theorem6_rounds(Delta=0.0, epsilon=0.01, **point).value == 1.0  # already optimal
    bad = fedprox.theorem6_rounds(Delta=1.0, epsilon=0.01, mu=4.0, gamma=0.0, B=1.0, L=1.0, L_minus=0.0, K=2)
    assert bad.value == math.inf and not bad.assumptions_hold  # rho = -0.28125: the theorem says nothing
    # Theorem 11: B = sqrt(1 + sigma^2/eps) = sqrt(1 + 3/1) = 2
    assert fedprox.dissimilarity_from_variance(3.0, 1.0) == 2.0
    assert fedprox.dissimilarity_from_variance(0.0, 0.5) == 1.0 and close(fedprox.dissimilarity_from_variance(1, 4),
                                                                          math.sqrt(1.25))
    t11 = fedprox.theorem11(mu=600.0, gamma=0.0, sigma_sq=99.0, epsilon=1.0, L=1.0, L_minus=0.0, K=400)
    assert t11.derived["B"] == 10.0 and close(t11.value, rho)


def test_fedprox_corollary7_against_theorem4_in_its_regime():
    """Theorem 4's rho at mu = 6 L B^2, gamma = 0 over 1/(24 L B^2): as B grows with B/sqrt(K) = r
    fixed it tends to 24 ((1 - sqrt(2) r)/6 - 1/72): 1 only at r = sqrt(2)/3, below 1 at the
    regime's edge r = 0.5 (the corollary's rho is then not guaranteed), above 1 for small r."""
    for r in (0.5, math.sqrt(2) / 3, 0.1):
        B = 2000.0
        K = round((B / r) ** 2)
        follows = fedprox.corollary7_follows(L=3.0, B=B, K=K)
        limit = 24 * ((1 - math.sqrt(2) * B / math.sqrt(K)) / 6 - 1 / 72)
        assert follows.derived["ratio"] == pytest.approx(limit, rel=2e-3)
    edge = fedprox.corollary7_follows(L=1.0, B=50.0, K=10000)
    assert not edge.assumptions_hold and edge.derived["ratio"] < 0.84
    inside = fedprox.corollary7_follows(L=1.0, B=50.0, K=10**6)
    assert inside.assumptions_hold and inside.derived["ratio"] > 2.5


@given(st.floats(1.0, 20.0), st.floats(0.0, 1.0), st.integers(1, 1000), st.floats(0.0, 5.0))
@examples(60)
def test_rho_falls_with_dissimilarity_inexactness_and_curvature_and_rises_with_devices(B, gamma, K, Lm):
    point = dict(mu=Lm + 50.0, gamma=gamma, B=B, L=1.0, L_minus=Lm, K=K)
    value = fedprox.rho(**point)
    slack = 1e-12 * (1.0 / point["mu"] + abs(value))
    assert fedprox.rho(**{**point, "B": B + 0.5}) <= value + slack
    assert fedprox.rho(**{**point, "gamma": min(1.0, gamma + 0.1)}) <= value + slack
    assert fedprox.rho(**{**point, "L_minus": Lm + 0.5}) <= value + slack
    assert fedprox.rho(**{**point, "K": K + 1}) >= value - slack


# -- CFL ------------------------------------------------------------------------------------------
def check_cfl(module):
    # H by hand: gamma_i = 0.6, gamma_j = 0.8: -0.48 + 0.8*0.6 = 0; gamma_i = gamma_j = 0.5: 1 - 2/4 = 0.5
    assert module.H(0.6, 0.8) == pytest.approx(0.0, abs=1e-15) and close(module.H(0.5, 0.5), 0.5)
    assert module.H(0.0, 0.0) == 1.0
    for gi, gj in [(0.1, 0.2), (0.3, 0.9), (0.0, 0.7), (0.99, 0.5)]:
        reference = -mp.mpf(gi) * gj + mp.sqrt(1 - mp.mpf(gi) ** 2) * mp.sqrt(1 - mp.mpf(gj) ** 2)
        assert close(module.H(gi, gj), reference)
        assert close(module.H(gi, gj), mp.cos(mp.asin(gi) + mp.asin(gj)))  # the angle-sum identity
    # cross bound by hand, k = 3 (pi/2): sqrt(1 - H^2) for H >= 0; H = 0.6 -> 0.8; H = -0.1 -> 1
    assert close(module.cross_similarity_bound(0.6, 3), 0.8) and module.cross_similarity_bound(-0.1, 3) == 1.0
    assert close(module.cross_similarity_bound(0.8, 2), -0.8)  # k = 2: -H
    for H_value, k in [(0.9, 4), (0.5, 4), (0.99, 10), (0.2, 5), (-0.5, 2)]:
        assert close(module.cross_similarity_bound(H_value, k), cross_reference(H_value, k))
    # Corollary 1's gap, k = 2, gamma_max = 0.5: floor 0.5, ceiling -0.5, gap 1
    c1 = module.corollary1(gamma_max=0.5, k=2)
    assert close(c1.value, 1.0) and close(c1.derived["gamma_max_limit"], math.sqrt(0.5))
    # k = 3, gamma_max = 0.5: floor 0.5, ceiling sqrt(0.75), gap 0.5 - 0.866
    assert close(module.corollary1(gamma_max=0.5, k=3).value, 0.5 - math.sqrt(0.75))
    assert close(module.intra_similarity_floor(0.3), 0.82) and close(module.split_threshold(0.5), 0.5)


def test_cfl_by_hand_and_against_mpmath():
    check_cfl(cfl)


@pytest.mark.parametrize("old, new", [("return -gamma_i * gamma_j + ", "return gamma_i * gamma_j + "),
                                      ("floor = 1.0 - 2.0 * gamma_max**2", "floor = 1.0 - gamma_max**2"),
                                      ("angle = np.pi / (k - 1)", "angle = np.pi / k")])
def test_a_planted_wrong_cfl_constant_is_caught(old, new):
    with pytest.raises(AssertionError):
        check_cfl(planted(cfl, old, new))


@given(st.floats(0.0, 0.999), st.floats(0.0, 0.999), st.integers(2, 12))
@examples(80)
def test_cfl_theorem1_structure(gi, gj, k):
    result = cfl.theorem1(gamma_i=gi, gamma_j=gj, k=k)
    H_value = result.derived["H"]
    assert -1.0 <= H_value <= 1.0 and result.value <= 1.0
    # H falls as either gamma grows; the cross bound never rises with H; for k = 2 it is -H
    assert cfl.H(min(0.999, gi + 0.01), gj) <= H_value + 1e-15
    assert cfl.cross_similarity_bound(min(1.0, H_value + 0.01), k) <= result.value + 1e-12
    if k == 2:
        assert result.value == -H_value
    # the worst pair: gamma_i = gamma_j = max(gi, gj) bounds every pair's H and cross bound
    worst = cfl.theorem1(gamma_i=max(gi, gj), gamma_j=max(gi, gj), k=k)
    assert worst.derived["H"] <= H_value + 1e-15 and worst.value >= result.value - 1e-12


@given(st.floats(0.001, 0.999), st.integers(2, 12))
@examples(80)
def test_cfl_corollary1_gap_is_positive_exactly_below_its_closed_form(gamma_max, k):
    result = cfl.corollary1(gamma_max=gamma_max, k=k)
    limit = math.sin(math.pi / (4 * (k - 1)))
    assume(abs(gamma_max - limit) > 1e-9)  # the boundary itself is decided by rounding
    assert (result.value > 0) == (gamma_max < limit) == result.assumptions_hold


@given(st.floats(0.001, 0.999), st.floats(-1.0, 1.0))
@examples(80)
def test_cfl_split_test_agrees_with_theorem1s_floor(gamma_max, alpha):
    rows = cfl.split_criterion(gamma_max=gamma_max, alpha_cross_max=alpha).assumptions
    assume(abs(1 - 2 * gamma_max**2 - alpha) > 1e-9)
    assert bool(rows[0].holds) == bool(rows[1].holds)


# -- invalid constants ----------------------------------------------------------------------------
FA = dict(L=4.0, mu=1.0, E=5, T=100, G=1.0, Gamma=0.5, initial_distance_sq=2.0)
RHO = dict(mu=10.0, gamma=0.1, B=1.5, L=1.0, L_minus=0.5, K=100)
VALID = {
    fedavg.variance_term: dict(p=[0.5, 0.5], sigma=[1.0, 2.0]),
    fedavg.unbalance: dict(p=[0.5, 0.25, 0.25]),
    fedavg.gamma: dict(L=4.0, mu=1.0, E=5),
    fedavg.step_size: dict(t=3, L=4.0, mu=1.0, E=5),
    fedavg.b_term: dict(weighted_variance=0.1, L=4.0, Gamma=0.5, E=5, G=1.0),
    fedavg.scheme1_c: dict(E=5, G=1.0, K=3),
    fedavg.scheme2_c: dict(E=5, G=1.0, K=3, N=10),
    fedavg.assumptions: dict(L=4.0, mu=1.0, E=5, K=3, N=10),
    fedavg.theorem1: dict(FA, weighted_variance=0.1),
    fedavg.theorem2: dict(FA, weighted_variance=0.1, K=3, N=10),
    fedavg.theorem3: dict(FA, weighted_variance=0.1, K=3, N=10),
    fedavg.theorem3_unbalanced: dict(FA, sigma_sq_sum=1.0, nu=1.5, varsigma=0.5, K=3, N=10),
    fedavg.theorem4_rate: dict(E=5, eta=0.1),
    localgd.assumptions: dict(L=1.0, gamma=0.05, H=4),
    localgd.theorem1: dict(initial_distance_sq=1.0, sigma_sq=1.0, L=1.0, gamma=0.05, H=4, T=100),
    localgd.corollary1_step: dict(L=1.0, M=4, T=100),
    localgd.corollary1: dict(initial_distance_sq=1.0, sigma_sq=1.0, L=1.0, H=3, T=100, M=10),
    localgd.corollary1_follows: dict(initial_distance_sq=1.0, sigma_sq=1.0, L=1.0, H=3, T=100, M=10),
    scaffold.theorem1_rounds: dict(sigma_sq=1.0, G=1.0, B=1.0, mu=0.5, beta=2.0, K=10, S=5, N=10, epsilon=0.01),
    scaffold.theorem2_lower: dict(G=1.0, mu=0.5, R=10),
    scaffold.theorem3_rounds: dict(sigma_sq=1.0, mu=0.5, beta=2.0, K=10, S=5, N=10, epsilon=0.01),
    scaffold.theorem4_rounds: dict(sigma_sq=1.0, mu=0.5, beta=2.0, delta=0.1, K=10, N=10, epsilon=0.01),
    fedprox.rho_terms: RHO,
    fedprox.rho: RHO,
    fedprox.assumptions: RHO,
    fedprox.theorem4: RHO,
    fedprox.corollary7: dict(L=1.0, B=2.0, K=100),
    fedprox.corollary7_follows: dict(L=1.0, B=2.0, K=100),
    fedprox.theorem6_rounds: dict(RHO, Delta=1.0, epsilon=0.01),
    fedprox.dissimilarity_from_variance: dict(sigma_sq=1.0, epsilon=0.5),
    fedprox.theorem11: dict({k: v for k, v in RHO.items() if k != "B"}, sigma_sq=1.0, epsilon=1.0),
    cfl.H: dict(gamma_i=0.2, gamma_j=0.3),
    cfl.cross_similarity_bound: dict(H_value=0.5, k=3),
    cfl.theorem1: dict(gamma_i=0.2, gamma_j=0.3, k=3),
    cfl.intra_similarity_floor: dict(gamma_max=0.3),
    cfl.corollary1: dict(gamma_max=0.3, k=2),
    cfl.split_threshold: dict(alpha_cross_max=0.1),
    cfl.split_criterion: dict(gamma_max=0.3, alpha_cross_max=0.1),
}


@pytest.mark.parametrize("function, kwargs", VALID.items(), ids=[f"{f.__module__}.{f.__name__}" for f in VALID])
def test_the_valid_calls_are_valid(function, kwargs):
    function(**kwargs)


@pytest.mark.parametrize("function, kwargs, name", invalid_calls(VALID))
def test_every_declared_range_is_refused_with_its_name(function, kwargs, name):
    assert_rejected(function, kwargs, name)


# The ranges that depend on other constants: (function, the bad change, the parameter named).
DEPENDENT = [
    (fedavg.theorem1, dict(mu=5.0), "mu"),  # mu > L
    (fedavg.gamma, dict(mu=4.5), "mu"),
    (fedavg.theorem1, dict(T=101), "T"),  # not a multiple of E
    (fedavg.theorem2, dict(K=11), "K"),  # K > N
    (fedavg.theorem3, dict(K=11), "K"),
    (fedavg.scheme2_c, dict(K=11), "K"),
    (fedavg.theorem3_unbalanced, dict(nu=11.0), "nu"),  # N max p_k > N
    (fedavg.theorem3_unbalanced, dict(varsigma=0.99), "varsigma"),  # nu = 1.5, N = 10: varsigma <= 8.5/9
    (fedavg.theorem3_unbalanced, dict(nu=1.0, varsigma=0.9), "varsigma"),  # balanced: varsigma = 1
    (fedavg.variance_term, dict(p=[0.5, 0.6], sigma=[1.0, 1.0]), "p"),  # p not summing to 1
    (fedavg.variance_term, dict(p=[0.5, 0.5], sigma=[1.0]), "sigma"),  # one sigma_k per device
    (fedavg.unbalance, dict(p=[0.5, 0.4]), "p"),
    (localgd.theorem1, dict(gamma=0.07), "gamma"),  # above 1/(4LH) = 1/16
    (localgd.corollary1, dict(H=4), "H"),  # above sqrt(T/M) = sqrt(10)
    (localgd.corollary1_follows, dict(H=4), "H"),
    (scaffold.theorem1_rounds, dict(S=11), "S"),  # S > N
    (scaffold.theorem3_rounds, dict(mu=3.0), "mu"),  # mu > beta
    (scaffold.theorem4_rounds, dict(mu=3.0), "mu"),
    (fedprox.theorem4, dict(mu=0.5), "mu"),  # mu <= L_minus
    (fedprox.rho, dict(mu=0.4), "mu"),
    (fedprox.theorem6_rounds, dict(mu=0.5), "mu"),
    (fedprox.theorem11, dict(mu=0.2), "mu"),
    (fedprox.corollary7, dict(K=15), "B"),  # B = 2 above 0.5 sqrt(15)
    (fedprox.corollary7_follows, dict(B=6.0), "B"),
]


@pytest.mark.parametrize("function, change, name", DEPENDENT,
                         ids=[f"{f.__module__.split('.')[-1]}.{f.__name__}-{n}" for f, _, n in DEPENDENT])
def test_a_range_that_depends_on_other_constants_is_refused_with_its_name(function, change, name):
    assert_rejected(function, {**VALID[function], **change}, name)


@pytest.mark.parametrize("argv, words", [
    (["bound", "FEDAVG.T3", *"--L 4 --mu 1 --E 5 --T 100 --G 1 --Gamma 0.5 --weighted-variance 0.01 "
      "--initial-distance-sq 2 --K 15 --N 10".split()], ["'K'", "[1, 10]", "K <= N", "Got 15"]),
    (["bound", "FEDAVG.T1", *"--L 4 --mu 5 --E 5 --T 100 --G 1 --Gamma 0.5 --weighted-variance 0.01 "
      "--initial-distance-sq 2".split()], ["'mu'", "(0, 4]", "Got 5.0 instead"]),
    (["bound", "FEDAVG.T1", *"--L 4 --mu 1 --E 0 --T 100 --G 1 --Gamma 0.5 --weighted-variance 0.01 "
      "--initial-distance-sq 2".split()], ["'E'", "Got 0"]),
    (["bound", "LOCALGD.T1", *"--initial-distance-sq 1 --sigma-sq 1 --L 1 --gamma 0.3 --H 2 --T 100".split()],
     ["'gamma'", "(0, 0.125]", "1/(4 L H)", "Got 0.3"]),
    (["bound", "FEDPROX.T4", *"--mu 0.4 --gamma 0 --B 1 --L 1 --L-minus 0.5 --K 10".split()],
     ["'mu'", "(0.5, inf)", "L_minus", "Got 0.4"]),
    (["bound", "FEDPROX.T4", *"--mu 4 --gamma 1.5 --B 1 --L 1 --L-minus 0.5 --K 10".split()], ["'gamma'", "[0, 1]"]),
    (["bound", "FEDPROX.T4", *"--mu 4 --gamma 0.5 --B 1 --L 1 --L-minus 0.5 --K 0".split()], ["'K'", "Got 0"]),
    (["bound", "CFL.C1", "--gamma-max", "1", "--k", "2"], ["'gamma_max'", "(0, 1)", "Got 1"]),
    # the claims that reuse these formulas (papers/fedprox, papers/cfl)
    ("bound FEDPROX.C7-FROM-T4 --L 1 --B 3 --K 0".split(), ["'K'", "Got 0"]),
    ("bound FEDPROX.T6 --Delta 1 --epsilon 0.1 --mu 1 --gamma 0 --B 1 --L 1 --L-minus 1 --K 3".split(),
     ["'mu'", "L_minus", "Got 1"]),
    ("bound FEDPROX.T11 --mu 3 --gamma -0.1 --sigma-sq 1 --epsilon 1 --L 1 --L-minus 0 --K 3".split(),
     ["'gamma'", "[0, 1]"]),
    ("bound CFL.C1-CODE --gamma-max 1 --k 3".split(), ["'gamma_max'", "(0, 1)", "Got 1"]),
    ("bound CFL.SPLIT --gamma-max 0 --alpha-cross-max 0.1".split(), ["'gamma_max'", "(0, 1)", "Got 0"]),
    ("bound CFL.C1-FROM-T1 --gamma-max 1.2 --k 3".split(), ["'gamma_max'", "Got 1.2"]),
    ("bound CFL.T1 --gamma-i 1 --gamma-j 0.1 --k 3".split(), ["'gamma_i'", "Got 1"]),
])
def test_the_command_refuses_invalid_constants_in_one_line(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and all(word in err for word in words), err


@pytest.mark.parametrize("claim_id, argv", [
    ("FEDAVG.T3U", "--L 4 --mu 1 --E 5 --T 100 --G 1 --Gamma 0.5 --sigma-sq-sum 1 --initial-distance-sq 2 --nu 1.5 "
                   "--varsigma 0.5 --K 3 --N 10 --noise-scaling linear"),
    ("LOCALGD.C1", "--initial-distance-sq 1 --sigma-sq 2 --L 1 --H 5 --T 100 --M 4"),
    ("SCAFFOLD.T2", "--G 3 --mu 0.5 --R 6 --c 2"),
    ("FEDPROX.C7", "--L 1 --B 2 --K 100"),
    ("CFL.T1", "--gamma-i 0.6 --gamma-j 0.8 --k 2"),
])
def test_the_command_evaluates_a_catalogue_formula(capsys, claim_id, argv):
    assert main(["bound", claim_id, *argv.split(), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["claim"] == claim_id and math.isfinite(data["value"])
