"""Checks of the ``priorities`` section: at least one, distinct names and values, at most one default."""

from __future__ import annotations

from ..platform import PlatformConfig
from ..problems import Loc, Problems


def check_priorities(cfg: PlatformConfig) -> Problems:
    """Distinct names and values (a defined admission order), at most one global default."""
    problems = Problems()
    if not cfg.priorities:
        problems.add(
            ("priorities",),
            "is empty: JobSets need PriorityClasses to be ranked and the alerts watch the highest one; "
            "remove the key for the default high/low priorities, or list at least one",
        )
        return problems
    names: dict[str, int] = {}
    values: dict[int, str] = {}
    defaults: list[str] = []
    for index, prio in enumerate(cfg.priorities):
        here: Loc = ("priorities", index)
        if prio.name in names:
            problems.add((*here, "name"), f"priority {prio.name!r} is also priorities[{names[prio.name]}]")
        else:
            names[prio.name] = index
        if prio.value in values:
            problems.add(
                (*here, "value"),
                f"{prio.value} is also the value of {values[prio.value]!r}; give each priority a distinct "
                "value so the admission order between them is defined",
            )
        else:
            values[prio.value] = prio.name
        if prio.global_default:
            defaults.append(prio.name)
    if len(defaults) > 1:
        problems.add(
            ("priorities",),
            f"{', '.join(defaults)} are all globalDefault; Kubernetes allows at most one default "
            f"PriorityClass",
        )
    return problems
