"""Which Kueue and JobSet a kubeconfig-mode cluster already runs, read before anything changes.

GET and LIST only, with the official client (``tpu_platform.status.fetch``) on the stack's own
kubeconfig and context, the ones its Kubernetes provider uses: the two add-ons' CRDs, every
Deployment, the webhook configurations and, in the namespaces those point to, the namespaces, Helm's
release records and the Kueue controller's ConfigMaps. ``tpu_platform.kueue.found`` makes sense of
them. It runs in the program, at preview as at up; under Pulumi's mocks (the offline plan, the unit
tests) there is no cluster, and nothing is read.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import Any

import pulumi
from pulumi.runtime.mocks import MockMonitor

from tpu_platform.config import ClusterConfig, PlatformConfig
from tpu_platform.config.checks.kubeconfig_file import holds_contents
from tpu_platform.kueue.found import (
    ADDONS,
    HELM_RELEASE_SELECTOR,
    NOTHING,
    ClusterObjects,
    FoundInstalls,
    candidate_namespaces,
    found_installs,
    running_controllers,
)
from tpu_platform.status.fetch import Get, ReadError, client_getter, list_all

JSON = dict[str, Any]
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
WEBHOOKS = {
    "ValidatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    "MutatingWebhookConfiguration": "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
}


class UnreadableCluster(pulumi.RunError):
    """The cluster could not be read: going on could install a second Kueue or JobSet."""


def under_mocks() -> bool:
    return isinstance(pulumi.runtime.settings.get_monitor(), MockMonitor)


@contextlib.contextmanager
def kubeconfig_file(kubeconfig: str | None) -> Iterator[str | None]:
    """A path for the client: the stack's file as it is, its contents in a private temporary file."""
    if kubeconfig is None or not holds_contents(kubeconfig):
        yield os.path.expanduser(kubeconfig) if kubeconfig else None
        return
    with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig", delete=True) as handle:
        os.chmod(handle.name, 0o600)
        handle.write(kubeconfig)
        handle.flush()
        yield handle.name


def _get_or_none(get: Get, path: str) -> JSON | None:
    try:
        return get(path, [])
    except ReadError as err:
        if err.status == 404:
            return None
        raise


def read_cluster(get: Get) -> ClusterObjects:
    """Everything :func:`found_installs` looks at; a Helm record or ConfigMap the caller may not read
    is noted (``unread``), anything else it may not read stops the run."""
    crds = [
        doc for a in ADDONS for n in a.crds if (doc := _get_or_none(get, CRD_PATH.format(name=n))) is not None
    ]
    deployments = list_all(get, "/apis/apps/v1/deployments")
    webhooks = [{**item, "kind": kind} for kind, path in WEBHOOKS.items() for item in list_all(get, path)]
    unread: list[str] = []
    namespaces, secrets, config_maps = [], [], []
    for ns in sorted(candidate_namespaces(deployments, webhooks)):
        namespace = _get_or_none(get, f"/api/v1/namespaces/{ns}")
        if namespace is None:
            continue
        namespaces.append(namespace)
        try:
            secrets += list_all(get, f"/api/v1/namespaces/{ns}/secrets", HELM_RELEASE_SELECTOR)
        except ReadError as err:
            if err.status != 403:
                raise
            unread.append(f"Helm release records in {ns}: {err}")
    for controller in {c for a in ADDONS for c in running_controllers(deployments, a)}:
        for name in controller.config_maps:
            try:
                doc = _get_or_none(get, f"/api/v1/namespaces/{controller.namespace}/configmaps/{name}")
            except ReadError as err:
                if err.status != 403:
                    raise
                unread.append(f"ConfigMap {controller.namespace}/{name}: {err}")
                continue
            if doc is not None:
                config_maps.append(doc)
    return ClusterObjects(
        crds=crds,
        deployments=deployments,
        webhook_configurations=webhooks,
        namespaces=namespaces,
        helm_secrets=secrets,
        config_maps=config_maps,
        unread=tuple(unread),
    )


def read_installs(cluster: ClusterConfig) -> FoundInstalls:
    source = "cluster.kubeconfig" if cluster.kubeconfig else "$KUBECONFIG or ~/.kube/config"
    where = f"context {cluster.context or '(current)'} of {source}"
    try:
        with kubeconfig_file(cluster.kubeconfig) as path:
            objects = read_cluster(client_getter(path, cluster.context))
    except ReadError as err:
        raise UnreadableCluster(
            f"could not read which Kueue and JobSet the cluster runs ({where}), which the platform checks "
            f"before changing anything: {err}. It needs get and list on CustomResourceDefinitions, "
            "Deployments, webhook configurations and namespaces; fix cluster.kubeconfig, cluster.context "
            "or the credentials they name"
        ) from err
    except Exception as err:  # the client's own: a kubeconfig it cannot load, an unknown context
        raise UnreadableCluster(
            f"could not read which Kueue and JobSet the cluster runs ({where}): {type(err).__name__}: {err}"
        ) from err
    return found_installs(objects)


def existing_installs(cfg: PlatformConfig) -> FoundInstalls:
    """What the stack's cluster runs of Kueue and JobSet: read on a cluster the platform did not
    create; nothing on one it creates, or under Pulumi's mocks."""
    if not cfg.cluster.reached_by_kubeconfig or under_mocks():
        return NOTHING
    return read_installs(cfg.cluster)
