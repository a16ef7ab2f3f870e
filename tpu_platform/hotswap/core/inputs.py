"""Tenant-written values, parsed defensively: finite, bounded, well-formed, or refused with a reason.

Anyone who can create a JobSet or a pod writes its labels, annotations, node selector, replica
counts and (for hand-made pods) owner references. One such value must never stop decisions for
everyone else, nor steer them: each parser below either returns a value inside documented bounds or
raises :class:`InputError` naming the field, and an object with a refused value is skipped (left
alone, as if unmanaged) and reported, never crashing ``decide``.

The bounds are far above anything real and far below anything that overflows: Kubernetes priority
and replica counts are int32 (k8s.io/api ``core/v1`` ``PodSpec.Priority``; JobSet v0.12.0
``api/jobset/v1alpha2/jobset_types.go`` ``ReplicatedJob.Replicas``), and TPU slice topologies are two
or three small dimensions (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from tpu_platform.hotswap.core.timeutil import MAX_EPOCH

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1
MAX_TOPOLOGY_DIM: Final = 64
"""Per dimension of ``cloud.google.com/gke-tpu-topology`` (v6e's largest slice is 16x16)."""
MAX_TOPOLOGY_CHIPS: Final = 65_536
MAX_SLICES: Final = 10_000
"""Replicas a JobSet may ask slices for; more is refused rather than believed."""
MAX_RESTARTS: Final = 1_000_000
MAX_INTERVAL_SECONDS: Final = 366 * 86_400.0
"""A checkpoint cadence longer than a year is not a cadence."""
MIN_EPOCH: Final = 0.0
MAX_VALUE_LENGTH: Final = 256
"""Longer annotation values for these keys are refused before any parsing."""

_TOPOLOGY = re.compile(r"^[1-9][0-9]{0,2}(x[1-9][0-9]{0,2}){1,2}$")


class InputError(ValueError):
    """A tenant-written value was refused. ``reason`` is a short stable code (a metric label)."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}")


@dataclass(frozen=True, slots=True)
class Rejection:
    """An object left alone this reconcile because one of its values was refused; or, with
    ``value_only``, one value of an object ignored while the object is handled as usual."""

    kind: str
    """``JobSet`` or ``Pod``; ``Node`` too for ``value_only``."""
    namespace: str
    name: str
    uid: str
    reason: str
    """Stable code for the metric label, e.g. ``checkpoint-interval``, ``topology``, ``clean-since``."""
    detail: str
    """For the warning Event: which field, what was found, what is accepted (and, for ``value_only``,
    what is done instead)."""
    value_only: bool = False
    """Only this value was refused (a time beyond now + clock skew, :mod:`tpu_platform.hotswap.core.
    time_bounds`): the object is not left alone, the value counts as ``detail`` says."""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def topology(value: Any, *, reason: str = "topology") -> str:
    """``AxB`` or ``AxBxC`` with each dimension 1..64 and at most 65,536 chips."""
    if not isinstance(value, str) or not _topology_chips(value):
        if isinstance(value, str) and len(value) <= 16 and _TOPOLOGY.match(value):
            raise InputError(
                reason, f"{value!r} exceeds {MAX_TOPOLOGY_DIM} per dimension or {MAX_TOPOLOGY_CHIPS} chips"
            )
        raise InputError(reason, f"{_short(value)} is not a TPU topology such as '4x4' or '2x2x4'")
    return value


def topology_chips(value: str) -> int:
    """Chips in a well-formed topology; 0 for anything :func:`topology` refuses."""
    return _topology_chips(value) if isinstance(value, str) else 0


@lru_cache(maxsize=1024)
def _topology_chips(value: str) -> int:
    """Cached: a fleet has a handful of shapes, read for every JobSet on every reconcile (bounded, so
    hostile strings cannot grow it)."""
    if len(value) > 16 or not _TOPOLOGY.match(value):
        return 0
    dims = [int(d) for d in value.split("x")]
    if any(d > MAX_TOPOLOGY_DIM for d in dims) or math.prod(dims) > MAX_TOPOLOGY_CHIPS:
        return 0
    return math.prod(dims)


def integer(value: Any, *, reason: str, low: int, high: int, default: int | None = None) -> int:
    """An int (or its decimal string) within ``[low, high]``; ``None`` gives ``default`` if set."""
    if value is None and default is not None:
        return default
    if isinstance(value, bool):
        raise InputError(reason, f"{_short(value)} is not an integer")
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[+-]?[0-9]{1,12}", text):
            raise InputError(reason, f"{_short(value)} is not an integer")
        number = int(text)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    else:
        raise InputError(reason, f"{_short(value)} is not an integer")
    if not low <= number <= high:
        raise InputError(reason, f"{number} is outside [{low}, {high}]")
    return number


def seconds(value: Any, *, reason: str, high: float) -> float:
    """A finite number of seconds in ``(0, high]``, given as a number or a decimal string."""
    if isinstance(value, str):
        if len(value) > MAX_VALUE_LENGTH or not re.fullmatch(r"\s*[0-9]+(\.[0-9]+)?\s*", value):
            raise InputError(reason, f"{_short(value)} is not a number of seconds such as '3600'")
        number = float(value)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    else:
        raise InputError(reason, f"{_short(value)} is not a number of seconds")
    if not math.isfinite(number) or not 0.0 < number <= high:
        raise InputError(reason, f"{_short(value)} is outside (0, {high:g}] seconds")
    return number


def epoch(value: float | None, *, reason: str) -> float | None:
    """A time already parsed to epoch seconds: finite and between 1970 and 9999, or refused."""
    if value is None:
        return None
    if not math.isfinite(value) or not MIN_EPOCH <= value <= MAX_EPOCH:
        raise InputError(reason, f"{_short(value)} is not a time between 1970 and 9999")
    return value


def flag(value: str | None, *, reason: str) -> bool | None:
    """``"true"``/``"false"`` (any case); None when absent."""
    if value is None:
        return None
    lowered = value.strip().lower()
    if lowered not in ("true", "false"):
        raise InputError(reason, f"{_short(value)} is not 'true' or 'false'")
    return lowered == "true"
