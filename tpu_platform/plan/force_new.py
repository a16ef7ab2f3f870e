"""Which input changes make ``pulumi up`` replace a resource, for every resource type a plan holds.

Derived from each provider's own source at the pinned version and committed as package data
(``data/force_new.json``) with the sha256 of every file read, so a reviewer can re-derive it:

    M=$(go env GOMODCACHE)/github.com/pulumi
    python -m tpu_platform.plan.force_new \\
      --git-dir /work/.mirror/hashicorp+terraform-provider-google/repo --tag v7.44.0 \\
      --kubernetes-module $M/pulumi-kubernetes/provider/v4@v4.0.0-20260115033456-f47bc2d6f199 \\
      --engine-module $M/pulumi/pkg/v3@v3.274.0 \\
      --docker-build-source <pulumi-docker-build>/provider/internal/image.go --docker-build-commit SHA \\
      --write

- Google (pulumi-gcp bridges Terraform's Google provider): a field whose SDKv2 schema says
  ``ForceNew: true`` replaces the resource (:mod:`.go_schema` reads the schema literals of each
  resource's file, :mod:`.sdk_names` names the fields as the pinned pulumi-gcp SDK does); a
  ``CustomizeDiff`` that forces a new resource on a field is recorded with its condition. In SDKv2
  a ``ForceNew`` list block forces a new resource only when the block is added or removed (its
  children keep their own flag): hashicorp/terraform-plugin-sdk ``helper/schema/schema.go`` (v2.38.1).
- pulumi-kubernetes, the engine and pulumi-docker-build: :mod:`.pulumi_rules`.
- This project's components (``tpu-platform:*``) are no provider's resources: the engine updates them.

A type a plan holds that has none of these makes the review fail with this command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from . import pulumi_rules
from .go_schema import Evaluator, Field, Source
from .sdk_names import args_class, iter_force_new, resolve
from .upstream_git import DerivationError, git_show, write_or_print

DATA_FILE = "force_new.json"
COMMAND = "python -m tpu_platform.plan.force_new (its docstring has the sources and flags)"
_FIELD = re.compile(r'^(\t+)"([a-z0-9_]+)":\s*(\{|schema[A-Za-z]+\(\),?)')
_HELPER_CALL = re.compile(r'^(\t+)"([a-z0-9_]+)":\s*(schema[A-Za-z]+)\(\),?\s*$')
_FUNC = re.compile(r"^func (schema[A-Za-z]+)\(\) \*schema\.Schema \{")


def snake_to_camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_path(path: str) -> str:
    return ".".join(snake_to_camel(part) for part in path.split("."))


def walk_schema(lines: Iterable[str]) -> Iterator[tuple[str, str, str | None]]:
    """``(path, line, helper)`` over gofmt'd schema literals, nesting by tab indentation. On a
    field's own line ``path`` is that field's dotted snake_case path and ``helper`` the schema
    function the field is defined by (``"node_config": schemaNodeConfig(),``) or ``""``; on any other
    line ``path`` is the enclosing field's (``""`` outside every field) and ``helper`` None. A field
    ends at the ``}`` that closes its block at its own depth, or at any line less indented (a
    package-level ``var`` block of schema maps must not nest the fields that follow it); lines inside a
    multi-line raw string (a backquoted ``Description``) are text, not structure."""
    stack: list[tuple[int, str]] = []
    in_raw = False
    for line in lines:
        starts_raw = in_raw
        in_raw ^= line.count("`") % 2 == 1
        field = None if starts_raw else _FIELD.match(line)
        if field:
            depth = len(field.group(1))
            while stack and stack[-1][0] >= depth:
                stack.pop()
            stack.append((depth, field.group(2)))
            call = _HELPER_CALL.match(line)
            yield ".".join(name for _, name in stack), line, call.group(3) if call else ""
        else:
            stripped = line.lstrip("\t")
            if stripped.strip() and not starts_raw:
                depth = len(line) - len(stripped)
                closes = stripped.startswith("}")
                while stack and (stack[-1][0] > depth or (closes and stack[-1][0] == depth)):
                    stack.pop()
            yield ".".join(name for _, name in stack), line, None


def force_new_fields(source: str, helpers: dict[str, set[str]] | None = None) -> set[str]:
    """Dotted snake_case paths of every field whose own schema says ``ForceNew: true``; a field
    defined by a helper call takes the helper's fields under its name."""
    helpers = helpers or {}
    found: set[str] = set()
    for path, line, helper in walk_schema(source.splitlines()):
        if helper is not None:
            if helper in helpers:
                found |= {f"{path}.{sub}" if sub else path for sub in helpers[helper]}
        elif path and re.match(r"^\s*ForceNew:\s*true,", line):
            found.add(path)
    return found


def helper_fields(source: str, name: str) -> set[str]:
    """ForceNew paths inside ``func <name>() *schema.Schema``, relative to the field it defines."""
    body: list[str] = []
    inside = False
    for line in source.splitlines():
        match = _FUNC.match(line)
        if match:
            inside = match.group(1) == name
            continue
        if inside:
            if line == "}":
                break
            body.append(line)
    text = "\n".join(body)
    own = {""} if re.search(r"^\t\tForceNew:\s*true,", text, re.M) else set()
    return own | force_new_fields(text)


NODE_POOL_FILE = "google/services/container/resource_container_node_pool.go"
NODE_CONFIG_FILE = "google/services/container/node_config.go"
CLUSTER_FILE = "google/services/container/resource_container_cluster.go"
UTILS_FILE = "google/tpgresource/utils.go"  # DeletionPolicySchemaEntry, shared by every resource
IAM_MEMBER_FILE = "google/tpgiamresource/resource_iam_member.go"
REPOSITORY = "hashicorp/terraform-provider-google"


@dataclass(frozen=True)
class GoogleType:
    """Where a pulumi-gcp type's Terraform resource is declared: its name, the function returning its
    ``*schema.Resource`` (or the schema maps an IAM member merges), and the files that hold them."""

    token: str
    terraform: str
    root: str
    files: tuple[str, ...]
    maps: tuple[str, ...] = ()


def _service(path: str) -> str:
    return f"google/services/{path}"


GKE_TYPES = (
    GoogleType(
        "gcp:container/nodePool:NodePool",
        "google_container_node_pool",
        "ResourceContainerNodePool",
        (NODE_POOL_FILE, NODE_CONFIG_FILE),
    ),
    GoogleType(
        "gcp:container/cluster:Cluster",
        "google_container_cluster",
        "ResourceContainerCluster",
        (CLUSTER_FILE, NODE_CONFIG_FILE, NODE_POOL_FILE),
    ),
)


def _iam(token: str, terraform: str, file: str, parent_map: str) -> GoogleType:
    """An IAM member: the parent's schema map merged with ``IamMemberBaseSchema``
    (``tpgiamresource.ResourceIamMember``)."""
    return GoogleType(token, terraform, "", (file, IAM_MEMBER_FILE), (parent_map, "IamMemberBaseSchema"))


GOOGLE_TYPES = (
    GoogleType(
        "gcp:artifactregistry/repository:Repository",
        "google_artifact_registry_repository",
        "ResourceArtifactRegistryRepository",
        (_service("artifactregistry/resource_artifact_registry_repository.go"),),
    ),
    GoogleType(
        "gcp:compute/firewall:Firewall",
        "google_compute_firewall",
        "ResourceComputeFirewall",
        (_service("compute/resource_compute_firewall.go"),),
    ),
    GoogleType(
        "gcp:compute/router:Router",
        "google_compute_router",
        "ResourceComputeRouter",
        (_service("compute/resource_compute_router.go"),),
    ),
    GoogleType(
        "gcp:compute/routerNat:RouterNat",
        "google_compute_router_nat",
        "ResourceComputeRouterNat",
        (_service("compute/resource_compute_router_nat.go"),),
    ),
    GoogleType(
        "gcp:monitoring/alertPolicy:AlertPolicy",
        "google_monitoring_alert_policy",
        "ResourceMonitoringAlertPolicy",
        (_service("monitoring/resource_monitoring_alert_policy.go"),),
    ),
    GoogleType(
        "gcp:monitoring/dashboard:Dashboard",
        "google_monitoring_dashboard",
        "ResourceMonitoringDashboard",
        (_service("monitoring/resource_monitoring_dashboard.go"),),
    ),
    GoogleType(
        "gcp:monitoring/notificationChannel:NotificationChannel",
        "google_monitoring_notification_channel",
        "ResourceMonitoringNotificationChannel",
        (_service("monitoring/resource_monitoring_notification_channel.go"),),
    ),
    _iam(
        "gcp:projects/iAMMember:IAMMember",
        "google_project_iam_member",
        _service("resourcemanager/iam_project.go"),
        "IamProjectSchema",
    ),
    GoogleType(
        "gcp:projects/iAMCustomRole:IAMCustomRole",
        "google_project_iam_custom_role",
        "ResourceGoogleProjectIamCustomRole",
        (_service("resourcemanager/resource_google_project_iam_custom_role.go"),),
    ),
    GoogleType(
        "gcp:projects/service:Service",
        "google_project_service",
        "ResourceGoogleProjectService",
        (_service("resourcemanager/resource_google_project_service.go"),),
    ),
    GoogleType(
        "gcp:pubsub/topic:Topic",
        "google_pubsub_topic",
        "ResourcePubsubTopic",
        (_service("pubsub/resource_pubsub_topic.go"),),
    ),
    GoogleType(
        "gcp:serviceaccount/account:Account",
        "google_service_account",
        "ResourceGoogleServiceAccount",
        (_service("resourcemanager/resource_google_service_account.go"),),
    ),
    _iam(
        "gcp:serviceaccount/iAMMember:IAMMember",
        "google_service_account_iam_member",
        _service("resourcemanager/iam_service_account.go"),
        "IamServiceAccountSchema",
    ),
    GoogleType(
        "gcp:tags/tagKey:TagKey",
        "google_tags_tag_key",
        "ResourceTagsTagKey",
        (_service("tags/resource_tags_tag_key.go"),),
    ),
    GoogleType(
        "gcp:tags/tagValue:TagValue",
        "google_tags_tag_value",
        "ResourceTagsTagValue",
        (_service("tags/resource_tags_tag_value.go"),),
    ),
    _iam(
        "gcp:tags/tagValueIamMember:TagValueIamMember",
        "google_tags_tag_value_iam_member",
        _service("tags/iam_tags_tag_value.go"),
        "TagsTagValueIamSchema",
    ),
)

_FORCE_NEW_IF_CHANGE = re.compile(r'customdiff\.ForceNewIfChange\("([a-z0-9_.]+)",\s*(\w+)\)')
_FORCE_NEW_CALL = re.compile(r'\.ForceNew\("([a-z0-9_.]+)"\)')
_GO_FUNC = re.compile(r"^func (\w+)\(", re.M)


def _conditional(text: str) -> dict[str, str]:
    """Fields a ``CustomizeDiff`` forces a new resource on, Terraform path -> the condition."""
    found: dict[str, str] = {}
    for match in _FORCE_NEW_IF_CHANGE.finditer(text):
        found[match.group(1)] = f"customdiff.ForceNewIfChange({match.group(1)!r}, {match.group(2)})"
    for match in _FORCE_NEW_CALL.finditer(text):
        funcs = [m.group(1) for m in _GO_FUNC.finditer(text, 0, match.start())]
        found.setdefault(match.group(1), f"CustomizeDiff {funcs[-1] if funcs else '?'}")
    return found


def google_type(spec: GoogleType, texts: Mapping[str, str]) -> dict[str, Any]:
    """One type's replacement fields as Pulumi paths, and the SDK's input paths the source lacks."""
    if not any(f'"{spec.terraform}"' in texts[path] for path in spec.files):
        raise DerivationError(f"{spec.terraform} is not registered in {', '.join(spec.files)}")
    evaluator = Evaluator(Source(texts[path] for path in (*spec.files, UTILS_FILE)))
    fields: dict[str, Field] = {}
    if spec.maps:
        for name in spec.maps:
            fields.update(evaluator.schema_map(name))
    else:
        fields = evaluator.resource(spec.root)
    if not fields or evaluator.unresolved:
        raise DerivationError(f"{spec.token}: unresolved {sorted(evaluator.unresolved)} in {spec.files}")
    names = resolve(fields, args_class(spec.token, "pulumi_gcp"))
    if names.unmatched_inputs:
        raise DerivationError(f"{spec.token}: no SDK property for {names.unmatched_inputs}")
    conditional = {}
    for tf_path, condition in _conditional(texts[spec.files[0]]).items():
        key = tuple(part for part in tf_path.split(".") if not part.isdigit())
        if key in names.paths:
            conditional[names.paths[key]] = condition
    forced = set(iter_force_new(fields, names))
    entry: dict[str, Any] = {"terraform": spec.terraform, "forceNew": sorted({path for path, _ in forced})}
    below = sorted(path for path, whole in forced if whole)
    if below:
        entry["forceNewBelow"] = below
    if conditional:
        entry["conditional"] = dict(sorted(conditional.items()))
    if names.sdk_only:
        entry["sdkOnly"] = sorted(names.sdk_only)
    return entry


def google(git_dir: Path, tag: str, types: Sequence[GoogleType]) -> dict[str, Any]:
    """A section of ``force_new.json`` for ``types`` from a mirror of the provider at ``tag``."""
    paths = sorted({path for spec in types for path in spec.files})
    texts = {path: git_show(git_dir, tag, path) for path in (*paths, UTILS_FILE)}
    sdk = f"pulumi-gcp {metadata.version('pulumi-gcp')}"
    return {
        "repository": REPOSITORY,
        "tag": tag,
        "names": f"Pulumi property names from the {sdk} Python SDK's input types",
        "files": {path: _sha(texts[path]) for path in paths},
        "alsoRead": {UTILS_FILE: _sha(texts[UTILS_FILE])},
        "resources": {spec.token: google_type(spec, texts) for spec in sorted(types, key=lambda s: s.token)},
    }


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def kubernetes(module: Path) -> dict[str, Any]:
    texts, shas = pulumi_rules.read(module, pulumi_rules.KUBERNETES_FILES)
    return {
        "module": f"github.com/pulumi/pulumi-kubernetes/provider/v4@{module.name.split('@', 1)[-1]}",
        "files": shas,
        **pulumi_rules.kubernetes(texts),
    }


def engine(module: Path) -> dict[str, Any]:
    texts, shas = pulumi_rules.read(module, (pulumi_rules.STEP_GENERATOR_FILE,))
    return {
        "module": f"github.com/pulumi/pulumi/pkg/v3@{module.name.split('@', 1)[-1]}",
        "files": shas,
        **pulumi_rules.engine(texts[pulumi_rules.STEP_GENERATOR_FILE]),
    }


def load() -> dict[str, Any]:
    """The committed derivation (package data)."""
    text = resources.files("tpu_platform.plan").joinpath("data", DATA_FILE).read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git-dir", type=Path, help="bare clone of terraform-provider-google")
    parser.add_argument("--tag", help="the provider tag (see the note in force_new.json)")
    parser.add_argument(
        "--kubernetes-module", type=Path, help="pulumi-kubernetes' provider/v4 Go module folder"
    )
    parser.add_argument("--engine-module", type=Path, help="pulumi/pulumi's pkg/v3 Go module folder")
    parser.add_argument(
        "--docker-build-source", type=Path, help="pulumi-docker-build provider/internal/image.go"
    )
    parser.add_argument("--docker-build-commit", help="the pulumi-docker-build commit that file is from")
    parser.add_argument("--write", action="store_true", help="update tpu_platform/plan/data/force_new.json")
    args = parser.parse_args(argv)
    current = load()
    if args.git_dir and args.tag:
        for key, types in (("gke", GKE_TYPES), ("google", GOOGLE_TYPES)):
            note = current.get(key, {}).get("note")
            current[key] = google(args.git_dir, args.tag, types)
            if note:
                current[key]["note"] = (
                    note  # the reviewer's reasoning for the tag, kept across re-derivations
                )
    if args.kubernetes_module:
        kept = {k: v for k, v in current.get("kubernetes", {}).items() if k in ("repository", "tag", "note")}
        current["kubernetes"] = {**kubernetes(args.kubernetes_module), **kept}
    if args.engine_module:
        current["engine"] = engine(args.engine_module)
    if args.docker_build_source:
        old = current.get("dockerBuild", {})
        current["dockerBuild"] = {
            "repository": "pulumi/pulumi-docker-build",
            "path": "provider/internal/image.go",
            **{k: v for k, v in old.items() if k == "note"},
            "commit": args.docker_build_commit or old.get("commit"),
            "resources": {
                "docker-build:index:Image": pulumi_rules.docker_build_image(
                    args.docker_build_source.read_text()
                )
            },
        }
    current["pins"] = {
        package: metadata.version(package)
        for package in ("pulumi-gcp", "pulumi-kubernetes", "pulumi-docker-build")
    }
    text = json.dumps(current, indent=2, sort_keys=True) + "\n"
    write_or_print(text, DATA_FILE, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
