"""Run a stack's Pulumi program offline, under Pulumi's own mocks, and record every resource.

The recording is what ``pulumi up`` would register: same program, same inputs, same
parents and dependencies. Only provider-computed outputs are faked (deterministically),
so the result can be committed and diffed.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.settings import reset_options
from pulumi.runtime.stack import run_pulumi_func

from ..config.decode import pulumi_text, qualified_config

SECRET_SIG = "4dabf18193072939515e22adb298388d"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
REDACTED = "[secret]"


@dataclass(frozen=True)
class RecordedResource:
    """One registered resource: its type, logical name, parent and plain inputs."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: str | None
    provider: str | None
    dependencies: tuple[str, ...]
    inputs: dict[str, Any] = field(default_factory=dict)
    property_dependencies: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per input: the URNs of the resources whose outputs it takes."""
    options: dict[str, Any] = field(default_factory=dict)
    """The resource options that change how the engine diffs and replaces it (``replaceOnChanges``,
    ``deleteBeforeReplace`` when the program sets it)."""

    @property
    def parent_label(self) -> str | None:
        return urn_label(self.parent) if self.parent else None


def urn_label(urn: str) -> str:
    """``urn:pulumi:s::p::a$b::name`` -> ``b::name``: readable and stable across stacks."""
    qualified_type, name = urn.split("::")[2], urn.split("::", 3)[3]
    return f"{qualified_type.split('$')[-1]}::{name}"


def plain(value: Any) -> Any:
    """Inputs as plain data: secrets redacted, unknowns marked, keys sorted by the dumper."""
    if isinstance(value, Mapping):
        if value.get(SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270":
            return REDACTED
        if value.get(SECRET_SIG) == "5cf8f73096256a8f31e491e813e4eb8e":
            return f"[resource {value.get('urn', '')}]"
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value == UNKNOWN:
        return "[computed]"
    return value


FAKE_CA = "TU9DSy1DQQ=="  # base64("MOCK-CA")
OFFLINE_TOKEN = "b2ZmbGluZS1zZXJ2aWNlLWFjY291bnQtdG9rZW4="  # base64("offline-service-account-token")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


PROJECT_NUMBER = "123456789012"
"""The project number every offline look-up answers (the DNS endpoint's mock carries the same)."""


def _numeric_id(text: str) -> str:
    """A stable 12-digit id, as Resource Manager gives a tag key or value."""
    return str(int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) % 10**12).zfill(12)


class PlatformMocks(pulumi.runtime.Mocks):
    """Deterministic stand-ins for the outputs cloud providers would compute."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict]:
        state = dict(args.inputs)
        if args.typ == "gcp:container/cluster:Cluster":
            state.setdefault("endpoint", "203.0.113.10")
            state["masterAuth"] = {"clusterCaCertificate": FAKE_CA}
            dns = (state.get("controlPlaneEndpointsConfig") or {}).get("dnsEndpointConfig")
            if dns is not None:
                # GKE's DNS endpoint: gke-<hash>-<project number>.<location>.gke.goog
                dns["endpoint"] = f"gke-{_digest(args.name)}-123456789012.{state.get('location')}.gke.goog"
            private = state.get("privateClusterConfig")
            if private is not None:
                private["privateEndpoint"] = "10.128.0.2"
        elif args.typ == "gcp:serviceaccount/account:Account":
            project = state.get("project", "project")
            state["email"] = f"{state.get('accountId')}@{project}.iam.gserviceaccount.com"
            # pulumi-gcp: "The fully-qualified name of the service account", projects/P/serviceAccounts/EMAIL
            state["name"] = f"projects/{project}/serviceAccounts/{state['email']}"
        elif args.typ == "gcp:projects/iAMCustomRole:IAMCustomRole":
            # pulumi-gcp: "The name of the role in the format projects/{{project}}/roles/{{role_id}}"
            state["name"] = f"projects/{state.get('project', 'project')}/roles/{state.get('roleId')}"
        elif args.typ in ("gcp:tags/tagKey:TagKey", "gcp:tags/tagValue:TagValue"):
            # pulumi-gcp: "name - The generated numeric id"; the id is tagKeys/{{name}} or tagValues/{{name}}
            state["name"] = _numeric_id(args.name)
            kind = "tagKeys" if args.typ.endswith("TagKey") else "tagValues"
            return f"{kind}/{state['name']}", state
        elif (
            args.typ == "kubernetes:core/v1:Secret"
            and state.get("type") == "kubernetes.io/service-account-token"
        ):
            # The token controller fills a service-account-token Secret in after creation.
            state["data"] = {"token": OFFLINE_TOKEN, "ca.crt": FAKE_CA}
        elif args.typ == "docker-build:index:Image":
            tag = str((state.get("tags") or ["image"])[0])
            state["ref"] = f"{tag}@sha256:{hashlib.sha256(tag.encode()).hexdigest()}"
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]] | None]:
        if args.token == "gcp:container/getCluster:getCluster":
            return {
                "name": args.args.get("name"),
                "location": args.args.get("location"),
                "endpoint": "203.0.113.20",
                # GKE's NetworkConfig.network: "The relative name of the Google Compute Engine network"
                "network": f"projects/{args.args.get('project')}/global/networks/default",
                "masterAuths": [{"clusterCaCertificate": FAKE_CA}],
                "controlPlaneEndpointsConfigs": [
                    {
                        "dnsEndpointConfigs": [
                            {"endpoint": f"gke-{_digest(str(args.args.get('name')))}.gke.goog"}
                        ]
                    }
                ],
            }, []
        if args.token == "gcp:organizations/getProject:getProject":
            return {"projectId": args.args.get("projectId"), "number": PROJECT_NUMBER}, []
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":
            return {"accessToken": "offline-token", "project": "project", "id": "client"}, []
        raise NotImplementedError(f"no offline stand-in for the function {args.token}")


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A mock monitor that also remembers each registration's parent, provider and dependencies."""

    def __init__(self, mocks: pulumi.runtime.Mocks) -> None:
        super().__init__(mocks)
        self.recorded: list[RecordedResource] = []

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = pulumi.runtime.rpc.deserialize_properties(request.object, keep_unknowns=True)
            self.recorded.append(
                RecordedResource(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    custom=bool(request.custom),
                    parent=request.parent or None,
                    provider=urn_label(request.provider.rsplit("::", 1)[0]) if request.provider else None,
                    dependencies=tuple(sorted(request.dependencies)),
                    inputs=plain(_keep_secrets(request.object, inputs)),
                    property_dependencies={
                        key: tuple(sorted(deps.urns))
                        for key, deps in request.propertyDependencies.items()
                        if deps.urns
                    },
                    options=_options(request),
                )
            )
        return response


def _options(request: Any) -> dict[str, Any]:
    """``replaceOnChanges`` and ``deleteBeforeReplace`` as the program set them (unset: absent)."""
    out: dict[str, Any] = {}
    if request.replaceOnChanges:
        out["replaceOnChanges"] = list(request.replaceOnChanges)
    if request.deleteBeforeReplaceDefined:
        out["deleteBeforeReplace"] = bool(request.deleteBeforeReplace)
    return out


async def _stack_exports() -> dict[str, Any]:
    """Resolve what the program passed to ``pulumi.export``; secrets stay redacted."""
    root = pulumi.runtime.get_root_resource()
    exported: dict[str, Any] = dict(getattr(root, "outputs", {}) or {})
    resolved: dict[str, Any] = {}
    for key, value in sorted(exported.items()):
        output = pulumi.Output.from_input(value)
        resolved[key] = REDACTED if await output.is_secret() else plain(await output.future())
    return resolved


def _keep_secrets(proto: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    """Re-deserialize without unwrapping so secret inputs stay marked as secrets."""
    from google.protobuf import json_format

    raw = json_format.MessageToDict(proto)
    return {key: raw[key] if _has_secret(raw.get(key)) else value for key, value in inputs.items()}


def _has_secret(value: Any) -> bool:
    if isinstance(value, Mapping):
        return value.get(SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270" or any(
            _has_secret(v) for v in value.values()
        )
    if isinstance(value, list):
        return any(_has_secret(v) for v in value)
    return False


@dataclass
class Rendering:
    """The outcome of one offline run: every resource and the stack outputs."""

    resources: list[RecordedResource]
    outputs: dict[str, Any]


def config_values(stack_config: Mapping[str, Any]) -> dict[str, str]:
    """Stack-file values as Pulumi passes them to a program: objects as JSON strings."""
    return {key: pulumi_text(value) for key, value in qualified_config(stack_config).items()}


def render(
    program: Callable[[], object],
    stack_config: Mapping[str, Any],
    *,
    project: str = "tpu-platform",
    stack: str = "dev",
) -> Rendering:
    """Run ``program`` with ``stack_config`` under mocks and return what it registered."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        reset_options(project=project, stack=stack)
        monitor = RecordingMonitor(PlatformMocks())
        pulumi.runtime.set_all_config(config_values(stack_config))
        pulumi.runtime.set_mocks(
            PlatformMocks(), project=project, stack=stack, preview=False, monitor=monitor
        )

        def run() -> None:
            program()

        loop.run_until_complete(run_pulumi_func(run))
        outputs = loop.run_until_complete(_stack_exports())
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    return Rendering(resources=monitor.recorded, outputs=outputs)
