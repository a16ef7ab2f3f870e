"""Build the pinned upstream binaries the live test tier runs, once per machine, into a cache.

Each component is its own small Go module here (``upstream/<component>/go.mod`` and ``go.sum``):
Go's minimal version selection gives one build list per module, so Kueue v0.19.2 (which needs
k8s.io/kubernetes v1.36 as a library) and the v1.34 control plane cannot share one. The version
built is the one the module requires; nothing else pins it. No upstream code lives here: the Go
module proxy serves it and ``go.sum`` checks it.

The cache is ``$TPU_PLATFORM_UPSTREAM_CACHE`` or ``${XDG_CACHE_HOME:-~/.cache}/tpu-platform/upstream``,
one folder per component, version and build recipe (a digest of go.mod, go.sum, the packages, the
linker flags and the Go version), so a changed pin builds anew and an unchanged one is reused.

    python upstream/build.py            # build what is missing, print where each binary is
    python upstream/build.py --print    # print the manifest (JSON) of what is cached, build nothing

Stdlib only: it runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Component:
    """One Go module of ours and the binaries it builds from its single requirement."""

    name: str
    module: str  # the upstream module the wrapper requires (its version is the pin)
    binaries: dict[str, str]  # binary name -> Go package
    ldflags: tuple[str, ...] = ()  # "-X pkg.var={version}" templates
    # A pseudo-version pin names a commit; ``tag`` is the release tag that commit carries
    # (``git describe`` in the upstream repository), what the binary reports as its version.
    tag: tuple[str, str] | None = None  # (commit prefix, tag)
    embeds: tuple[Embed, ...] = ()  # files of the upstream module our main package embeds

    @property
    def folder(self) -> Path:
        return HERE / self.name

    def version(self) -> str:
        text = (self.folder / "go.mod").read_text()
        m = re.search(rf"^\s*(?:require\s+)?{re.escape(self.module)}\s+(v\S+)", text, re.M)
        if m is None:
            raise SystemExit(f"upstream/{self.name}/go.mod: no requirement on {self.module}")
        return m.group(1)

    def release(self) -> str:
        """The version the binary reports: the pin, or the tag of a pseudo-version's commit."""
        version = self.version()
        if self.tag is None:
            return version
        commit, tag = self.tag
        if not version.endswith(f"-{commit}"):
            raise SystemExit(
                f"upstream/{self.name}/go.mod pins {self.module} {version}, but build.py names the tag of "
                f"commit {commit} ({tag}): set Component.tag to the new commit's tag"
            )
        return tag


@dataclass(frozen=True)
class Embed:
    """A JSON file of the upstream module written beside our main package before the build, with
    ``version`` set to the release, as the upstream ``go generate`` step does."""

    source: str  # path inside the module
    target: str  # file name beside main.go (git-ignored)
    set_version: bool = False

    def write(self, module_dir: Path, folder: Path, release: str) -> None:
        data = json.loads((module_dir / self.source).read_text())
        if self.set_version:
            data["version"] = release.lstrip("v")
        (folder / self.target).write_text(json.dumps(data))


_K8S_VERSION = "k8s.io/component-base/version"
COMPONENTS: tuple[Component, ...] = (
    Component("etcd", "go.etcd.io/etcd/server/v3", {"etcd": "go.etcd.io/etcd/server/v3"}),
    Component(
        "kubernetes",
        "k8s.io/kubernetes",
        {
            c: f"k8s.io/kubernetes/cmd/{c}"
            for c in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
        },
        # hack/lib/version.sh sets these; without them the servers report v0.0.0-master.
        (
            f"-X {_K8S_VERSION}.gitVersion={{version}}",
            f"-X {_K8S_VERSION}.gitMajor={{major}}",
            f"-X {_K8S_VERSION}.gitMinor={{minor}}",
            f"-X {_K8S_VERSION}.gitTreeState=clean",
            "-X k8s.io/client-go/pkg/version.gitVersion={version}",
        ),
    ),
    Component("kwok", "sigs.k8s.io/kwok", {"kwok": "sigs.k8s.io/kwok/cmd/kwok"}),
    Component(
        "jobset",
        "sigs.k8s.io/jobset",
        {"jobset": "sigs.k8s.io/jobset"},
        ("-X sigs.k8s.io/jobset/pkg/version.GitVersion={version}",),
    ),
    Component(
        "helm",
        "helm.sh/helm/v3",
        {"helm": "helm.sh/helm/v3/cmd/helm"},
        ("-X helm.sh/helm/v3/internal/version.version={version}",),
    ),
    Component(
        "kueue",
        "sigs.k8s.io/kueue",
        {"kueue": "sigs.k8s.io/kueue/cmd/kueue"},
        ("-X sigs.k8s.io/kueue/pkg/version.GitVersion={version}",),
    ),
    # The older installs xpk and Cluster Toolkit leave on a cluster (tests/live/test_existing_installs.py).
    Component(
        "kueue-0.17",
        "sigs.k8s.io/kueue",
        {"kueue-0.17": "sigs.k8s.io/kueue/cmd/kueue"},
        ("-X sigs.k8s.io/kueue/pkg/version.GitVersion={version}",),
    ),
    Component(
        "jobset-0.10",
        "sigs.k8s.io/jobset",
        {"jobset-0.10": "sigs.k8s.io/jobset"},
        ("-X sigs.k8s.io/jobset/pkg/version.GitVersion={version}",),
    ),
    # The Pulumi CLI (engine and Automation API's command); pkg/cmd/pulumi reads its version there.
    Component(
        "pulumi",
        "github.com/pulumi/pulumi/pkg/v3",
        {"pulumi": "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"},
        ("-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version={version}",),
    ),
    # The Kubernetes provider through a main of ours (upstream's embeds generated schema files).
    Component(
        "pulumi-kubernetes",
        "github.com/pulumi/pulumi-kubernetes/provider/v4",
        {"pulumi-resource-kubernetes": "."},
        ("-X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version={version_bare}",),
        tag=("f47bc2d6f199", "v4.25.0"),
        embeds=(
            Embed("cmd/pulumi-resource-kubernetes/schema.json", "schema-embed.json", set_version=True),
            Embed("cmd/pulumi-resource-kubernetes/terraform-mapping.json", "terraform-mapping-embed.json"),
        ),
    ),
    # The YAML language host, for a Pulumi YAML program using the component package (provider/):
    # v1.38.3, the release pulumi bundles as of the pulumi/pulumi source we can read
    # (scripts/get-language-providers.sh at 3.260.0-dev), the newest the module proxy serves.
    Component(
        "pulumi-yaml",
        "github.com/pulumi/pulumi-yaml",
        {"pulumi-language-yaml": "github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml"},
        ("-X github.com/pulumi/pulumi-yaml/pkg/version.Version={version}",),
    ),
)


def cache_root() -> Path:
    explicit = os.environ.get("TPU_PLATFORM_UPSTREAM_CACHE")
    if explicit:
        return Path(explicit)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tpu-platform" / "upstream"


def go_version(go: str) -> str:
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def ldflags(component: Component) -> str:
    version = component.release()
    major, minor = ([*version.lstrip("v").split("."), "0"])[:2]
    fields = {"version": version, "version_bare": version.lstrip("v"), "major": major, "minor": minor}
    flags = ["-s", "-w"] + [f.format(**fields) for f in component.ldflags]
    return " ".join(flags)


def recipe_digest(component: Component, go_ver: str) -> str:
    h = hashlib.sha256()
    for name in ("go.mod", "go.sum", *sorted(p.name for p in component.folder.glob("*.go"))):
        h.update((component.folder / name).read_bytes())
    h.update(json.dumps([component.binaries, ldflags(component), go_ver]).encode())
    return h.hexdigest()[:12]


def target_dir(component: Component, go_ver: str) -> Path:
    return cache_root() / f"{component.name}-{component.version()}-{recipe_digest(component, go_ver)}"


def is_complete(folder: Path, component: Component) -> bool:
    return (folder / "complete").is_file() and all((folder / b).is_file() for b in component.binaries)


def build(component: Component, go: str, go_ver: str, out: Path) -> None:
    """go build each binary into a temporary folder, then move it into place whole."""
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=readonly -buildvcs=false")
    write_embeds(component, go, env)
    for binary, package in component.binaries.items():
        start = time.monotonic()
        print(f"== building {binary} {component.release()} ({package})", file=sys.stderr, flush=True)
        cmd = [go, "build", "-trimpath", "-ldflags", ldflags(component), "-o", str(tmp / binary), package]
        result = subprocess.run(
            cmd, cwd=component.folder, env=env, stderr=subprocess.PIPE, text=True, check=False
        )
        if result.returncode != 0:
            raise SystemExit(explain_failure(component, binary, result.stderr))
        print(f"   {binary}: {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    (tmp / "complete").write_text(json.dumps({"version": component.release(), "go": go_ver}) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


def write_embeds(component: Component, go: str, env: dict[str, str]) -> None:
    """The upstream module's files our main embeds, from the module cache (``go mod download``)."""
    if not component.embeds:
        return
    out = subprocess.run(
        [go, "mod", "download", "-json", f"{component.module}@{component.version()}"],
        cwd=component.folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(explain_failure(component, "its embedded files", out.stdout + out.stderr))
    module_dir = Path(json.loads(out.stdout)["Dir"])
    for embed in component.embeds:
        embed.write(module_dir, component.folder, component.release())


def explain_failure(component: Component, binary: str, stderr: str) -> str:
    tail = "\n".join(stderr.strip().splitlines()[-15:])
    hint = "read the error above"
    if re.search(r"(403|404|410) |not available|dial tcp|no such host|timeout", stderr):
        hint = (
            "a module could not be downloaded: the Go module proxy ($GOPROXY, "
            f"{os.environ.get('GOPROXY', 'proxy.golang.org')}) must serve every module in "
            f"upstream/{component.name}/go.sum; pin a version it serves in upstream/{component.name}/go.mod "
            "and run `go mod tidy` there"
        )
    elif "missing go.sum entry" in stderr or "updates to go.mod needed" in stderr:
        hint = f"run `go mod tidy` in upstream/{component.name} and commit go.mod and go.sum"
    return f"upstream build of {binary} ({component.module} {component.version()}) failed: {hint}\n{tail}"


def manifest(go_ver: str) -> dict[str, dict[str, str]]:
    """Every binary's path and version, for the harness; a missing one has no path."""
    out: dict[str, dict[str, str]] = {}
    for c in COMPONENTS:
        folder = target_dir(c, go_ver)
        for binary in c.binaries:
            entry = {"version": c.release(), "component": c.name}
            if is_complete(folder, c):
                entry["path"] = str(folder / binary)
            out[binary] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", action="store_true", help="print the manifest of cached binaries as JSON")
    parser.add_argument("--only", nargs="*", default=None, help="components to build (default: all)")
    args = parser.parse_args(argv)
    go = shutil.which("go")
    if go is None:
        raise SystemExit(
            "upstream build: `go` is not on PATH; install Go 1.26 (https://go.dev/doc/install or Debian's "
            "golang package of that version) and run `./dev upstream` again"
        )
    go_ver = go_version(go)
    if not args.print:
        wanted = [c for c in COMPONENTS if args.only is None or c.name in args.only]
        started = time.monotonic()
        for i, c in enumerate(wanted, 1):
            folder = target_dir(c, go_ver)
            if is_complete(folder, c):
                print(f"== [{i}/{len(wanted)}] {c.name} {c.version()}: cached", file=sys.stderr)
                continue
            print(f"== [{i}/{len(wanted)}] {c.name} {c.version()}: building into {folder}", file=sys.stderr)
            build(c, go, go_ver, folder)
        print(f"== upstream binaries ready in {time.monotonic() - started:.0f} s", file=sys.stderr)
    json.dump(manifest(go_ver), sys.stdout, indent=2, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
