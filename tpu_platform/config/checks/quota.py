"""Checks of quota entries, shared by teams and cohorts: shapes the pools have, whole slices,
and limits Kueue accepts."""

from __future__ import annotations

from typing import Literal

from ... import catalog
from ..capacity import pool_slices
from ..platform import PlatformConfig
from ..problems import Loc, Problems
from ..quota import QuotaConfig, as_slices
from ..shapes import describe_shape
from .common import check_shape


def check_quota_entries(
    entries: list[QuotaConfig],
    here: Loc,
    *,
    has_parent: bool,
    kind: Literal["team", "cohort"],
    cfg: PlatformConfig,
    problems: Problems,
) -> None:
    provided = pool_slices(cfg)
    seen: dict[catalog.SliceShape, int] = {}
    parent_key = "cohortName" if kind == "team" else "parentName"
    for index, entry in enumerate(entries):
        loc: Loc = (*here, "quota", index)
        shape = check_shape(entry.topology, entry.multi_host, loc, problems)
        if entry.multi_host is not None and entry.topology != "2x4":
            problems.add((*loc, "multiHost"), "only 2x4 has two forms; remove multiHost")
        if shape is None:
            continue
        if shape in seen:
            problems.add(
                loc,
                f"{describe_shape(shape)} already has a quota in quota[{seen[shape]}]; merge the two entries",
            )
        seen[shape] = index
        if shape not in provided:
            others = [describe_shape(s) for s in provided if s.topology == shape.topology]
            hint = f"; the pools have {others[0]} slices: set multiHost accordingly" if others else ""
            problems.add(
                (*loc, "topology"),
                f"no slice pool provides {describe_shape(shape)} slices, so a workload admitted on this "
                f"quota "
                f"could never be scheduled; add a slicePools entry with topology {shape.topology} or remove "
                f"this quota{hint}",
            )
        nominal = _check_amount((entry.slices, entry.chips), ("slices", "chips"), shape, loc, problems)
        if entry.slices is None and entry.chips is None:
            problems.add(loc, "needs the nominal quota: slices: <n> (whole slices) or chips: <n>")
        borrowing = _check_amount(
            (entry.borrowing_limit_slices, entry.borrowing_limit_chips),
            ("borrowingLimitSlices", "borrowingLimitChips"),
            shape,
            loc,
            problems,
        )
        lending = _check_amount(
            (entry.lending_limit_slices, entry.lending_limit_chips),
            ("lendingLimitSlices", "lendingLimitChips"),
            shape,
            loc,
            problems,
        )
        for key, value in (("borrowingLimit", borrowing), ("lendingLimit", lending)):
            if value is not None and not has_parent:
                where = "a cohort (cohortName)" if kind == "team" else "a parent cohort (parentName)"
                problems.add(
                    (*loc, f"{key}Slices" if _uses_slices(entry, key) else f"{key}Chips"),
                    f"{key} needs {where}: Kueue rejects it otherwise; set {parent_key} or remove the limit",
                )
        if kind == "team" and nominal is not None and lending is not None and lending > nominal:
            problems.add(
                (*loc, "lendingLimitSlices" if _uses_slices(entry, "lendingLimit") else "lendingLimitChips"),
                f"lends {lending} slices but the nominal quota is only {nominal}; Kueue rejects a "
                f"lendingLimit "
                "above nominalQuota: lower it to at most the nominal quota",
            )


def _uses_slices(entry: QuotaConfig, key: str) -> bool:
    return (
        getattr(entry, "borrowing_limit_slices" if key == "borrowingLimit" else "lending_limit_slices")
        is not None
    )


def _check_amount(
    amount: tuple[int | None, int | None],
    keys: tuple[str, str],
    shape: catalog.SliceShape,
    loc: Loc,
    problems: Problems,
) -> int | None:
    """Whole slices of a (slices, chips) pair, reporting both-set and partial slices."""
    slices, chips = amount
    slices_key, chips_key = keys
    if slices is not None and chips is not None:
        problems.add(loc, f"set either {slices_key} or {chips_key}, not both")
        return slices
    if chips is not None and chips % shape.chips:
        below, above = chips // shape.chips, chips // shape.chips + 1
        problems.add(
            (*loc, chips_key),
            f"{chips} chips is not a whole number of {describe_shape(shape)} slices ({shape.chips} chips "
            f"each); "
            f"JobSets with exclusive placement use whole slices, so the rest could never be used: "
            f"use {below * shape.chips} or {above * shape.chips} chips ({slices_key}: {below} or {above})",
        )
        return None
    return as_slices(slices, chips, shape)
