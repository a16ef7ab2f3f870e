"""The real Pulumi engine on the live control plane, through the Automation API.

The CLI (``github.com/pulumi/pulumi/pkg/v3``) and the Kubernetes provider
(``github.com/pulumi/pulumi-kubernetes/provider/v4``) are the binaries ``upstream/build.py`` builds
from their Go modules. Nothing is downloaded: the state lives in a local file backend, secrets
are encrypted with a passphrase, the provider is installed as a plugin from its file
(``pulumi plugin install resource kubernetes VERSION --file``) and automatic plugin acquisition
is off (``PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION``), so a missing plugin is an error, never
a download. The program is the project's own ``stack_program`` run inline, as ``pulumi up``
runs ``__main__.py``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from . import addons, binaries, charts
from .figures import Report

PROJECT = "tpu-platform"
PASSPHRASE = "live-tier-passphrase"  # encrypts this run's throwaway state only
CHART_TYPE = "kubernetes:helm.sh/v4:Chart"


@dataclass(frozen=True)
class Step:
    """One resource step the engine reported: its operation, type, name and parent's type."""

    op: str
    type: str
    name: str
    urn: str
    diffs: tuple[str, ...] = ()


def urn_parts(urn: str) -> tuple[str, str]:
    """``urn:pulumi:stack::project::parent$type::name`` -> (type, name)."""
    _, _, qualified, name = urn.split("::", 3)
    return qualified.rsplit("$", 1)[-1], name


@dataclass
class StepLog:
    """Collects the engine's resource steps from an operation's event stream."""

    steps: list[Step] = field(default_factory=list)

    def __call__(self, event: auto.EngineEvent) -> None:
        pre = event.resource_pre_event
        if pre is None:
            return
        meta = pre.metadata
        rtype, name = urn_parts(meta.urn)
        paths = tuple(sorted((meta.detailed_diff or {}).keys())) or tuple(meta.diffs or ())
        self.steps.append(Step(str(meta.op.value), rtype, name, meta.urn, paths))

    def changed(self) -> list[Step]:
        return [s for s in self.steps if s.op not in ("same", "read", "refresh")]


class PulumiEngine:
    """One Pulumi home, backend and project folder for a test; ``stack()`` opens a stack in it."""

    def __init__(self, workdir: Path, cli: Path, provider: Path, provider_version: str) -> None:
        self.workdir = workdir
        self.home = workdir / "pulumi-home"
        self.backend = workdir / "state"
        self.project_dir = workdir / "project"
        for folder in (self.home, self.backend, self.project_dir):
            folder.mkdir(parents=True, exist_ok=True)
        root = workdir / "cli"
        (root / "bin").mkdir(parents=True, exist_ok=True)
        link = root / "bin" / "pulumi"
        if not link.exists():
            link.symlink_to(cli)
        self.root = root
        self.cli = cli
        self.provider_version = provider_version.lstrip("v")
        self.env = {
            "PULUMI_HOME": str(self.home),
            "PULUMI_BACKEND_URL": f"file://{self.backend}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
        }
        self._install_plugin(provider)

    def _install_plugin(self, provider: Path) -> None:
        cmd = [str(self.cli), "plugin", "install", "resource", "kubernetes", self.provider_version]
        out = subprocess.run(
            [*cmd, "--file", str(provider)],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} --file {provider}: {out.stderr.strip() or out.stdout}")

    def plugins(self) -> list[dict[str, Any]]:
        out = subprocess.run(
            [str(self.cli), "plugin", "ls", "--json"],
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            check=True,
        )
        return list(json.loads(out.stdout or "[]"))

    def stack(self, name: str, program: Callable[[], Any], config: dict[str, Any]) -> auto.Stack:
        """Stack ``name`` of the project, its config the stack file's ``config`` mapping as given."""
        (self.project_dir / "Pulumi.yaml").write_text(
            yaml.safe_dump(
                {"name": PROJECT, "runtime": "python", "backend": {"url": f"file://{self.backend}"}}
            )
        )
        opts = auto.LocalWorkspaceOptions(
            work_dir=str(self.project_dir),
            pulumi_home=str(self.home),
            env_vars=dict(self.env),
            secrets_provider="passphrase",
            pulumi_command=auto.PulumiCommand(root=str(self.root)),
        )
        stack = auto.create_or_select_stack(name, project_name=PROJECT, program=program, opts=opts)
        self.write_config(name, config)
        return stack

    def write_config(self, name: str, config: dict[str, Any]) -> None:
        """Replace the stack's config, keeping what ``stack init`` wrote (the encryption salt)."""
        path = self.project_dir / f"Pulumi.{name}.yaml"
        settings = yaml.safe_load(path.read_text()) if path.is_file() else {}
        settings = settings or {}
        settings["config"] = config
        path.write_text(yaml.safe_dump(settings, sort_keys=False))

    def kill_all(self) -> list[int]:
        """SIGKILL every CLI and plugin process of this engine (none outlives the test)."""
        pids = sorted(processes_under(self.home) | processes_under(self.root))
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return pids

    def pending_operations(self, name: str) -> list[dict[str, Any]]:
        state = json.loads(self.state_file(name).read_text())
        return list(state.get("checkpoint", {}).get("latest", {}).get("pending_operations") or [])

    def state_file(self, name: str) -> Path:
        return self.backend / ".pulumi" / "stacks" / PROJECT / f"{name}.json"

    def resources(self, name: str) -> list[dict[str, Any]]:
        """The resources of the stack's last checkpoint, as the state file holds them."""
        state = json.loads(self.state_file(name).read_text())
        return list(state.get("checkpoint", {}).get("latest", {}).get("resources") or [])


@dataclass(frozen=True)
class Binaries:
    cli: Path
    provider: Path
    provider_version: str


def upstream_binaries() -> Binaries:
    """The CLI and the provider from the upstream cache (``./dev upstream`` builds them)."""
    paths, versions = binaries.locate(("pulumi", "pulumi-resource-kubernetes"))
    return Binaries(
        paths["pulumi"], paths["pulumi-resource-kubernetes"], versions["pulumi-resource-kubernetes"]
    )


def chart_inputs(plan: dict[str, Any], release: str) -> dict[str, Any]:
    return addons.chart_inputs_from_plan(plan, release)


class Timer:
    """Each engine operation's wall time, as a line of the live tier's figures."""

    def __init__(self, report: Report) -> None:
        self.report = report

    @contextlib.contextmanager
    def __call__(self, what: str) -> Iterator[TimedStep]:
        step = TimedStep()
        started = time.monotonic()
        yield step
        note = f" ({step.text})" if step.text else ""
        self.report.append(f"engine {what}: {time.monotonic() - started:.1f} s{note}")


@dataclass
class TimedStep:
    text: str = ""

    def note(self, text: str) -> None:
        self.text = text


# --- the state against the offline plan ---------------------------------------------------
NOT_IN_PLAN = ("pulumi:pulumi:Stack", "pulumi:providers:pulumi")


def label(urn: str) -> str:
    rtype, name = urn_parts(urn)
    return f"{rtype}::{name}"


def planned_labels(plan: dict[str, Any]) -> set[str]:
    return {f"{r['type']}::{r['name']}" for r in plan["resources"]}


def is_chart_child_urn(urn: str) -> bool:
    qualified = urn.split("::", 3)[2]
    return CHART_TYPE in qualified.split("$")[:-1]


def is_chart_child(step: Step) -> bool:
    return is_chart_child_urn(step.urn)


def comparable(resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The state's resources the plan shows: all but the stack, default providers and chart children."""
    return [
        r
        for r in resources
        if r["type"] not in NOT_IN_PLAN
        and not is_chart_child_urn(r["urn"])
        and not (r["type"].startswith("pulumi:providers:") and urn_parts(r["urn"])[1].startswith("default"))
    ]


def as_plan_entry(resource: dict[str, Any]) -> dict[str, Any]:
    """A state resource in the plan's words: type, name, parent, provider, dependsOn, inputs."""
    entry: dict[str, Any] = {"type": resource["type"], "name": urn_parts(resource["urn"])[1]}
    if resource.get("parent"):
        entry["parent"] = label(resource["parent"])
    if resource.get("provider"):
        entry["provider"] = label(resource["provider"].rsplit("::", 1)[0])
    deps = sorted(label(d) for d in resource.get("dependencies") or [])
    if deps:
        entry["dependsOn"] = deps
    if resource.get("inputs"):
        inputs = unsecret(resource["inputs"])
        if resource["type"].startswith("pulumi:providers:"):
            inputs = {k: v for k, v in inputs.items() if k not in ENGINE_PROVIDER_INPUTS}
        entry["inputs"] = inputs
    return entry


SECRET_SIG = "4dabf18193072939515e22adb298388d"  # the engine's secret marker (sdk/go/common/resource/sig)
# Inputs the engine adds to every provider resource: the plugin version the SDK asked for and the
# engine's own bookkeeping; the program sets neither.
ENGINE_PROVIDER_INPUTS = ("version", "__internal")


def unsecret(value: Any) -> Any:
    """State secrets as the plan shows them (``[secret]``)."""
    if isinstance(value, dict):
        if SECRET_SIG in value:
            return "[secret]"
        return {k: unsecret(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unsecret(v) for v in value]
    return value


COMPARED = ("type", "name", "parent", "dependsOn", "provider", "inputs")


def plan_mismatches(plan: dict[str, Any], resources: list[dict[str, Any]]) -> list[str]:
    """Where the engine's registered resources and the offline plan disagree, one line each."""
    planned = {f"{r['type']}::{r['name']}": r for r in plan["resources"]}
    state = {f"{e['type']}::{e['name']}": e for e in map(as_plan_entry, comparable(resources))}
    out = [f"registered, not in the plan: {k}" for k in sorted(set(state) - set(planned))]
    out += [f"in the plan, not registered: {k}" for k in sorted(set(planned) - set(state))]
    custom = {label(r["urn"]): bool(r.get("custom")) for r in resources}
    for key in sorted(set(state) & set(planned)):
        # A component's inputs and provider are not kept in the state (a Chart's children are
        # compared with helm's rendering instead).
        fields = COMPARED if custom.get(key) else COMPARED[:4]
        want = {k: planned[key].get(k) for k in fields}
        want["dependsOn"] = sorted(want["dependsOn"] or [])
        for field_name, value in want.items():
            got = state[key].get(field_name) or ([] if field_name == "dependsOn" else None)
            if value != got:
                out.append(f"{key} {field_name}: plan {value!r}, engine {got!r}")
    return out


def chart_children(resources: list[dict[str, Any]]) -> dict[str, set[tuple[str, str]]]:
    """Each Chart's registered children as (kind, namespace/name), by the Chart's resource name."""
    charts_by_urn = {r["urn"]: urn_parts(r["urn"])[1] for r in resources if r["type"] == CHART_TYPE}
    out: dict[str, set[tuple[str, str]]] = {name: set() for name in charts_by_urn.values()}
    for r in resources:
        chart = charts_by_urn.get(r.get("parent", ""))
        if chart is not None:
            inputs = r.get("inputs") or {}
            out[chart].add((str(inputs.get("kind")), _object_name(inputs.get("metadata") or {})))
    return out


def chart_resource_name(plan: dict[str, Any], release: str) -> str:
    """The plan's name of the Chart resource that installs ``release``."""
    for res in plan["resources"]:
        if res["type"] == CHART_TYPE and (res.get("inputs") or {}).get("name") == release:
            return str(res["name"])
    raise KeyError(f"no Chart of release {release!r} in the plan")


def _object_name(meta: dict[str, Any]) -> str:
    return f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else str(meta.get("name"))


def rendered_objects(chart: charts.RenderedChart) -> set[tuple[str, str]]:
    """What ``helm template`` renders for the same chart inputs, as (kind, namespace/name)."""
    return {(str(o["kind"]), _object_name(o.get("metadata") or {})) for o in chart.objects}


PEM_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:\\n|\s)+[A-Za-z0-9+/=]{32}")


def leaked_secrets(text: str, kubeconfig: str) -> list[str]:
    """Credentials of ``kubeconfig`` (client keys, tokens) found as plain text in ``text`` (a
    state file): any 32-character piece of a value, of its decoded PEM body, or any PEM private key
    with a body (a CRD's description may name the header alone)."""
    config = yaml.safe_load(kubeconfig)
    found = []
    for user in config.get("users") or []:
        for key in ("client-key-data", "token"):
            value = str((user.get("user") or {}).get(key) or "")
            if not value:
                continue
            forms = [value]
            if key.endswith("-data"):
                pem = base64.b64decode(value).decode()
                forms.append("".join(line for line in pem.splitlines() if not line.startswith("-----")))
            if any(piece in text for form in forms for piece in _pieces(form)):
                found.append(f"user {user['name']}: {key}")
    if PEM_KEY.search(text):
        found.append("a PEM private key")
    return found


def _pieces(value: str, size: int = 32) -> list[str]:
    return [value[i : i + size] for i in range(0, max(len(value) - size, 0) + 1, size)]


# --- an operation killed mid-way -----------------------------------------------------------
def processes_under(home: Path) -> dict[int, list[str]]:
    """PIDs and command lines of the CLI runs and plugins of this engine (their paths name it)."""
    found: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # ended while we looked
            continue
        words = [a.decode(errors="replace") for a in argv if a]
        if words and str(home) in words[0]:
            found[int(entry.name)] = words
    return found
