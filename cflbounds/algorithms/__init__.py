"""Batched torch implementations of clustered federated learning methods."""
from .ifca import SlotView, ifca
from .trace import ClusteringTrace, matched_distances

__all__ = ["ifca", "SlotView", "ClusteringTrace", "matched_distances"]
