"""Checks of the ``slicePools`` section: shapes, node pool names, capacity sources."""

from __future__ import annotations

from ... import catalog
from ..base import LABEL_VALUE_RE
from ..platform import PlatformConfig
from ..pools import SlicePoolConfig
from ..problems import Loc, Problems
from .cluster import check_tpu_version

SYSTEM_POOL_NAME = "system"
NO_RESERVATION_TYPES = ("spot", "flexStart", "queuedProvisioning")


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
    return problems


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
