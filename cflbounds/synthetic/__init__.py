"""Synthetic problems with known ground truth and exact population constants."""
from .bounded_linear import BoundedLinearClusters, make_bounded_linear_clusters
from .cfl_quadratics import CflQuadratics, make_cfl_quadratics
from .client_data import ClientData
from .device_regression import DeviceRegression, make_device_regression
from .digit_risks import DigitRisks, make_digit_risks
from .digits import DigitClients, make_digit_clients
from .dissimilarity_constants import dissimilarity_sup, gradient_norm_sq, gradient_variance, gradient_variance_bound
from .heterogeneous_logistic import HeterogeneousLogistic, make_heterogeneous_logistic
from .heterogeneous_quadratics import HeterogeneousQuadratics, make_heterogeneous_quadratics
from .logistic_mixture import LogisticMixture, make_logistic_mixture
from .nonconvex import NonconvexFederation, make_nonconvex_federation
from .partitions import PARTITIONS, make_partition
from .mixed_linear_regression import MixedLinearRegression, cluster_sizes, make_mixed_linear_regression
from .quadratics import QuadraticFederation, label_mixture, make_quadratic_federation
from .resampling import resampling_batch_size
from .seeding import problem_seeds, spawn_seeds, stream
from .wireless import PAPER_CHANNEL, ChannelConstants, WirelessLayout, make_wireless_layout, upload_noise_variance

__all__ = [
    "BoundedLinearClusters",
    "make_bounded_linear_clusters",
    "ClientData",
    "CflQuadratics",
    "make_cfl_quadratics",
    "DigitRisks",
    "make_digit_risks",
    "dissimilarity_sup",
    "gradient_norm_sq",
    "gradient_variance",
    "gradient_variance_bound",
    "DeviceRegression",
    "make_device_regression",
    "DigitClients",
    "make_digit_clients",
    "HeterogeneousLogistic",
    "make_heterogeneous_logistic",
    "HeterogeneousQuadratics",
    "make_heterogeneous_quadratics",
    "MixedLinearRegression",
    "make_mixed_linear_regression",
    "LogisticMixture",
    "make_logistic_mixture",
    "cluster_sizes",
    "QuadraticFederation",
    "make_quadratic_federation",
    "label_mixture",
    "NonconvexFederation",
    "make_nonconvex_federation",
    "PARTITIONS",
    "make_partition",
    "resampling_batch_size",
    "problem_seeds",
    "spawn_seeds",
    "stream",
    "ChannelConstants",
    "PAPER_CHANNEL",
    "WirelessLayout",
    "make_wireless_layout",
    "upload_noise_variance",
]
