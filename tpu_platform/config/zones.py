"""Where TPU v6e (Trillium) is offered: the zones TPU pools may use, by region.

Source: Google Cloud, "TPU regions and zones" (https://cloud.google.com/tpu/docs/regions-zones,
the v6e table under "United States"), read on 2026-12-01 from the stored copy of the page
(cloud-dot-devsite-v2-prod.appspot.com/tpu/docs/types-zones). The stored copy's Europe and Asia
tables were cut off before their v6e rows, so only the zones read are listed: adding a zone
Google lists is a one-line change here. Zones marked single-tenant on the page offer v6e through
reservations only; the catalog keeps them because reserved pools are the common case.
"""

from __future__ import annotations

TPU_V6E_ZONES: dict[str, tuple[str, ...]] = {
    "us-central1": ("us-central1-b",),
    "us-east1": ("us-east1-d",),
    "us-east4": ("us-east4-a", "us-east4-b"),
    "us-east5": ("us-east5-a", "us-east5-b", "us-east5-c"),
    "us-west1": ("us-west1-c",),
}
SOURCE_URL = "https://cloud.google.com/tpu/docs/regions-zones"


def all_zones() -> list[str]:
    return [zone for zones in TPU_V6E_ZONES.values() for zone in zones]


def zone_region(zone: str) -> str | None:
    """The region of a catalog zone, None when TPU v6e is not offered there."""
    return next((region for region, zones in TPU_V6E_ZONES.items() if zone in zones), None)
