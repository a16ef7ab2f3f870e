"""Lint JobSet manifests before they are submitted to a Kueue + JobSet + hotswap cluster.

``lint_jobset``, ``lint_documents`` and ``lint_files`` (several files as one run) take a
``LintContext`` (queues, priorities, TPU capacity); ``load_context`` reads one from a YAML/JSON
file. Rule ids are in ``RULES``.
The linter itself is imported on first use: its schema checks need the ``lint`` extra, the
context and rule tables do not.
"""

from typing import Any

from .context import (
    HOTSWAP_LABEL,
    ContextError,
    FlavorQuota,
    LintContext,
    QueueTarget,
    context_from_data,
    context_from_queue_directory,
    load_context,
)
from .findings import RULES, Finding, Rule, Severity

__all__ = [
    "HOTSWAP_LABEL",
    "RULES",
    "ContextError",
    "Finding",
    "FlavorQuota",
    "LintContext",
    "QueueTarget",
    "Rule",
    "Severity",
    "context_from_data",
    "context_from_queue_directory",
    "lint_documents",
    "lint_files",
    "lint_jobset",
    "load_context",
]


def __getattr__(name: str) -> Any:
    if name in ("lint_documents", "lint_files", "lint_jobset"):
        from . import linter

        return getattr(linter, name)
    raise AttributeError(name)
