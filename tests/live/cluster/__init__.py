"""The live tier's harness: the real control plane, kwok, JobSet and Kueue as local processes."""

from .cluster import Installed, LiveCluster
from .kube import ApiError, Kube, wait_for

__all__ = ["ApiError", "Installed", "Kube", "LiveCluster", "wait_for"]
