"""When pulumi-kubernetes replaces a Kubernetes provider, read from two plans' provider inputs.

``DiffConfig`` (provider.go, as derived in ``data/force_new.json``): a computed ``kubeconfig``,
``context`` or ``cluster`` replaces; a changed one replaces only when the old and the new kubeconfig
both name an active cluster (``getActiveClusterFromConfig``: the context, given or current, and its
cluster, or the ``cluster`` given) and the two clusters differ, so a provider that had no kubeconfig
(the ambient one) is updated, not replaced; ``clusterIdentifier`` replaces when it changes from one
value to another, and while it is set and unchanged nothing replaces; ``renderYamlToDirectory``
replaces on any change. A plan holds a kubeconfig as ``[secret]`` (or as a path, read at diff
time): whether its active cluster changed cannot be read, and the change says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml

from . import knowledge
from .harness import REDACTED

COMPUTED = "[computed]"
IDENTIFIER = "clusterIdentifier"
RENDER_DIR = "renderYamlToDirectory"
SOURCE = "pulumi-kubernetes provider.go DiffConfig"


def _config(value: Any) -> Mapping[str, Any] | None:
    """A kubeconfig input as a mapping: text (YAML or JSON) or an object; None when absent or unread."""
    if isinstance(value, Mapping):
        return value
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        doc = yaml.safe_load(value)
    except yaml.YAMLError:
        return None
    return doc if isinstance(doc, Mapping) else None


def _named(items: Any, name: Any, key: str) -> Any:
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping) and item.get("name") == name:
            return item.get(key)
    return None


def active_cluster(inputs: Mapping[str, Any]) -> Any:
    """The active cluster of a provider's kubeconfig with its overrides (None when none is found)."""
    config = _config(inputs.get("kubeconfig"))
    if config is None or not config.get("clusters"):
        return None
    context = inputs.get("context") if inputs.get("context") is not None else config.get("current-context")
    active = _named(config.get("contexts"), context, "context")
    if not isinstance(active, Mapping):
        return None
    name = inputs.get("cluster") if inputs.get("cluster") is not None else active.get("cluster")
    return _named(config.get("clusters"), name, "cluster")


def _why(key: str) -> str:
    provider = knowledge.kubernetes_rule("provider")
    return f"{provider['why'].get(key, key)} ({SOURCE})"


def provider_fields(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Per changed top-level input of a Kubernetes provider: (why it replaces, why its effect is
    unknown), each '' when it does not."""
    provider = knowledge.kubernetes_rule("provider")
    keys = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    out = {key: ("", "") for key in keys}
    if old.get(IDENTIFIER) is not None and old.get(IDENTIFIER) == new.get(IDENTIFIER):
        return out
    cluster_keys = provider["activeCluster"]
    computed = [k for k in cluster_keys if new.get(k) == COMPUTED]
    if computed:
        for key in computed:
            out[key] = (f"computed: {provider['activeClusterRule']} ({SOURCE})", "")
        return out
    if IDENTIFIER in out and old.get(IDENTIFIER) is not None and new.get(IDENTIFIER) is not None:
        out[IDENTIFIER] = (_why(IDENTIFIER), "")
    if RENDER_DIR in out:
        out[RENDER_DIR] = (_why(RENDER_DIR), "")
    changed = [k for k in cluster_keys if k in out]
    sides = (old.get("kubeconfig"), new.get("kubeconfig"))
    if not changed or None in sides:  # no kubeconfig on a side: no active cluster to compare
        return out
    if any(value == REDACTED or _config(value) is None for value in sides):
        for key in changed:
            out[key] = (
                "",
                f"the plan holds the kubeconfig as {REDACTED} or as a path, not its clusters: "
                f"{provider['activeClusterRule']}",
            )
        return out
    before, after = active_cluster(old), active_cluster(new)
    if (
        before is not None
        and after is not None
        and json.dumps(before, sort_keys=True) != json.dumps(after, sort_keys=True)
    ):
        for key in changed:
            out[key] = (f"the active cluster changes: {_why(key)}", "")
    return out
