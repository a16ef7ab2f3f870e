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

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pulumi import automation as auto

from . import binaries
from .engine_state import is_chart_child_urn, urn_parts
from .figures import Report

PROJECT = "tpu-platform"
PASSPHRASE = "live-tier-passphrase"  # encrypts this run's throwaway state only


@dataclass(frozen=True)
class Step:
    """One resource step the engine reported: its operation, type, name and parent's type."""

    op: str
    type: str
    name: str
    urn: str
    diffs: tuple[str, ...] = ()


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


def is_chart_child(step: Step) -> bool:
    return is_chart_child_urn(step.urn)


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
