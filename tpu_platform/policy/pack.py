"""pulumi-policy adapters: each pure rule becomes a Resource- or StackValidationPolicy.

Only translation lives here: pulumi-policy's property proxies become plain data (values a
preview cannot know become ``UNKNOWN`` instead of aborting the whole policy), and
violations go back through ``report_violation``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import _DictProxy, _is_unknown, _ListProxy

from . import replacement
from .resources import UNKNOWN, Resource, Stack
from .rules import RULES, Rule, rule_config

PACK_NAME = "tpu-platform"
# The pure rules, then the one that needs the deployed plan read in (tpu_platform.policy.replacement).
ALL_RULES: tuple[Rule, ...] = (*RULES, replacement.RULE)


def to_plain(value: Any) -> Any:
    """Unwrap pulumi-policy's proxies into dicts and lists, unknowns into ``UNKNOWN``."""
    if isinstance(value, _DictProxy | _ListProxy):
        value = value["__target"]
    if isinstance(value, Mapping):
        return {str(key): to_plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [to_plain(item) for item in value]
    if _is_unknown(value):
        return UNKNOWN
    return value


def from_validation_args(args: ResourceValidationArgs) -> Resource:
    return Resource(
        urn=args.urn,
        type=args.resource_type,
        name=args.name,
        props=to_plain(args.props),
        parent=args.opts.parent if args.opts else None,
    )


def from_policy_resource(resource: PolicyResource) -> Resource:
    parent = resource.opts.parent if resource.opts and resource.opts.parent else None
    if parent is None and resource.parent is not None:
        parent = resource.parent.urn
    return Resource(
        urn=resource.urn,
        type=resource.resource_type,
        name=resource.name,
        props=to_plain(resource.props),
        parent=parent,
        dependencies=tuple(dep.urn for dep in resource.dependencies),
    )


def _resource_policy(rule: Rule, schema: PolicyConfigSchema | None) -> Policy:
    check = rule.resource_check
    assert check is not None

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        settings = rule_config(rule, {rule.name: args.get_config()})
        for message in check(from_validation_args(args), settings):
            report_violation(message, None)

    return ResourceValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema,
    )


def _stack_policy(rule: Rule, schema: PolicyConfigSchema | None) -> Policy:
    check = rule.stack_check
    assert check is not None

    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        settings = rule_config(rule, {rule.name: args.get_config()})
        stack = Stack(from_policy_resource(r) for r in args.resources)
        if rule.name == replacement.NAME:
            try:
                settings = replacement.prepare(settings, stack_file_of(stack))
            except (OSError, ValueError) as err:
                report_violation(f"baselinePlan {settings.get('baselinePlan')!r} cannot be read: {err}", None)
                return
        for violation in check(stack, settings):
            report_violation(violation.message, violation.urn)

    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=schema,
    )


def stack_file_of(stack: Stack) -> Path | None:
    """``stacks/Pulumi.<stack>.yaml`` of the previewed stack (its name is in every URN)."""
    from tpu_platform.plan.stacks import stack_file

    for resource in stack:
        parts = resource.urn.split("::")[0].split(":")
        if len(parts) == 3 and parts[2]:
            return stack_file(parts[2])
    return None


def policies() -> list[Policy]:
    """One mandatory pulumi-policy policy per rule, in catalogue order."""
    built: list[Policy] = []
    for rule in ALL_RULES:
        schema = (
            PolicyConfigSchema(properties={k: dict(v) for k, v in rule.config_properties.items()})
            if rule.config_properties
            else None
        )
        if rule.resource_check is not None:
            built.append(_resource_policy(rule, schema))
        if rule.stack_check is not None:
            built.append(_stack_policy(rule, schema))
    return built
