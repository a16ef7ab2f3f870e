"""Checks of ``gcp:region``, ``gcp:zone`` and where the cluster and its pools sit."""

from __future__ import annotations

import re

from ..platform import PlatformConfig
from ..problems import Problems

REGION_RE = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
ZONE_RE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")


def check_locations(cfg: PlatformConfig) -> Problems:
    """The zone, the cluster location and every pool zone in the region; zonal clusters keep pools home."""
    problems = Problems()
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
    return problems
