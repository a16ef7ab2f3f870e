"""What a Chart's children do between two plans, told from what the pinned chart renders.

pulumi-kubernetes registers each object a ``helm.sh/v4:Chart`` renders as a child resource of type
``kubernetes:<group>/<version>:<Kind>`` named ``<resourcePrefix, else the Chart's name>:<namespace>/
<name>`` (provider/yaml/v2 yaml.go ``register``). Each plan's install section holds, per child, a
digest of each top-level field and of each nested path that replaces it
(``tpu_platform.plan.chart_renders``); a child only on one side is created or deleted, and a child
whose digests differ is updated, or replaced when a changed path replaces it under the same rules as
any Kubernetes object of the plan (``tpu_platform.plan.knowledge``, the Chart's provider flags).
When a Chart's inputs change and a side has no digests (values no render covers, or a plan older
than the digests), its children cannot be told: the review says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import knowledge
from .change import Change, FieldChange
from .chart_renders import CHART_TYPE, values_key
from .forcing import forcing, with_replaced_provider
from .knowledge import KUBERNETES_PREFIX

Children = Mapping[str, Mapping[str, Any]]


def charts(plan: Mapping[str, Any] | None) -> dict[str, Mapping[str, Any]]:
    """The plan's Chart resources by name."""
    return {
        str(r.get("name")): r
        for r in (plan or {}).get("resources") or []
        if isinstance(r, Mapping) and r.get("type") == CHART_TYPE
    }


def children(plan: Mapping[str, Any] | None, chart: Mapping[str, Any]) -> Children | None:
    """The digests of what a Chart of the plan renders, from the plan's install section for its
    values (None when the section has none)."""
    short = values_key(chart.get("inputs") or {})[:16]
    for section in ((plan or {}).get("installs") or {}).values():
        if isinstance(section, Mapping) and section.get("values") == short:
            found = section.get("children")
            return found if isinstance(found, Mapping) else None
    return None


def child_label(chart: Mapping[str, Any], key: str) -> tuple[str, str]:
    """(type, name) of a child ``core/v1:ConfigMap::ns/name`` of a Chart, as the engine names it."""
    token, _, where = key.partition("::")
    prefix = (chart.get("inputs") or {}).get("resourcePrefix") or chart.get("name")
    return f"{KUBERNETES_PREFIX}{token}", f"{prefix}:{where}"


def _child(
    resource_type: str,
    name: str,
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    provider_inputs: Mapping[str, Any],
) -> Change | None:
    if old is None or new is None:
        return Change("create" if old is None else "delete", resource_type, name) if old or new else None
    found = knowledge.rules(resource_type, {"immutable": new.get("immutable")}, provider_inputs)
    fields = []
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path), new.get(path)
        if a != b:
            why = forcing((path, a, b), found) if found is not None else ""
            fields.append(FieldChange(path, a, b, why))
    if not fields:
        return None
    return Change(
        "replace" if any(f.replaces for f in fields) else "update", resource_type, name, tuple(fields)
    )


def child_changes(
    old_plan: Mapping[str, Any] | None,
    new_plan: Mapping[str, Any] | None,
    provider_inputs: Mapping[str, Mapping[str, Any]],
    replaced: Mapping[str, str],
) -> tuple[list[Change], list[str]]:
    """Each changed child (replaced with its Chart's provider too), and the Charts whose children
    cannot be told (a changed Chart with no digests on a side)."""
    olds, news = charts(old_plan), charts(new_plan)
    out: list[Change] = []
    untold: list[str] = []
    for name in sorted(set(olds) | set(news)):
        old_chart, new_chart = olds.get(name), news.get(name)
        chart = new_chart or old_chart
        assert chart is not None
        before = children(old_plan, old_chart) if old_chart else {}
        after = children(new_plan, new_chart) if new_chart else {}
        if before is None or after is None:
            same = (
                old_chart
                and new_chart
                and values_key(old_chart.get("inputs") or {}) == values_key(new_chart.get("inputs") or {})
            )
            if not same:
                untold.append(f"{CHART_TYPE}::{name}")
            continue
        provider = str(chart.get("provider"))
        flags = provider_inputs.get(provider) or {}
        for key in sorted(set(before) | set(after)):
            resource_type, child_name = child_label(chart, key)
            change = _child(resource_type, child_name, before.get(key), after.get(key), flags)
            if key in before and key in after:
                change = with_replaced_provider(change, resource_type, child_name, provider, replaced)
            if change is not None:
                out.append(change)
    return out, untold
