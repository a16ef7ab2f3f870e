"""Checks of the ``priorities`` section: at least one, distinct names and values, at most one default."""

from __future__ import annotations

import difflib

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
        problems.extend(_grants(cfg, prio.teams, (*here, "teams")))
    if len(defaults) > 1:
        problems.add(
            ("priorities",),
            f"{', '.join(defaults)} are all globalDefault; Kubernetes allows at most one default "
            f"PriorityClass",
        )
    return problems


def _grants(cfg: PlatformConfig, granted: list[str] | None, here: Loc) -> Problems:
    """Every granted team is one of the stack's teams: a misspelt grant would leave the priority to
    nobody, or the team without the priority it was meant to have."""
    problems = Problems()
    if granted is None:
        return problems
    teams = [team.name for team in cfg.teams]
    if not granted:
        problems.add(here, "is empty: no namespace could use this priority; grant it to a team or remove it")
    for index, name in enumerate(granted):
        if name not in teams:
            close = difflib.get_close_matches(name, teams, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            problems.add(
                (*here, index),
                f"{name!r} is no team of this stack; {hint}teams: {', '.join(teams) or 'none'}",
            )
    return problems
