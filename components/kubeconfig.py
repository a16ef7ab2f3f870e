"""Kubeconfig for the explicit Kubernetes provider, authenticated by gke-gcloud-auth-plugin."""

from __future__ import annotations

import json


def render_kubeconfig(cluster_name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig that uses the GKE exec plugin, so no static credential is ever stored."""
    context = f"gke_{cluster_name}"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": context,
                "cluster": {
                    "server": f"https://{endpoint}",
                    "certificate-authority-data": ca_certificate,
                },
            }
        ],
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
