"""Checks of ``gcp:region``, ``gcp:zone`` and where the cluster and its pools sit.

TPU pools may only use zones that offer TPU v6e (``config.zones``, from Google's TPU regions and
zones page); an unknown zone is an error that lists the valid ones.
"""

from __future__ import annotations

import re

from ..platform import PlatformConfig
from ..problems import Loc, Problems
from ..zones import SOURCE_URL, TPU_V6E_ZONES, zone_region

ZONE_RE = re.compile(r"^([a-z]+-[a-z]+[0-9]+)-[a-z]$")


def _check_tpu_zone(zone: str, region: str, loc: Loc, problems: Problems) -> bool:
    """A zone inside the stack's region that offers TPU v6e."""
    here = TPU_V6E_ZONES.get(region, ())
    match = ZONE_RE.match(zone)
    if not match or match.group(1) != region:
        problems.add(
            loc,
            f"zone {zone!r} is not in region {region!r}; TPU pools sit in the cluster's region, in exactly "
            f"one zone (COMPACT placement): use one of {', '.join(here) or 'none'}",
        )
        return False
    if zone_region(zone) is None:
        problems.add(
            loc,
            f"zone {zone!r} does not offer TPU v6e ({SOURCE_URL}); use one of {', '.join(here)}",
        )
        return False
    return True


def check_locations(cfg: PlatformConfig) -> Problems:
    """The region and zones offer TPU v6e, the cluster location and every pool zone in the region;
    zonal clusters keep their pools at home."""
    problems = Problems()
    if cfg.region not in TPU_V6E_ZONES:
        problems.add(
            ("region",),
            f"{cfg.region!r} is not a region that offers TPU v6e ({SOURCE_URL}); use one of "
            f"{', '.join(TPU_V6E_ZONES)}",
        )
    else:
        _check_tpu_zone(cfg.zone, cfg.region, ("zone",), problems)
    location = cfg.cluster.location
    if location is not None and location != cfg.region:
        loc_match = ZONE_RE.match(location)
        if not loc_match or loc_match.group(1) != cfg.region:
            problems.add(
                ("cluster", "location"),
                f"{location!r} is neither region {cfg.region!r} nor a zone in it",
            )
    for index, pool in enumerate(cfg.slice_pools):
        if pool.zone is None or cfg.region not in TPU_V6E_ZONES:
            continue
        if not _check_tpu_zone(pool.zone, cfg.region, ("slicePools", index, "zone"), problems):
            continue
        if location is not None and ZONE_RE.match(location) and pool.zone != location:
            problems.add(
                ("slicePools", index, "zone"),
                f"the cluster is zonal ({location}); its node pools cannot live in {pool.zone}",
            )
    return problems
