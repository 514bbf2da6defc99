"""Every validated public function of bounds/ and synthetic/, fed each invalid value of each
declared parameter: a clear ``InvalidParameterError`` naming the parameter, the function and
the value (scikit-learn's generic test). Each paper's test file keeps the valid calls of its
own functions; this module holds the rest and checks that no such function lacks one, so a new
bound or generator cannot skip the test. (Algorithms take problem objects and are validated by
their own files' invalid-input and fuzz tests.)
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil

import numpy as np
import pytest
from test_bounds_catalogue import VALID as CATALOGUE_BOUNDS
from test_bounds_ifca import VALID as IFCA_BOUNDS
from test_cfl_problems import VALID as CFL_PROBLEMS
from test_cfl_mgd_bounds import VALID as MGD_BOUNDS
from test_cfl_mgd_logistic_mixture import VALID as LOGISTIC_MIXTURE
from test_cfl_mgd_pep import VALID as PEP
from test_dsc_bounds import VALID as DSC_BOUNDS
from test_fedprox_problems import VALID as FEDPROX_PROBLEMS

from cflbounds.bounds import dsc, fedcluster, lcfl
from cflbounds.synthetic import (label_mixture, make_bounded_linear_clusters, make_device_regression,
                                 make_digit_clients, make_logistic_mixture, make_mixed_linear_regression,
                                 make_nonconvex_federation, make_partition, make_quadratic_federation,
                                 make_wireless_layout, upload_noise_variance)
from cflbounds.synthetic.heterogeneous_logistic import make_heterogeneous_logistic
from cflbounds.synthetic.heterogeneous_quadratics import make_heterogeneous_quadratics
from cflbounds.synthetic.partitions import similarity_order
from cflbounds.synthetic.wireless import layout_from_positions
from cflbounds.verify.testing import assert_rejected, invalid_calls

FC_T1 = dict(L=0.1, E=5, M=4, initial_gap=1.0, H_cluster=0.1, variance=0.1, G=1.0)
WEIGHTS, MEMBERSHIP = np.array([0.25, 0.25, 0.5]), np.array([0, 0, 1])
SIGMA_XX = np.array([[2.0, 0.5], [0.5, 1.0]])
DSC_CONSTANTS = dict(initial_gap=1.0, L=2.0, mu=1.0, learning_rate=0.1, delta_inter=1.2, delta_intra=1.5,
                     weight_factor=0.3, noise_factor=0.1)
VALID = {
    fedcluster.best_cluster_count: dict(M_values=[1, 2, 4], C_values=[1.0, 1.5, 3.0]),
    fedcluster.cluster_weights: dict(weights=WEIGHTS, membership=MEMBERSHIP),
    fedcluster.constant_c: dict(initial_gap=1.0, L=0.1, H_cluster=0.1, variance=0.1),
    fedcluster.random_partition_constant: dict(M=4, n=16, L=0.1, initial_gap=1.0, H_device=1.0, mean_variance=0.1),
    fedcluster.rounds_to_stationarity: dict(C=1.0, M=4, E=5, epsilon=0.1),
    fedcluster.smallest_rounds: dict(L=0.1, E=5, M=4),
    fedcluster.speedup: dict(M=4, E=5, T=1000, C=1.0, C_fedavg=1.0),
    fedcluster.theorem1: dict(FC_T1, T=1000),
    fedcluster.theorem1_conditions: dict(L=0.1, E=5, M=4, T=1000, C=1.0, G=1.0),
    fedcluster.theorem1_feasibility: FC_T1,
    fedcluster.tradeoff: dict(n=16, L=0.1, initial_gap=1.0, H_device=1.0, mean_variance=0.1),
    fedcluster.variance_term: dict(weights=WEIGHTS, variances=[0.1, 0.2, 0.3], membership=MEMBERSHIP),
    lcfl.discrepancy_bound: dict(disc=0.3),
    lcfl.excess_loss_identity: dict(sigma_xx=SIGMA_XX, sigma_xy=[1.0, 0.5], sigma_xy_hat=[1.1, 0.4]),
    lcfl.excess_loss_sandwich: dict(difference_norm_sq=0.1, lambda_min=1.0, lambda_max=2.0),
    lcfl.linear_rademacher_bound: dict(m=100, lipschitz=0.25, weight_norm=3.0, input_norm=1.0),
    lcfl.theorem1: dict(delta=0.05, m_i=200, m_j=300, rademacher_i=0.05, rademacher_j=0.04),
    dsc.weight_factor: dict(group_weights=[0.4, 0.6], client_weights=WEIGHTS, group=MEMBERSHIP),
    dsc.noise_factor: dict(group_weights=[0.4, 0.6], group_noise=[0.1, 0.2], client_weights=WEIGHTS,
                           client_noise=[0.1, 0.1, 0.2], group=MEMBERSHIP),
    dsc.theorem1_curve: dict(DSC_CONSTANTS, iterates=[0, 5, 10], iterations=10),
    make_bounded_linear_clusters: dict(client_sizes=(20, 30), membership=(0, 1), d=3, atoms=50),
    make_device_regression: dict(clients=4, d=2, samples=5),
    make_digit_clients: dict(m=8, k=4, train_per_client=10, test_per_client=5),
    make_mixed_linear_regression: dict(k=2, m=10, n=5, d=5),
    make_nonconvex_federation: dict(clients=4, d=3),
    make_partition: dict(features=np.arange(12.0).reshape(6, 2), clusters=2),
    similarity_order: dict(features=np.arange(12.0).reshape(6, 2)),
    make_quadratic_federation: dict(clients=4, d=3),
    make_heterogeneous_quadratics: dict(clients=3, d=2),
    make_heterogeneous_logistic: dict(k=2, clients=4, n=5, d=2),
    label_mixture: dict(labels=make_quadratic_federation(3, 2, clusters=1, noise_std=0.0),
                        label_counts=[[1, 2, 0], [0, 1, 1]]),
    make_wireless_layout: dict(clients=5),
    layout_from_positions: dict(positions=[[10.0, 0.0], [0.0, 20.0], [-5.0, -5.0]]),
    upload_noise_variance: dict(snr=np.array([1e-4, 1e-6]), noise_scale=10.0),
}
ELSEWHERE = {**IFCA_BOUNDS, **MGD_BOUNDS, **PEP, **DSC_BOUNDS, **CATALOGUE_BOUNDS, **CFL_PROBLEMS, **FEDPROX_PROBLEMS,
             make_logistic_mixture: LOGISTIC_MIXTURE}


def _validated_public_functions(*subpackages) -> set:
    found = set()
    for name in subpackages:
        package = importlib.import_module(f"cflbounds.{name}")
        for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            found |= {obj for key, obj in vars(module).items() if not key.startswith("_") and callable(obj)
                      and hasattr(obj, "parameter_constraints") and obj.__module__ == module.__name__}
    return found


def test_every_validated_bound_and_generator_has_a_valid_call():
    missing = _validated_public_functions("bounds", "synthetic") - set(VALID) - set(ELSEWHERE)
    assert not missing, f"add a valid call for {sorted(f'{f.__module__}.{f.__name__}' for f in missing)}"


@pytest.mark.parametrize("function, kwargs", VALID.items(), ids=[f.__name__ for f in VALID])
def test_the_valid_calls_are_valid(function, kwargs):
    function(**kwargs)


@pytest.mark.parametrize("function, kwargs, name", invalid_calls(VALID))
def test_every_parameter_is_validated_with_its_name(function, kwargs, name):
    assert_rejected(function, kwargs, name)


@pytest.mark.parametrize("function", [*VALID, *ELSEWHERE], ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_every_parameter_is_declared(function):
    """A parameter left out of ``parameter_constraints`` would escape the test above (``**options``
    forwarded to another validated function are checked there)."""
    named = {name for name, parameter in inspect.signature(function).parameters.items()
             if parameter.kind is not inspect.Parameter.VAR_KEYWORD}
    undeclared = named - set(function.parameter_constraints)
    assert not undeclared, f"{function.__name__} does not validate {sorted(undeclared)}"
