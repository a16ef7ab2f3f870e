"""PromQL selectors with a scope: the same expressions for GMP Rules (scoped by the rule evaluator)
and for Cloud Monitoring (which sees every cluster of the project, so queries name theirs)."""

from __future__ import annotations

from collections.abc import Mapping

Scope = Mapping[str, str]


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sel(metric: str, scope: Scope, **matchers: str) -> str:
    """``metric{k="v", ...}``; a value starting with ``~`` is a regex match (``=~``)."""
    parts = []
    for key, value in {**matchers, **scope}.items():
        if value.startswith("~"):
            parts.append(f"{key}=~{_quote(value[1:])}")
        else:
            parts.append(f"{key}={_quote(value)}")
    return f"{metric}{{{','.join(parts)}}}" if parts else metric
