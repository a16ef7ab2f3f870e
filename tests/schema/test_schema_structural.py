"""The CRD machinery on a small CRD written here: every x-kubernetes extension, CEL outcome and
version state, independent of the Kueue and JobSet files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tpu_platform.schema import CrdsUnavailable, SchemaValidator, check_object
from tpu_platform.schema.cel import SUPPORTED_FUNCTIONS, evaluate_rule

GROUP = "example.tpu-platform.dev"

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-validations": [
        {
            "rule": "self.minReplicas <= self.maxReplicas",
            "message": "minReplicas must not exceed maxReplicas",
        },
        {
            "rule": "self.mode != 'Fixed' || self.minReplicas == self.maxReplicas",
            "messageExpression": "'Fixed mode needs equal bounds, got ' + string(self.minReplicas)",
        },
        {"rule": "self.tags.isSorted()", "message": "tags must be sorted"},
        {"rule": "self.mode == oldSelf.mode", "message": "mode is immutable"},
        # Reads a field that is never set once ``limit`` is: a runtime error, not a false.
        {"rule": "!has(self.limit) || self.limit < self.missing", "message": "unreachable message"},
    ],
    "required": ["maxReplicas"],
    "properties": {
        "minReplicas": {"type": "integer", "default": 1},
        "maxReplicas": {"type": "integer"},
        "mode": {"type": "string", "enum": ["Auto", "Fixed"], "default": "Auto"},
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "x-kubernetes-list-type": "set",
            "default": [],
        },
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "protocol"],
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "protocol": {"type": "string", "default": "TCP"},
                    "port": {"x-kubernetes-int-or-string": True},
                },
            },
        },
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "note": {"type": "string", "nullable": True},
        "limit": {"type": "integer"},
        "template": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}}},
        },
    },
}


def widget_crd(*, scope: str = "Namespaced") -> dict[str, Any]:
    def version(
        name: str, *, served: bool = True, storage: bool = False, deprecated: bool = False
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "name": name,
            "served": served,
            "storage": storage,
            "schema": {
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {
                            "type": "object",
                            "properties": {"name": {"type": "string", "maxLength": 20}},
                        },
                        "spec": SPEC_SCHEMA,
                    },
                }
            },
        }
        if deprecated:
            entry["deprecated"] = True
            entry["deprecationWarning"] = f"{GROUP}/{name} is deprecated; use v2"
        return entry

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": scope,
            "versions": [
                version("v0", served=False),
                version("v1", deprecated=True),
                version("v2", storage=True),
            ],
        },
    }


@pytest.fixture
def crd_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "crds" / "example"
    folder.mkdir(parents=True)
    (folder / f"{GROUP}_widgets.yaml").write_text("---\n" + yaml.safe_dump(widget_crd(), sort_keys=False))
    cluster_scoped = widget_crd(scope="Cluster")
    cluster_scoped["spec"]["names"] = {"kind": "Gadget", "plural": "gadgets"}
    (folder / f"{GROUP}_gadgets.yaml").write_text(yaml.safe_dump(cluster_scoped, sort_keys=False))
    return tmp_path / "crds"


@pytest.fixture
def validator(crd_dir: Path) -> SchemaValidator:
    return SchemaValidator(crd_dir)


def widget(spec: dict[str, Any], *, version: str = "v2", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "team-a", **meta},
        "spec": spec,
    }


def errors(report: Any) -> list[tuple[str, str]]:
    return [(i.path, i.message) for i in report.errors]


def test_good_object_runs_every_supported_rule(validator: SchemaValidator) -> None:
    report = check_object(widget({"maxReplicas": 3, "tags": ["a", "b"]}), validator)
    assert report.errors == [], report.describe()
    assert report.cel_count("passed") == 3
    # The transition rule and the unsupported function are visible, not silently passed.
    assert report.cel_count("transition") == 1
    assert report.cel_count("not-evaluated") == 1
    assert [w.message for w in report.warnings] == [
        "rule not evaluated: cel-python lacks isSorted() (Kubernetes CEL library): self.tags.isSorted()"
    ]
    assert any("transition rule" in note for note in report.notes)


def test_runtime_error_in_a_rule_is_an_error_like_the_api_server(validator: SchemaValidator) -> None:
    report = check_object(widget({"maxReplicas": 3, "limit": 2}), validator)
    failures = [o for o in report.cel if o.status == "failed"]
    assert [o.rule for o in failures] == ["!has(self.limit) || self.limit < self.missing"]
    assert "no such member" in failures[0].message
    assert ("spec", failures[0].message) in errors(report)


def test_defaults_are_applied_before_rules(validator: SchemaValidator) -> None:
    # minReplicas defaults to 1, mode to Auto: both rules can read them although they are absent.
    report = check_object(widget({"maxReplicas": 0}), validator)
    assert ("spec", "minReplicas must not exceed maxReplicas") in errors(report)


def test_message_expression_is_used(validator: SchemaValidator) -> None:
    report = check_object(widget({"maxReplicas": 3, "minReplicas": 2, "mode": "Fixed"}), validator)
    assert ("spec", "Fixed mode needs equal bounds, got 2") in errors(report)


def test_unknown_fields_are_rejected_except_where_preserved(validator: SchemaValidator) -> None:
    report = check_object(
        widget(
            {"maxReplicas": 1, "maxReplica": 2, "extra": {"anything": {"goes": 1}}, "template": {"bogus": 1}}
        ),
        validator,
    )
    assert ("spec.maxReplica", 'unknown field "maxReplica"') in errors(report)
    assert ("spec.template.bogus", 'unknown field "bogus"') in errors(report)
    assert not [p for p, _ in errors(report) if p.startswith("spec.extra")]


def test_embedded_resource_allows_type_and_object_meta(validator: SchemaValidator) -> None:
    template = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "b"}}
    report = check_object(widget({"maxReplicas": 1, "template": template}), validator)
    assert report.errors == [], report.describe()


def test_int_or_string_and_nullable(validator: SchemaValidator) -> None:
    good = widget(
        {"maxReplicas": 1, "note": None, "ports": [{"name": "a", "port": 80}, {"name": "b", "port": "http"}]}
    )
    assert check_object(good, validator).errors == []
    bad = check_object(widget({"maxReplicas": 1, "ports": [{"name": "a", "port": 1.5}]}), validator)
    assert [p for p, _ in errors(bad)] == ["spec.ports[0].port"]


def test_null_on_a_non_nullable_field_is_dropped_then_defaulted(validator: SchemaValidator) -> None:
    # The API server prunes the null and applies the default (Auto): no type error.
    report = check_object(widget({"maxReplicas": 1, "mode": None, "limit": None}), validator)
    assert report.errors == [], report.describe()


def test_type_errors_block_rules_like_the_api_server(validator: SchemaValidator) -> None:
    report = check_object(widget({"maxReplicas": "three"}), validator)
    assert ("spec.maxReplicas", "'three' is not of type 'integer'") in errors(report)
    assert report.cel_evaluated == 0
    assert any("some validation rules were not checked" in w.message for w in report.warnings)


def test_list_map_keys_include_defaulted_keys(validator: SchemaValidator) -> None:
    # protocol defaults to TCP, so these two items have the same key (a, TCP).
    report = check_object(
        widget(
            {
                "maxReplicas": 1,
                "ports": [{"name": "a"}, {"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "UDP"}],
            }
        ),
        validator,
    )
    dupes = [i for i in report.issues if i.code == "list-type"]
    assert [i.path for i in dupes] == ["spec.ports[1]"]
    assert '"name": "a"' in dupes[0].message and "also at index 0" in dupes[0].message


def test_set_items_must_be_unique(validator: SchemaValidator) -> None:
    report = check_object(widget({"maxReplicas": 1, "tags": ["a", "b", "a"]}), validator)
    assert [i.path for i in report.issues if i.code == "list-type"] == ["spec.tags[2]"]


def test_deprecated_version_is_an_error_naming_the_served_one(validator: SchemaValidator) -> None:
    report = check_object(widget({"maxReplicas": 1}, version="v1"), validator)
    versions = [i for i in report.errors if i.code == "version"]
    assert len(versions) == 1
    assert "deprecated" in versions[0].message and f"use {GROUP}/v2" in versions[0].message
    # The object is still checked against the version it names.
    assert report.cel_count("passed") == 3


@pytest.mark.parametrize(("version", "state"), [("v0", "is not served"), ("v9", "is not defined")])
def test_unserved_or_unknown_version(validator: SchemaValidator, version: str, state: str) -> None:
    report = check_object(widget({"maxReplicas": 1}, version=version), validator)
    assert [(i.path, i.code) for i in report.errors] == [("apiVersion", "version")]
    assert state in report.errors[0].message and f"use {GROUP}/v2" in report.errors[0].message


def test_unknown_kind_in_a_known_group(validator: SchemaValidator) -> None:
    report = check_object(
        {"apiVersion": f"{GROUP}/v2", "kind": "Widgit", "metadata": {"name": "w"}}, validator
    )
    assert [i.code for i in report.errors] == ["unknown-kind"]
    assert "Gadget, Widget" in report.errors[0].message


def test_metadata_is_checked_like_the_api_server(validator: SchemaValidator) -> None:
    obj = widget({"maxReplicas": 1}, labels={"team": "a b"}, annotations={"bad key!": "x"})
    obj["metadata"]["name"] = "Not_Valid"
    obj["metadata"]["nmespace"] = "typo"
    report = check_object(obj, validator)
    paths = {p for p, _ in errors(report)}
    assert {"metadata.name", 'metadata.labels["team"]', 'metadata.annotations["bad key!"]'} <= paths
    assert ("metadata.nmespace", 'unknown field "nmespace"') in errors(report)


def test_crd_narrowing_of_the_name_applies(validator: SchemaValidator) -> None:
    report = check_object(widget({"maxReplicas": 1}, name="a" * 21), validator)
    assert [p for p, _ in errors(report)] == ["metadata.name"]


def test_name_or_generate_name_is_required(validator: SchemaValidator) -> None:
    obj = widget({"maxReplicas": 1})
    del obj["metadata"]["name"]
    assert errors(check_object(obj, validator)) == [
        ("metadata.name", "Required value: name or generateName is required")
    ]
    obj["metadata"]["generateName"] = "w-"
    assert check_object(obj, validator).errors == []


def test_namespace_on_a_cluster_scoped_kind_is_a_warning(validator: SchemaValidator) -> None:
    obj = widget({"maxReplicas": 1})
    obj["kind"] = "Gadget"
    report = check_object(obj, validator)
    assert report.errors == []
    assert [(w.path, w.code) for w in report.warnings if w.code == "metadata"] == [
        ("metadata.namespace", "metadata")
    ]


def test_crds_are_parsed_only_when_needed(validator: SchemaValidator) -> None:
    check_object(widget({"maxReplicas": 1}), validator)
    gadget = validator.catalog.get(GROUP, "Gadget")
    widget_crd_loaded = validator.catalog.get(GROUP, "Widget")
    assert gadget is not None and widget_crd_loaded is not None
    assert "versions" in vars(widget_crd_loaded)
    assert "versions" not in vars(gadget)


def test_missing_crd_folder_is_reported_clearly(tmp_path: Path) -> None:
    validator = SchemaValidator(tmp_path / "nowhere")
    with pytest.raises(CrdsUnavailable, match="TPU_PLATFORM_CRDS"):
        check_object(widget({"maxReplicas": 1}), validator)
    # Built-in kinds need no CRDs.
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    assert check_object(namespace, validator).issues == []


def test_crd_folder_comes_from_the_environment(crd_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TPU_PLATFORM_CRDS", str(crd_dir))
    report = check_object(widget({"maxReplicas": 1}))
    assert report.schema_source == f"CRD {GROUP}_widgets.yaml v2"


def test_supported_functions_cover_the_standard_macros() -> None:
    assert {"has", "all", "exists", "exists_one", "filter", "map", "size", "matches"} <= SUPPORTED_FUNCTIONS
    assert "isSorted" not in SUPPORTED_FUNCTIONS


@pytest.mark.parametrize(
    ("rule", "value", "reason"),
    [
        ("self.?x.orValue(1) == 1", {}, "cel-python cannot parse it at column 6"),
        ("quantity(self.q).isLessThan(quantity('1'))", {"q": "2"}, "lacks isLessThan(), quantity()"),
    ],
)
def test_what_cel_python_cannot_run_is_named(rule: str, value: dict[str, Any], reason: str) -> None:
    outcome = evaluate_rule({"rule": rule}, value, "spec")
    assert outcome.status == "not-evaluated"
    assert outcome.message.startswith("rule not evaluated: ") and reason in outcome.message


@pytest.mark.parametrize(
    ("rule", "value", "status"),
    [
        # int-or-string ports (GMP PodMonitoring): cel-go's heterogeneous equality, not an error.
        ("self.port != 0", {"port": "metrics"}, "passed"),
        ("self.port == 'http'", {"port": 80}, "failed"),
        ("self.port != 0", {"port": 0}, "failed"),
        # numbers compare by value across int and double; bool is not a number.
        ("self.n == 1.0", {"n": 1}, "passed"),
        ("self.b == 1", {"b": True}, "failed"),
        ("self.l == [1.0, 'a']", {"l": [1, "a"]}, "passed"),
        ("self.m == {'a': 'x'}", {"m": {"a": 1}}, "failed"),
        ("self.z == null", {"z": None}, "passed"),
    ],
)
def test_equality_is_heterogeneous_as_in_cel_go(rule: str, value: dict[str, Any], status: str) -> None:
    """google/cel-spec doc/langdef.md "Equality"; cel-go common/types/compare.go."""
    assert evaluate_rule({"rule": rule}, value, "spec").status == status


def test_a_type_mismatch_that_cel_also_rejects_is_a_failure() -> None:
    outcome = evaluate_rule({"rule": "self.port < 'http'"}, {"port": 80}, "spec")
    assert outcome.status == "failed"


def test_field_path_is_appended() -> None:
    outcome = evaluate_rule({"rule": "size(self.name) > 3", "fieldPath": ".name"}, {"name": "ab"}, "spec")
    assert (outcome.status, outcome.path) == ("failed", "spec.name")


@pytest.mark.parametrize(
    ("prefix", "valid"),
    [
        ("w-", True),
        ("a.-", True),
        ("ab--", True),
        ("-", False),
        ("w", True),
        ("w.", False),
        ("W-", True),
        ("Wx-", False),
    ],
)
def test_generate_name_masks_one_trailing_dash_as_the_server_does(
    validator: SchemaValidator, prefix: str, valid: bool
) -> None:
    """apimachinery's maskTrailingDash: the last two characters become ``a`` (even ``"W-"`` passes)."""
    obj = widget({"maxReplicas": 1})
    del obj["metadata"]["name"]
    obj["metadata"]["generateName"] = prefix
    paths = [p for p, _ in errors(check_object(obj, validator))]
    assert paths == ([] if valid else ["metadata.generateName"])
