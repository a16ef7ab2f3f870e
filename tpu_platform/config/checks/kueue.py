"""Checks of the ``kueue`` section: flavor names match the pools' shapes and stay distinct."""

from __future__ import annotations

from ... import catalog
from ..capacity import pool_slices
from ..formats import parse_quantity
from ..platform import PlatformConfig
from ..problems import Loc, Problems
from ..shapes import default_flavor_name, describe_shape
from ..sizing import controller_sizes
from .common import check_shape


def check_kueue(cfg: PlatformConfig) -> Problems:
    """Flavor names only for the pools' shapes, one per shape, none taking another's default."""
    problems = Problems()
    provided = pool_slices(cfg)
    seen_shapes: dict[catalog.SliceShape, int] = {}
    seen_names: dict[str, int] = {}
    for index, entry in enumerate(cfg.kueue.flavors):
        here: Loc = ("kueue", "flavors", index)
        shape = check_shape(entry.topology, entry.multi_host, here, problems)
        if shape is None:
            continue
        if shape not in provided:
            problems.add(
                (*here, "topology"),
                f"no slice pool provides {describe_shape(shape)} slices; name flavors only for shapes in "
                f"slicePools",
            )
        if shape in seen_shapes:
            problems.add(
                here, f"{describe_shape(shape)} is already named by kueue.flavors[{seen_shapes[shape]}]"
            )
        seen_shapes[shape] = index
        if entry.name in seen_names:
            problems.add(
                (*here, "name"),
                f"flavor name {entry.name!r} is also used by kueue.flavors[{seen_names[entry.name]}]",
            )
        seen_names[entry.name] = index
    _check_sizes(cfg, problems)
    _check_ignored(cfg, problems)
    defaults = {default_flavor_name(shape): shape for shape in provided if shape not in seen_shapes}
    for index, entry in enumerate(cfg.kueue.flavors):
        other = defaults.get(entry.name)
        if other is not None:
            problems.add(
                ("kueue", "flavors", index, "name"),
                f"{entry.name!r} is the default flavor name of the {describe_shape(other)} slices; choose "
                f"another name",
            )
    return problems


def _check_sizes(cfg: PlatformConfig, problems: Problems) -> None:
    """Final requests within final limits (tier defaults plus overrides): the API server rejects a
    container whose request exceeds its limit (Kubernetes ``ValidateResourceRequirements``), and the
    chart's Deployment would never roll out."""
    for key, size in zip(("controller", "jobset"), controller_sizes(cfg), strict=True):
        for resource, request in size.requests.items():
            limit = size.limits.get(resource)
            if limit is not None and parse_quantity(request) > parse_quantity(limit):
                problems.add(
                    ("kueue", key, "requests", resource),
                    f"request {request} is above the limit {limit}; Kubernetes rejects a container whose "
                    f"request exceeds its limit: lower it or set kueue.{key}.limits.{resource}",
                )


def _check_ignored(cfg: PlatformConfig, problems: Problems) -> None:
    """Settings of a switched-off mode: Kueue reads waitForPodsReady's fields only while it is on
    (kueue v0.19.2 ``pkg/config/validation.go`` validates them only then) and fair sharing's
    strategies only with fair sharing on (``site/content/en/docs/concepts/preemption.md``)."""
    wait = cfg.kueue.wait_for_pods_ready
    if not wait.enabled:
        fields = type(wait).model_fields
        for name in sorted(wait.model_fields_set - {"enabled"}):
            key = fields[name].alias or name
            problems.add(
                ("kueue", "waitForPodsReady", key),
                "has no effect while waitForPodsReady.enabled is false (Kueue ignores it); remove it or "
                "enable waitForPodsReady",
            )
    fair = cfg.kueue.fair_sharing
    if not fair.enabled and "preemption_strategies" in fair.model_fields_set:
        problems.add(
            ("kueue", "fairSharing", "preemptionStrategies"),
            "has no effect while fairSharing.enabled is false (Kueue ignores it); remove it or enable "
            "fair sharing",
        )
