"""Lint JobSet manifests before they are submitted to a Kueue + JobSet + hotswap cluster.

``lint_jobset``, ``lint_documents`` and ``lint_files`` (several files as one run) take a
``LintContext`` (queues, priorities, TPU capacity); ``load_context`` reads one from a YAML/JSON
file. Rule ids are in ``RULES``.
"""

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
from .linter import lint_documents, lint_files, lint_jobset

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
