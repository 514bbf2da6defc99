"""Batched torch implementations of clustered federated learning methods."""
from .affinity_propagation import AffinityResult, affinity_propagation
from .baselines import fedavg, local_training
from .cfl_mgd import cfl_mgd
from .dsc import DescentTrace, Hierarchy, hierarchical_descent, hierarchy
from .dsc_grouping import Grouping, dsc_grouping
from .client_sampling import SCHEMES
from .cosine_bipartition import (BIPARTITIONS, bipartition, cosine_similarities, cross_similarity_max,
                                 intra_similarity_min, max_cross_similarity, splits_no_distribution)
from .cosine_cfl import CosineCflTrace, SplitTest, cosine_cfl
from .fedavg_noniid import fedavg_noniid
from .fedcluster import FedClusterTrace, fedcluster
from .fedprox import FedProxTrace, fedprox
from .federated import (
    FederatedTrace,
    client_accuracy,
    client_gradients,
    client_losses,
    clustered_fedavg,
    federated_round,
    gather_groups,
    group_average,
    group_sums,
    local_steps,
)
from .ifca import SlotView, ifca
from .ifca_models import IfcaModelsTrace, ifca_models
from .iterate_trace import IterateTrace, MeasuredConstant, measured_gradient_bound
from .lcfl import LcflTrace, lcfl
from .local_gd import local_gd
from .local_gd_segments import local_gd_segments
from .local_updates import DecayingStep, RoundDecayingStep, paper_step
from .scaffold import fedavg_two_steps, scaffold
from .small_models import MLP, BoundedLinear, SoftmaxRegression, initial_parameters
from .trace import ClusteringTrace, matched_distances

__all__ = [
    "ifca",
    "cfl_mgd",
    "SlotView",
    "ClusteringTrace",
    "matched_distances",
    "SoftmaxRegression",
    "MLP",
    "BoundedLinear",
    "initial_parameters",
    "client_losses",
    "client_accuracy",
    "client_gradients",
    "local_steps",
    "group_sums",
    "group_average",
    "gather_groups",
    "federated_round",
    "clustered_fedavg",
    "FederatedTrace",
    "fedavg",
    "local_training",
    "ifca_models",
    "IfcaModelsTrace",
    "lcfl",
    "LcflTrace",
    "affinity_propagation",
    "AffinityResult",
    "dsc_grouping",
    "Grouping",
    "hierarchy",
    "Hierarchy",
    "hierarchical_descent",
    "DescentTrace",
    "fedcluster",
    "FedClusterTrace",
    "fedavg_noniid",
    "SCHEMES",
    "fedavg_two_steps",
    "scaffold",
    "local_gd",
    "local_gd_segments",
    "DecayingStep",
    "RoundDecayingStep",
    "paper_step",
    "IterateTrace",
    "MeasuredConstant",
    "measured_gradient_bound",
    "fedprox",
    "FedProxTrace",
    "cosine_cfl",
    "CosineCflTrace",
    "SplitTest",
    "BIPARTITIONS",
    "bipartition",
    "cosine_similarities",
    "max_cross_similarity",
    "cross_similarity_max",
    "intra_similarity_min",
    "splits_no_distribution",
]
