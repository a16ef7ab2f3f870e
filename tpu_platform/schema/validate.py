"""Choose the schema for an object by apiVersion/kind and check it like the API server would."""

from __future__ import annotations

import re
from collections import deque
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

from . import structural
from .cel import CelOutcome, evaluate_rule
from .core import KUBERNETES_VERSION, KubernetesSchemas, kubernetes_schemas, split_api_version
from .crds import Crd, CrdCatalog, CrdsUnavailable, crds_dir
from .issues import SchemaIssue, SchemaReport
from .metadata import check_object_meta

# Cluster-scoped built-in kinds: a namespace on them is dropped by the API server.
CLUSTER_SCOPED_CORE = frozenset(
    {
        "Namespace",
        "Node",
        "PersistentVolume",
        "ClusterRole",
        "ClusterRoleBinding",
        "PriorityClass",
        "StorageClass",
        "CustomResourceDefinition",
        "APIService",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "RuntimeClass",
        "IngressClass",
        "CSIDriver",
        "VolumeAttachment",
        "FlowSchema",
        "PriorityLevelConfiguration",
    }
)
_MAX_MESSAGE = 300
# Schema errors that stop CEL rules from running (``hasBlockingErr`` in the API server).
_BLOCKING = frozenset({"type", "enum"})


# The API server matches ``pattern`` with Go's RE2, where an inline flag group such as ``(?i)`` may
# stand anywhere and applies to the rest of the expression (https://github.com/google/re2/wiki/Syntax);
# Python's ``re`` rejects global flags after the start. Kueue's AdmissionCheck CRD writes
# ``^(?i)[a-z]...`` (kueue v0.19.2, parameters.kind). Leading flags move to the front unchanged.
_LEADING_FLAGS = re.compile(r"^\^\(\?([ims]+)\)")


def python_pattern(pattern: str) -> str:
    """An RE2 ``pattern`` as Python ``re`` reads it (same language for the CRDs' patterns)."""
    match = _LEADING_FLAGS.match(pattern)
    if match:
        return f"(?{match.group(1)})^" + pattern[match.end() :]
    return pattern


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Any:
    if validator.is_type(instance, "string") and not re.search(python_pattern(pattern), instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


Re2PatternValidator = jsonschema.validators.extend(jsonschema.Draft4Validator, {"pattern": _pattern})


def format_path(parts: deque[Any] | list[Any]) -> str:
    path = ""
    for part in parts:
        path = f"{path}[{part}]" if isinstance(part, int) else structural.join(path, str(part))
    return path


def _issues_from(error: ValidationError, prefix: str = "") -> list[SchemaIssue]:
    """One jsonschema error as API-server-like issues (one per unknown field)."""
    base = format_path(error.absolute_path)
    path = structural.join(prefix, base) if prefix and base else (prefix or base)
    if error.validator == "additionalProperties" and error.validator_value is False:
        instance = error.instance if isinstance(error.instance, dict) else {}
        known = set((error.schema.get("properties") or {}) if isinstance(error.schema, dict) else {})
        return [
            SchemaIssue(structural.join(path, str(key)), f'unknown field "{key}"', code="unknown-field")
            for key in instance
            if key not in known
        ]
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [key for key in error.validator_value if key not in error.instance]
        return [SchemaIssue(structural.join(path, key), "Required value") for key in missing]
    message = error.message
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 3] + "..."
    return [SchemaIssue(path, message)]


class SchemaValidator:
    """Validates objects against the CRDs in one folder and one Kubernetes version's schemas."""

    def __init__(self, crds: Path | None = None, kubernetes_version: str = KUBERNETES_VERSION):
        self.crds_path = crds if crds is not None else crds_dir()
        self.kubernetes_version = kubernetes_version
        self._catalog: CrdCatalog | None = None
        self._compiled: dict[tuple[str, str, str], jsonschema.protocols.Validator] = {}

    @property
    def core(self) -> KubernetesSchemas:
        return kubernetes_schemas(self.kubernetes_version)

    @property
    def catalog(self) -> CrdCatalog:
        """The CRD index; raises ``CrdsUnavailable`` (again on every call) while the folder is missing."""
        if self._catalog is None:
            self._catalog = CrdCatalog(self.crds_path)
        return self._catalog

    def check(self, obj: Any) -> SchemaReport:
        """Everything known about one object; ``CrdsUnavailable`` for a custom resource without CRDs."""
        if not isinstance(obj, dict):
            report = SchemaReport("", "", "")
            report.issues.append(
                SchemaIssue("", f"expected an object, got {type(obj).__name__}", code="api-version")
            )
            return report
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        meta = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
        report = SchemaReport(str(api_version or ""), str(kind or ""), str(meta.get("name") or ""))
        if not isinstance(api_version, str) or not api_version or not isinstance(kind, str) or not kind:
            report.issues.append(SchemaIssue("", "apiVersion and kind are required", code="api-version"))
            return report
        group, _ = split_api_version(api_version)
        if self.core.is_builtin_group(group):
            self._check_core(obj, report)
        else:
            self._check_custom(obj, report)
        return report

    def _check_core(self, obj: dict[str, Any], report: SchemaReport) -> None:
        lookup = self.core.lookup(report.api_version, report.kind)
        if lookup.validator is None:
            if lookup.served:
                report.issues.append(
                    SchemaIssue(
                        "apiVersion",
                        f"Kubernetes {self.kubernetes_version} does not serve {report.kind} in "
                        f"{report.api_version}; use {' or '.join(lookup.served)}",
                        code="version",
                    )
                )
            else:
                report.issues.append(
                    SchemaIssue(
                        "kind",
                        f"Kubernetes {self.kubernetes_version} has no kind {report.kind} in "
                        f"{report.api_version}",
                        code="unknown-kind",
                    )
                )
            return
        report.schema_source = f"Kubernetes {self.kubernetes_version} (kubernetes-validate, strict)"
        for error in lookup.validator.iter_errors(obj):
            report.issues.extend(_issues_from(error))
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            namespaced = report.kind not in CLUSTER_SCOPED_CORE
            report.issues.extend(check_object_meta(meta, kind=report.kind, namespaced=namespaced))
        elif meta is None:
            report.issues.append(SchemaIssue("metadata", "Required value", code="metadata"))

    def _check_custom(self, obj: dict[str, Any], report: SchemaReport) -> None:
        group, version = split_api_version(report.api_version)
        catalog = self.catalog
        crd = catalog.get(group, report.kind)
        if crd is None:
            if group in catalog.groups:
                report.issues.append(
                    SchemaIssue(
                        "kind",
                        f"{group} has no kind {report.kind}; its kinds: {', '.join(catalog.kinds(group))}",
                        code="unknown-kind",
                    )
                )
            else:
                report.issues.append(
                    SchemaIssue(
                        "",
                        f"no schema for {report.api_version} {report.kind}: neither a CRD under "
                        f"{catalog.root} nor a Kubernetes {self.kubernetes_version} kind; not checked",
                        severity="warning",
                        code="no-schema",
                    )
                )
            return
        crd_version = crd.versions.get(version)
        use = " or ".join(f"{group}/{v}" for v in crd.recommended_versions()) or "none is served"
        if crd_version is None or not crd_version.served:
            state = "is not defined" if crd_version is None else "is not served"
            report.issues.append(
                SchemaIssue(
                    "apiVersion", f"{report.api_version} {state} for {report.kind}; use {use}", code="version"
                )
            )
            return
        if crd_version.deprecated:
            warning = crd_version.deprecation_warning or "this version is deprecated"
            report.issues.append(
                SchemaIssue(
                    "apiVersion",
                    f"{report.api_version} is deprecated for {report.kind} ({warning}); use {use}",
                    code="version",
                )
            )
        report.schema_source = f"CRD {crd.path.name} {version}"
        self._check_against_crd(obj, crd, version, report)

    def _validator_for(self, crd: Crd, version: str) -> jsonschema.protocols.Validator:
        key = (crd.group, crd.kind, version)
        if key not in self._compiled:
            schema = structural.to_json_schema(crd.versions[version].schema, root=True)
            self._compiled[key] = Re2PatternValidator(schema)
        return self._compiled[key]

    def _check_against_crd(self, obj: dict[str, Any], crd: Crd, version: str, report: SchemaReport) -> None:
        schema = crd.versions[version].schema
        decoded = structural.prune_nulls_and_default(obj, schema)
        blocking = False
        for error in self._validator_for(crd, version).iter_errors(decoded):
            blocking = blocking or error.validator in _BLOCKING
            report.issues.extend(_issues_from(error))
        report.issues.extend(self._check_custom_metadata(decoded.get("metadata"), crd, schema))
        for node in structural.walk(decoded, schema):
            for path, message in structural.list_type_problems(node):
                report.issues.append(SchemaIssue(path, message, code="list-type"))
            for rule in node.schema.get("x-kubernetes-validations") or []:
                if blocking:
                    report.cel.append(
                        CelOutcome(
                            node.path,
                            str(rule.get("rule")),
                            "not-evaluated",
                            "rule not evaluated: schema errors",
                        )
                    )
                    continue
                outcome = evaluate_rule(rule, node.value, node.path)
                report.cel.append(outcome)
                if outcome.status == "failed":
                    report.issues.append(SchemaIssue(outcome.path, outcome.message, code="cel"))
                elif outcome.status == "not-evaluated":
                    report.issues.append(
                        SchemaIssue(
                            outcome.path, f"{outcome.message}: {outcome.rule}", severity="warning", code="cel"
                        )
                    )
        if blocking and any(o.status == "not-evaluated" for o in report.cel):
            report.issues.append(
                SchemaIssue(
                    "",
                    "some validation rules were not checked because the object was invalid; "
                    "correct the existing errors to complete validation",
                    severity="warning",
                    code="cel",
                )
            )

    def _check_custom_metadata(self, meta: Any, crd: Crd, schema: dict[str, Any]) -> list[SchemaIssue]:
        if meta is None:
            return [SchemaIssue("metadata", "Required value", code="metadata")]
        if not isinstance(meta, dict):
            return [
                SchemaIssue("metadata", f"expected an object, got {type(meta).__name__}", code="metadata")
            ]
        issues: list[SchemaIssue] = []
        for error in self.core.object_meta.iter_errors(meta):
            issues.extend(_issues_from(error, prefix="metadata"))
        # A CRD may narrow name and generateName only; those constraints apply too.
        crd_meta = (schema.get("properties") or {}).get("metadata") or {}
        if crd_meta.get("properties"):
            narrowed = structural.to_json_schema({**crd_meta, "x-kubernetes-preserve-unknown-fields": True})
            for error in jsonschema.Draft4Validator(narrowed).iter_errors(meta):
                issues.extend(_issues_from(error, prefix="metadata"))
        issues.extend(check_object_meta(meta, kind=crd.kind, namespaced=crd.namespaced))
        return issues


@lru_cache(maxsize=8)
def _default_validator(crds: str, kubernetes_version: str) -> SchemaValidator:
    return SchemaValidator(Path(crds), kubernetes_version)


def default_validator(kubernetes_version: str = KUBERNETES_VERSION) -> SchemaValidator:
    """The shared validator for the CRD folder currently configured (``$TPU_PLATFORM_CRDS``)."""
    return _default_validator(str(crds_dir()), kubernetes_version)


def check_object(obj: Any, validator: SchemaValidator | None = None) -> SchemaReport:
    """Issues plus the outcome of every CEL rule; raises ``CrdsUnavailable`` for a CR without CRDs."""
    return (validator or default_validator()).check(obj)


def validate_object(obj: Any, validator: SchemaValidator | None = None) -> list[SchemaIssue]:
    """Errors and warnings for one object (``SchemaIssue.severity`` tells them apart).

    Custom resources are checked against the CRD files, built-in kinds against
    kubernetes-validate, anything else is reported as having no schema.
    """
    return check_object(obj, validator).issues


__all__ = ["CrdsUnavailable", "SchemaValidator", "check_object", "default_validator", "validate_object"]
