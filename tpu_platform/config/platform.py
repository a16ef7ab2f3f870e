"""The whole stack: one model, structural validation by pydantic, cross-field checks here.

Cross-field checks collect every problem (not just the first) with its config path, so a
user fixes a stack file in one pass. Nothing is registered with Pulumi until the stack
passes all of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field, ValidationError

from .. import catalog
from .base import GCP_KEYS, StackConfigError, StackModel, explain, format_path
from .cluster import ClusterConfig
from .hotswap import HOTSWAP_CHECKS, HotswapConfig
from .pools import LABEL_VALUE_RE, SlicePoolConfig
from .queues import DEFAULT_PRIORITIES, QUEUE_CHECKS, CohortConfig, KueueConfig, PriorityConfig, TeamConfig

REGION_RE = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
ZONE_RE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")
SYSTEM_POOL_NAME = "system"
NO_RESERVATION_TYPES = ("spot", "flexStart", "queuedProvisioning")


class PlatformConfig(StackModel):
    """Everything one environment needs, as read from ``stacks/Pulumi.<stack>.yaml``."""

    project: str
    region: str
    zone: str
    cluster: ClusterConfig
    slice_pools: list[SlicePoolConfig] = Field(min_length=1)
    priorities: list[PriorityConfig] = Field(default_factory=lambda: list(DEFAULT_PRIORITIES))
    kueue: KueueConfig = KueueConfig()
    cohorts: list[CohortConfig] = Field(default_factory=list)
    teams: list[TeamConfig] = Field(default_factory=list)
    hotswap: HotswapConfig = HotswapConfig()
    acknowledge_replacement: list[str] = Field(default_factory=list)  # TPU pools `plan --check` may replace

    @property
    def cluster_location(self) -> str:
        """Where the control plane lives: the configured location, else the region."""
        return self.cluster.location or self.region

    def pool_zone(self, pool: SlicePoolConfig) -> str:
        """The single zone a slice pool is pinned to (COMPACT placement needs one zone)."""
        return pool.zone or self.zone


Loc = tuple[int | str, ...]


class Problems:
    """Collects path-qualified problems so every mistake is reported at once."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, loc: Loc, message: str) -> None:
        self.lines.append(f"{format_path(loc)}: {message}")

    def raise_if_any(self) -> None:
        if self.lines:
            raise StackConfigError(self.lines)


CrossCheck = Callable[[PlatformConfig, Problems], None]


def parse_version(version: str) -> tuple[int, ...] | None:
    """``1.31.2-gke.1115000`` -> ``(1, 31, 2, 1115000)``; None for aliases like ``latest``."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-gke\.(\d+))?$", version)
    if not match:
        return None
    return tuple(int(g) if g is not None else 0 for g in match.groups())


def _check_locations(cfg: PlatformConfig, problems: Problems) -> None:
    if not REGION_RE.match(cfg.region):
        problems.add(("region",), f"{cfg.region!r} is not a GCP region name such as 'us-east5'")
    zone_match = ZONE_RE.match(cfg.zone)
    if not zone_match or zone_match.group(1) != cfg.region:
        problems.add(
            ("zone",),
            f"zone {cfg.zone!r} is not in region {cfg.region!r}; use a zone such as '{cfg.region}-b'",
        )
    location = cfg.cluster.location
    if location is not None and location != cfg.region:
        loc_match = ZONE_RE.match(location)
        if not loc_match or loc_match.group(1) != cfg.region:
            problems.add(
                ("cluster", "location"),
                f"{location!r} is neither region {cfg.region!r} nor a zone in it",
            )
    for index, pool in enumerate(cfg.slice_pools):
        if pool.zone is None:
            continue
        pool_match = ZONE_RE.match(pool.zone)
        if not pool_match or pool_match.group(1) != cfg.region:
            problems.add(
                ("slicePools", index, "zone"),
                f"zone {pool.zone!r} is not in region {cfg.region!r}; TPU pools must sit in the "
                "cluster's region, in exactly one zone (COMPACT placement)",
            )
        elif location is not None and ZONE_RE.match(location) and pool.zone != location:
            problems.add(
                ("slicePools", index, "zone"),
                f"the cluster is zonal ({location}); its node pools cannot live in {pool.zone}",
            )


def _check_cluster(cfg: PlatformConfig, problems: Problems) -> None:
    cluster = cfg.cluster
    if cluster.mode == "adopt":
        for key in cluster.creation_only_fields_set():
            problems.add(
                ("cluster", key),
                "only applies when the platform creates the cluster (mode: create); "
                "remove it when adopting an existing cluster",
            )
    if cluster.min_master_version:
        _check_tpu_version(("cluster", "minMasterVersion"), cluster.min_master_version, problems)
    for cidr_index, cidr in enumerate(cluster.master_authorized_cidrs or []):
        if not re.match(r"^\d{1,3}(\.\d{1,3}){3}/\d{1,2}$", cidr):
            problems.add(
                ("cluster", "masterAuthorizedCidrs", cidr_index),
                f"{cidr!r} is not an IPv4 CIDR such as '10.0.0.0/8'",
            )


def _check_tpu_version(loc: Loc, version: str, problems: Problems) -> None:
    parsed = parse_version(version)
    minimum = parse_version(catalog.MIN_GKE_VERSION)
    if parsed is not None and minimum is not None and parsed < minimum:
        problems.add(
            loc,
            f"TPU v6e on GKE Standard needs GKE {catalog.MIN_GKE_VERSION} or later; got {version!r}",
        )


def _check_pools(cfg: PlatformConfig, problems: Problems) -> None:
    seen: dict[str, int] = {}
    for index, pool in enumerate(cfg.slice_pools):
        here: Loc = ("slicePools", index)
        try:
            catalog.lookup(pool.topology, pool.multi_host)
        except catalog.UnsupportedSliceError as err:
            problems.add((*here, "topology"), str(err))
        if pool.multi_host is not None and pool.topology != "2x4":
            problems.add(
                (*here, "multiHost"),
                "only 2x4 has two forms; remove multiHost (the topology fixes the VM count)",
            )
        for name in pool.pool_names():
            if name == SYSTEM_POOL_NAME:
                problems.add((*here, "name"), f"{name!r} is reserved for the system node pool")
            elif name in seen:
                problems.add(
                    (*here, "name"),
                    f"node pool {name!r} is also created by slicePools[{seen[name]}]; "
                    "give each slice pool a distinct name",
                )
            else:
                seen[name] = index
        if pool.team is not None and (len(pool.team) > 63 or not LABEL_VALUE_RE.match(pool.team)):
            problems.add((*here, "team"), f"{pool.team!r} is not a valid label value")
        if pool.node_version:
            _check_tpu_version((*here, "nodeVersion"), pool.node_version, problems)
        _check_capacity(pool, here, problems)


def _check_capacity(pool: SlicePoolConfig, here: Loc, problems: Problems) -> None:
    capacity = pool.capacity
    kind = capacity.type
    if kind == "reservation" and not capacity.reservation:
        problems.add(
            (*here, "capacity", "reservation"),
            "capacity type 'reservation' needs the reservation's name (a SPECIFIC_RESERVATION)",
        )
    if kind != "reservation":
        for key, value in (
            ("reservation", capacity.reservation),
            ("reservationProject", capacity.reservation_project),
        ):
            if value is not None:
                problems.add(
                    (*here, "capacity", key),
                    f"only applies to capacity type 'reservation'; {kind} capacity uses "
                    + ("NO_RESERVATION" if kind in NO_RESERVATION_TYPES else "no reservation")
                    + ": remove it or set type: reservation",
                )
    if capacity.max_run_duration is not None and kind != "flexStart":
        problems.add(
            (*here, "capacity", "maxRunDuration"),
            "only applies to flex-start capacity; remove it or set type: flexStart",
        )
    if kind == "flexStart" and pool.auto_repair:
        problems.add(
            (*here, "autoRepair"),
            "flex-start pools cannot use auto-repair; remove autoRepair (it defaults to false)",
        )
    if kind != "flexStart" and pool.auto_repair is False:
        problems.add(
            (*here, "autoRepair"),
            "TPU slices must keep auto-repair on (GKE repairs a multi-host slice by recreating "
            "its pool); only flex-start pools run without it. Remove autoRepair",
        )


CROSS_CHECKS: list[CrossCheck] = [
    _check_locations,
    _check_cluster,
    _check_pools,
    *QUEUE_CHECKS,
    *HOTSWAP_CHECKS,
]


def parse_platform(raw: Mapping[str, Any]) -> PlatformConfig:
    """Validate a raw stack (camelCase keys) into a ``PlatformConfig`` or raise ``StackConfigError``."""
    try:
        cfg = PlatformConfig.model_validate(dict(raw))
    except ValidationError as err:
        raise StackConfigError(explain(err, PlatformConfig)) from None
    problems = Problems()
    for check in CROSS_CHECKS:
        check(cfg, problems)
    problems.raise_if_any()
    return cfg


def stack_keys() -> list[str]:
    """Top-level stack keys, in the order a stack file lists them."""
    return [f.alias or name for name, f in PlatformConfig.model_fields.items()]


def read_stack(get: Callable[[str, str], Any], present_keys: Callable[[str], list[str]]) -> PlatformConfig:
    """Assemble the raw stack from a config reader, rejecting unknown ``tpu-platform:`` keys.

    ``get(namespace, key)`` returns the decoded value or None; ``present_keys(namespace)``
    lists the keys set in that namespace. Both come from ``pulumi.Config`` in a program and
    from a plain dict offline, so the program and the plan read a stack the same way.
    """
    known = stack_keys()
    raw: dict[str, Any] = {}
    for key in known:
        namespace = "gcp" if key in GCP_KEYS else "tpu-platform"
        value = get(namespace, key)
        if value is not None:
            raw[key] = value
    unknown = sorted(set(present_keys("tpu-platform")) - set(known))
    if unknown:
        raise StackConfigError(
            [
                f"tpu-platform:{key}: unknown stack key; remove it or fix its spelling "
                f"(valid keys: {', '.join(k for k in known if k not in GCP_KEYS)})"
                for key in unknown
            ]
        )
    return parse_platform(raw)
