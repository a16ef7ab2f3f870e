"""``ExistingCluster``: a cluster the platform reaches only through a kubeconfig (``cluster.mode:
kubeconfig``), for the Kubernetes half alone.

It offers what the in-cluster components read from ``GkeCluster`` (a name and one explicit
Kubernetes provider) and registers nothing but that provider: no Google resource, no Google API
call. The provider reads the file and context as ``kubectl`` does (pulumi-kubernetes ``Provider``:
``kubeconfig`` is a file's path or contents, unset: ``$KUBECONFIG`` or ``~/.kube/config``; ``context``
unset: the file's current context).
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from tpu_platform.config import ClusterConfig
from tpu_platform.config.checks.kubeconfig_file import holds_contents


def kubeconfig_input(kubeconfig: str | None) -> pulumi.Input[str] | None:
    """A kubeconfig's contents as a secret: they may hold client keys and tokens, which the
    provider would otherwise keep in the state in plain text; a file's path stays readable."""
    if kubeconfig is None or not holds_contents(kubeconfig):
        return kubeconfig
    return pulumi.Output.secret(kubeconfig)


class ExistingCluster(pulumi.ComponentResource):
    """The cluster of a kubeconfig context, and a Kubernetes provider bound to it."""

    name: pulumi.Output[str]
    provider: k8s.Provider
    system_pool: None = None
    private_endpoint: None = None
    node_service_account: None = None

    def __init__(self, name: str, cluster: ClusterConfig, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("tpu-platform:kubeconfig:Cluster", name, None, opts)
        self.name = pulumi.Output.from_input(cluster.name)
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=kubeconfig_input(cluster.kubeconfig),
            context=cluster.context,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({"name": self.name})
