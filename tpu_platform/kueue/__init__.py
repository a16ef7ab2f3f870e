"""Kueue and JobSet, rendered purely from the stack: objects, controller Configuration, Helm values.

- ``objects``: ResourceFlavors, Cohorts, ClusterQueues, LocalQueues, namespaces, priorities (v1beta2);
- ``configuration``: Kueue's Configuration and the values of the pinned Kueue and JobSet charts;
- ``catalog``: ``queue_directory(cfg)``, what a workload linter needs to know about the queues.
"""

from .catalog import FlavorInfo, QueueDirectory, QueueInfo, queue_directory
from .configuration import JOBSET_VERSION, KUEUE_VERSION, jobset_values, kueue_configuration, kueue_values
from .objects import KUEUE_API, Flavor, QueueObjects, flavors, priority_objects, queue_objects

__all__ = [
    "JOBSET_VERSION",
    "KUEUE_API",
    "KUEUE_VERSION",
    "Flavor",
    "FlavorInfo",
    "QueueDirectory",
    "QueueInfo",
    "QueueObjects",
    "flavors",
    "jobset_values",
    "kueue_configuration",
    "kueue_values",
    "priority_objects",
    "queue_directory",
    "queue_objects",
]
