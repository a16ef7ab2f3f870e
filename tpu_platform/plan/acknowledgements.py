"""``tpu-platform:acknowledgeReplacement`` held to the change it is read with.

A name is a TPU slice node pool the stack may lose in this change. A name that is no TPU slice pool
of either plan (before or after the change: a pool deleted on purpose is only in the one before)
lets nothing through and hides a typo: an error, with the field path and the pool most likely
meant. A name the change does not replace or delete is stale: a warning naming it, since it would
let a later change take that pool without anyone noticing.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config.problems import did_you_mean, format_path
from .changes import Review

FIELD = "acknowledgeReplacement"


def acknowledgement_problems(result: Review, names: Sequence[str]) -> tuple[list[str], list[str]]:
    """(errors, warnings) about the acknowledged names, each a stack-file line with its field path."""
    errors: list[str] = []
    warnings: list[str] = []
    lost = {change.pool_name for change in result.tpu_losses}
    pools = sorted(result.tpu_pools)
    for index, name in enumerate(names):
        where = format_path((FIELD, index))
        if name not in result.tpu_pools:
            listed = ", ".join(pools) if pools else "none"
            errors.append(
                f"{where}: unknown TPU slice node pool {name!r}{did_you_mean(name, pools)}; name a pool this "
                f"change replaces or deletes (the stack's TPU slice pools: {listed})"
            )
        elif name not in lost:
            warnings.append(
                f"{where}: {name!r} is acknowledged but this change neither replaces nor deletes it; remove "
                "it once the replacement it was for is deployed, or it lets a later change take that pool "
                "unnoticed"
            )
    return errors, warnings
