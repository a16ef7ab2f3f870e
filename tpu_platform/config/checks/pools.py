"""Checks of the ``slicePools`` section: shapes, node pool names, capacity sources."""

from __future__ import annotations

from ... import catalog
from ..base import LABEL_VALUE_RE
from ..platform import PlatformConfig
from ..pools import SlicePoolConfig
from ..problems import Loc, Problems
from .cluster import check_tpu_version, parse_version

SYSTEM_POOL_NAME = "system"
NO_RESERVATION_TYPES = ("spot", "flexStart", "queuedProvisioning")
DWS_TYPES = ("flexStart", "queuedProvisioning")
# GKE caps how long flex-start VMs run: seven days
# (https://cloud.google.com/kubernetes-engine/docs/concepts/dws, "maximum of seven days").
MAX_RUN_DURATION_SECONDS = 7 * 86400


def check_pools(cfg: PlatformConfig) -> Problems:
    """Shapes TPU v6e has, distinct node pool names, team labels, versions, capacity sources."""
    problems = Problems()
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
            check_tpu_version((*here, "nodeVersion"), pool.node_version, problems)
        check_capacity_source(pool, here, problems)
        if pool.capacity.type in DWS_TYPES:
            _check_flex_start_where(cfg, pool, here, problems)
    _check_queued_shapes(cfg, problems)
    return problems


def _check_flex_start_where(
    cfg: PlatformConfig, pool: SlicePoolConfig, here: Loc, problems: Problems
) -> None:
    """Flex-start TPU v6e only in the zones and GKE versions GKE documents for it."""
    zone = cfg.pool_zone(pool)
    if zone not in catalog.FLEX_START_V6E_ZONES:
        problems.add(
            (*here, "zone"),
            f"flex-start TPU v6e (capacity {pool.capacity.type}) is offered only in "
            f"{', '.join(catalog.FLEX_START_V6E_ZONES)}, not {zone} (GKE, About flex-start provisioning "
            "mode); move the pool there or use spot or reservation capacity",
        )
    for loc, version in (
        (("cluster", "minMasterVersion"), cfg.cluster.min_master_version),
        ((*here, "nodeVersion"), pool.node_version),
    ):
        if version and _older_at_its_precision(version, catalog.FLEX_START_MIN_GKE_VERSION):
            problems.add(
                loc,
                f"flex-start TPUs need GKE {catalog.FLEX_START_MIN_GKE_VERSION} or later; got {version!r}",
            )


def _older_at_its_precision(version: str, minimum: str) -> bool:
    """``1.32`` is older than ``1.33.0-gke.1712000``; ``1.33`` is not (GKE picks a current 1.33 patch)."""
    given, floor = parse_version(version), parse_version(minimum)
    if given is None or floor is None:
        return False
    parts = len([p for p in version.replace("-gke.", ".").split(".") if p])
    return given[:parts] < floor[:parts]


def _check_queued_shapes(cfg: PlatformConfig, problems: Problems) -> None:
    """Kueue attaches the ProvisioningRequest check to a flavor, and a flavor is a slice shape here:
    a shape served by queued provisioning must not also come from other capacity, or workloads on
    the other pools would wait for ProvisioningRequests they do not need."""
    kinds: dict[catalog.SliceShape, set[str]] = {}
    first: dict[catalog.SliceShape, int] = {}
    for index, pool in enumerate(cfg.slice_pools):
        try:
            shape = catalog.lookup(pool.topology, pool.multi_host)
        except catalog.UnsupportedSliceError:
            continue
        seen = kinds.setdefault(shape, set())
        mixed_before = seen == {"queued", "other"}
        seen.add("queued" if pool.capacity.type == "queuedProvisioning" else "other")
        first.setdefault(shape, index)
        if seen == {"queued", "other"} and not mixed_before:
            problems.add(
                (*("slicePools", index), "capacity", "type"),
                f"{pool.topology} slices also come from slicePools[{first[shape]}]; Kueue's "
                "ProvisioningRequest check applies per flavor (per shape here), so give queued "
                "provisioning its own shape or move the other pools to it",
            )


def check_capacity_source(pool: SlicePoolConfig, here: Loc, problems: Problems) -> None:
    """Keys that belong to another capacity type, and auto-repair as each type needs it."""
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
    if capacity.max_run_duration is not None and kind not in DWS_TYPES:
        problems.add(
            (*here, "capacity", "maxRunDuration"),
            "only applies to flex-start and queued-provisioning capacity; remove it or set type: flexStart",
        )
    if capacity.max_run_duration is not None:
        seconds = int(capacity.max_run_duration.removesuffix("s"))
        if not 0 < seconds <= MAX_RUN_DURATION_SECONDS:
            problems.add(
                (*here, "capacity", "maxRunDuration"),
                f"{capacity.max_run_duration} is outside GKE's cap for flex-start VMs (1s to "
                f"{MAX_RUN_DURATION_SECONDS}s, seven days); use e.g. '86400s'",
            )
    if kind in DWS_TYPES and pool.auto_repair:
        problems.add(
            (*here, "autoRepair"),
            "flex-start VMs (flexStart and queuedProvisioning) cannot use auto-repair; remove autoRepair "
            "(it defaults to false)",
        )
    if kind not in DWS_TYPES and pool.auto_repair is False:
        problems.add(
            (*here, "autoRepair"),
            "TPU slices must keep auto-repair on (GKE repairs a multi-host slice by recreating "
            "its pool); only flex-start pools run without it. Remove autoRepair",
        )
