"""The node taint record, in a leaf module so that constants can name a taint without an import circle."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    effect: str = "NoSchedule"
    value: str = ""
    time_added: float | None = None
    """Only NoExecute taints carry it in Kubernetes."""
