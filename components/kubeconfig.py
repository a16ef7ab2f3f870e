"""Kubeconfig for the explicit Kubernetes provider, authenticated by gke-gcloud-auth-plugin."""

from __future__ import annotations

import json


def render_kubeconfig(cluster_name: str, endpoint: str, ca_certificate: str | None) -> str:
    """A kubeconfig that uses the GKE exec plugin, so no static credential is ever stored.

    ``endpoint`` is the one ``pulumi up`` can reach: the DNS-based endpoint (served with a publicly
    trusted certificate, so no CA is pinned, as ``gcloud container clusters get-credentials
    --dns-endpoint`` writes it) or the IP endpoint with the cluster's own CA.
    """
    context = f"gke_{cluster_name}"
    cluster: dict[str, str] = {"server": f"https://{endpoint}"}
    if ca_certificate is not None:
        cluster["certificate-authority-data"] = ca_certificate
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": cluster}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
        "users": [
            {
                "name": context,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "installHint": "Install gke-gcloud-auth-plugin: "
                        "gcloud components install gke-gcloud-auth-plugin",
                        "provideClusterInfo": True,
                    }
                },
            }
        ],
    }
    return json.dumps(doc, sort_keys=True)
