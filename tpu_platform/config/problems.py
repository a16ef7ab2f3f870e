"""Problems found in a stack, each with the config path it is about.

The bottom of the config layer: nothing here knows a stack section. Like the field paths of
Kueue's own config validation (``pkg/config/validation.go``, ``field.ErrorList``), every
problem carries its location, so a user fixes a stack file in one pass.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

PROJECT_NAMESPACE = "tpu-platform"
GCP_KEYS = frozenset({"project", "region", "zone"})

Loc = tuple[int | str, ...]


def format_path(loc: tuple[int | str, ...] | list[int | str]) -> str:
    """``("slicePools", 1, "topology")`` -> ``tpu-platform:slicePools[1].topology``.

    The first element is a stack key; ``project``, ``region`` and ``zone`` live in the
    ``gcp:`` namespace (pulumi-gcp reads them too), everything else under ``tpu-platform:``.
    """
    if not loc:
        return "tpu-platform"
    head, *rest = loc
    namespace = "gcp" if head in GCP_KEYS else PROJECT_NAMESPACE
    path = f"{namespace}:{head}"
    for part in rest:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part == "__root__":
            continue
        else:
            path += f".{part}"
    return path


def did_you_mean(name: str, options: Iterable[str]) -> str:
    """`` (did you mean 'slicePools'?)`` for a misspelt key or name, or nothing: one wording for
    every unknown key and name a stack can hold."""
    close = difflib.get_close_matches(name, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key(key: str, valid: Sequence[str], what: str = "key") -> str:
    """The one wording for a key nothing reads, at any depth: the key most likely meant, then
    every key valid there."""
    listed = f"; valid keys here: {', '.join(valid)}" if valid else ""
    return f"unknown {what}{did_you_mean(key, valid)}; remove it or fix its spelling{listed}"


class StackConfigError(ValueError):
    """A stack file that cannot be deployed; ``problems`` holds one line per mistake."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        joined = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"invalid stack configuration ({len(problems)} problem(s)):\n{joined}")


class Problem(NamedTuple):
    """One mistake: where it is (a config path) and what to do about it."""

    loc: Loc
    message: str

    @property
    def line(self) -> str:
        return f"{format_path(self.loc)}: {self.message}"


class Problems:
    """Collects path-qualified problems so every mistake is reported at once."""

    def __init__(self, items: Iterable[Problem] = ()) -> None:
        self.items: list[Problem] = list(items)

    def add(self, loc: Loc, message: str) -> None:
        self.items.append(Problem(loc, message))

    def extend(self, other: Iterable[Problem]) -> None:
        self.items.extend(other)

    @property
    def lines(self) -> list[str]:
        return [problem.line for problem in self.items]

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise StackConfigError(self.lines)
