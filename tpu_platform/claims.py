"""Nominal quota claimed per flavor, by owner: what every capacity check adds up.

Nominal quota is a guarantee, so per flavor the claims of all ClusterQueues and Cohorts
must fit the capacity behind the flavor. The stack's check counts whole slices per shape,
owned by ``team x``/``cohort y``; the policy pack counts ``google.com/tpu`` chips per
ResourceFlavor name, owned by Pulumi resources. Both add up the same way, here, below the
stack model and the quota layout so either may use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

FlavorKey = TypeVar("FlavorKey")
Owner = TypeVar("Owner")


class Claims(Generic[FlavorKey, Owner]):
    """Per flavor, in the order flavors were first claimed: each owner's amount and the total."""

    def __init__(self) -> None:
        self._claims: dict[FlavorKey, list[tuple[Owner, float]]] = {}

    def add(self, flavor: FlavorKey, owner: Owner, amount: float) -> None:
        self._claims.setdefault(flavor, []).append((owner, amount))

    def total(self, flavor: FlavorKey) -> float:
        return sum(amount for _, amount in self._claims.get(flavor, []))

    def owners(self, flavor: FlavorKey) -> list[tuple[Owner, float]]:
        return list(self._claims.get(flavor, []))

    def flavors(self) -> list[FlavorKey]:
        return list(self._claims)

    def __iter__(self) -> Iterator[FlavorKey]:
        return iter(self._claims)

    def over(self, capacity: dict[FlavorKey, float]) -> list[FlavorKey]:
        """Flavors whose claims exceed their capacity (a flavor missing from ``capacity`` has none)."""
        return [f for f in self._claims if self.total(f) > capacity.get(f, 0)]
