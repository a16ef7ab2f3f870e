"""The pool state the controller keeps on a pool's nodes (and in pool memory): read back within bounds,
and the node patches that write it.

Each time stored there is read only if it is no later than now + :data:`~tpu_platform.hotswap.core.
timeutil.CLOCK_SKEW_SECONDS` and, where an earlier time would skip a wait, no earlier than the
controller could have written it. A refused value is left out, as if absent, and listed (node, field,
why) for :mod:`tpu_platform.hotswap.core.time_bounds` to report. Left out, each extends nothing:

- ``unhealthy-since``: counts as now. It still marks the pool declared (as any ``unhealthy-since``
  does: a write of the annotation may have gone through without the taint's), and the controller
  writes now; it bounds no clean-since below.
- ``suspect-since``: the suspect clock starts now. Also refused before the pool's oldest node was
  created (the controller writes it on nodes that exist), which would skip T_bad.
- ``clean-since``: the clean clock starts now (as the controller would write it). Also refused when
  more than the skew before ``unhealthy-since``: the pool was bad when it was declared, and an older
  clean-since would recover it early.
- ``unhealthy-history``: the entry is dropped (a future entry would keep the pool flapping forever).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tpu_platform.hotswap.core import constants as k
from tpu_platform.hotswap.core.actions import PatchNode
from tpu_platform.hotswap.core.model import Node, Taint
from tpu_platform.hotswap.core.timeutil import CLOCK_SKEW_SECONDS, accepted, bounded, parse_time

OWN_TAINT = Taint(key=k.UNHEALTHY_TAINT_KEY, effect=k.UNHEALTHY_TAINT_EFFECT, value=k.UNHEALTHY_TAINT_VALUE)
Refusal = tuple[Node, str, str]
"""A stored time left out: the node carrying it, the field (a stable reason code) and why."""


def node_key(node: Node) -> str:
    """Identity of one Node object: a recreated node gets a new uid (or creation time) under its name."""
    return node.uid or f"{node.name}@{node.created!r}"


@dataclass(frozen=True, slots=True)
class PoolRecord:
    """What the controller last wrote on one pool's nodes, kept so node re-creation does not erase it."""

    pool: str
    declared: bool = False
    unhealthy_since: float | None = None
    reason: str = ""
    clean_since: float | None = None
    history: tuple[float, ...] = ()
    """Declaration times within the flap window, oldest first."""
    nodes: frozenset[str] = frozenset()
    """Keys (:func:`node_key`) of nodes seen carrying this state: their loss of it is not a re-creation."""


@dataclass(frozen=True, slots=True)
class PoolMemory:
    """Immutable pool memory, one record per pool, sorted by pool name. Empty: nodes alone decide."""

    records: tuple[PoolRecord, ...] = ()
    _by_pool: Mapping[str, PoolRecord] = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_pool", {r.pool: r for r in self.records})

    @classmethod
    def of(cls, records: Iterable[PoolRecord]) -> PoolMemory:
        return cls(tuple(sorted(records, key=lambda r: r.pool)))

    def get(self, pool: str) -> PoolRecord | None:
        return self._by_pool.get(pool)


@dataclass(slots=True)
class Persisted:
    tainted: bool = False
    unhealthy_since: float | None = None
    suspect_since: float | None = None
    clean_since: float | None = None
    reason: str = ""
    history: tuple[float, ...] = ()
    from_memory: bool = False
    marked: bool = False
    """An ``unhealthy-since`` is stored but its time was refused: declared, since unknown (now)."""

    @property
    def declared(self) -> bool:
        return self.tainted or self.unhealthy_since is not None or self.marked


def carries_state(node: Node) -> bool:
    ann = node.annotations
    return node.has_taint(k.UNHEALTHY_TAINT_KEY) or (
        bool(ann)
        and (
            k.UNHEALTHY_SINCE_ANNOTATION in ann
            or k.UNHEALTHY_HISTORY_ANNOTATION in ann
            or k.CLEAN_SINCE_ANNOTATION in ann
        )
    )


def recall(st: Persisted, nodes: Sequence[Node], record: PoolRecord | None, now: float) -> Persisted:
    """The remembered state, if the nodes carry none and all of them are unknown to the record. The
    record is the controller's own, but read within the same bounds as the nodes (a clock that
    jumped back must not hold a pool either)."""
    if record is None or any(carries_state(n) or node_key(n) in record.nodes for n in nodes):
        return st
    declared = record.declared
    return Persisted(
        tainted=declared,
        unhealthy_since=bounded(record.unhealthy_since, now) if declared else None,
        suspect_since=st.suspect_since,
        clean_since=bounded(record.clean_since, now) if declared else None,
        reason=record.reason if declared else "",
        history=tuple(sorted(set(st.history) | {t for t in record.history if accepted(t, now)})),
        from_memory=True,
    )


STATE_TIMES = (
    k.UNHEALTHY_SINCE_ANNOTATION,
    k.SUSPECT_SINCE_ANNOTATION,
    k.CLEAN_SINCE_ANNOTATION,
    k.UNHEALTHY_HISTORY_ANNOTATION,
)
"""The stored annotations that hold times."""


def _stored(ann: Mapping[str, str], key: str) -> tuple[float | None, str]:
    text = ann.get(key)
    return (None, "") if text is None else (parse_time(text), text[:40])


def read_state(nodes: Sequence[Node], now: float, refused: list[Refusal] | None = None) -> Persisted:
    """Merge what the controller wrote on the pool's nodes (they may disagree after a partial write),
    leaving out (and adding to ``refused``) every time outside its bounds (module docstring)."""
    st = Persisted()
    out: list[Refusal] = refused if refused is not None else []
    late = now + CLOCK_SKEW_SECONDS
    history: set[float] = set()
    suspects: list[tuple[Node, float, str]] = []
    cleans: list[tuple[Node, float, str]] = []
    for n in nodes:
        if n.has_taint(k.UNHEALTHY_TAINT_KEY):
            st.tainted = True
        ann = n.annotations
        if not ann:
            continue
        t, text = _stored(ann, k.UNHEALTHY_SINCE_ANNOTATION)
        if t is not None:
            if t > late:
                st.marked = True
                out.append((n, "unhealthy-since", f"{text!r} is later than now + {CLOCK_SKEW_SECONDS:g}s"))
            elif st.unhealthy_since is None or t < st.unhealthy_since:
                st.unhealthy_since = t
        t, text = _stored(ann, k.SUSPECT_SINCE_ANNOTATION)
        if t is not None:
            suspects.append((n, t, text))
        t, text = _stored(ann, k.CLEAN_SINCE_ANNOTATION)
        if t is not None:
            cleans.append((n, t, text))
        if not st.reason:
            st.reason = ann.get(k.UNHEALTHY_REASON_ANNOTATION, "")
        stored = parse_time_list_bounded(ann.get(k.UNHEALTHY_HISTORY_ANNOTATION), late)
        history.update(stored[0])
        if stored[1]:
            out.append(
                (n, "unhealthy-history", f"{stored[1]} entry(ies) later than now + {CLOCK_SKEW_SECONDS:g}s")
            )
    st.history = tuple(sorted(history))
    if suspects:
        created = [n.created for n in nodes if n.created > 0 and accepted(n.created, now)]
        oldest = min(created) if created else None
        for n, t, text in suspects:
            if not accepted(t, now, oldest):
                why = "later than now" if t > late else "earlier than the pool's oldest node"
                out.append((n, "suspect-since", f"{text!r} is {why} (+/- {CLOCK_SKEW_SECONDS:g}s)"))
            elif st.suspect_since is None or t < st.suspect_since:
                st.suspect_since = t
    for n, t, text in cleans:
        if not accepted(t, now, st.unhealthy_since):
            why = "later than now" if t > late else "earlier than the declaration (unhealthy-since)"
            out.append((n, "clean-since", f"{text!r} is {why} (+/- {CLOCK_SKEW_SECONDS:g}s)"))
        elif st.clean_since is None or t > st.clean_since:
            st.clean_since = t
    return st


def parse_time_list_bounded(text: str | None, latest: float) -> tuple[list[float], int]:
    """The times of a comma-separated list no later than ``latest``, and how many were later
    (unparsable items are dropped, as :func:`~tpu_platform.hotswap.core.timeutil.parse_time_list`)."""
    if not text:
        return [], 0
    kept: list[float] = []
    late = 0
    for item in text.split(","):
        t = parse_time(item)
        if t is None:
            continue
        if t > latest:
            late += 1
        else:
            kept.append(t)
    return kept, late


def node_patches(
    nodes: Sequence[Node], want_taint: bool, desired: dict[str, str | None], reason: str
) -> list[PatchNode]:
    """Per-node diffs against the desired taint and annotations; nodes already in line get none."""
    sets = sorted((key, v) for key, v in desired.items() if v is not None)
    removes = sorted(key for key, v in desired.items() if v is None)
    out = []
    for n in nodes:
        has = n.has_taint(k.UNHEALTHY_TAINT_KEY)
        ann = n.annotations
        if not sets and not has and not want_taint and (not ann or not any(key in ann for key in removes)):
            continue
        set_ann = tuple((key, v) for key, v in sets if ann.get(key) != v)
        rm_ann = tuple(key for key in removes if key in ann)
        add = (OWN_TAINT,) if want_taint and not has else ()
        rm = (k.UNHEALTHY_TAINT_KEY,) if has and not want_taint else ()
        if set_ann or rm_ann or add or rm:
            out.append(
                PatchNode(
                    node=n.name,
                    pool=n.pool,
                    add_taints=add,
                    remove_taints=rm,
                    set_annotations=set_ann,
                    remove_annotations=rm_ann,
                    reason=reason,
                )
            )
    return out
