"""A ``cluster.mode: kubeconfig`` stack's kubeconfig, checked by ``validate`` as the Kubernetes provider
will read it: the file exists and is a kubeconfig, and holds the context; ``plan`` renders without it
and says what ``pulumi up`` will need. Each problem is one line with its field path and the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tpu_platform import cli
from tpu_platform.config import ClusterConfig
from tpu_platform.config.checks.kubeconfig_file import (
    kubeconfig_problems,
    kubeconfig_source,
    parse_kubeconfig,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCAL = (REPO_ROOT / "stacks" / "Pulumi.local.yaml").read_text()
HOME = Path("/home/me")
ROOT = Path("/work/project")


def kubeconfig_text(*contexts: str, current: str | None = None) -> str:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://203.0.113.1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": name, "context": {"cluster": "c", "user": "u"}} for name in contexts],
    }
    if current is not None:
        doc["current-context"] = current
    return yaml.safe_dump(doc)


def cluster(kubeconfig: str | None = None, context: str | None = "tpu-local") -> ClusterConfig:
    return ClusterConfig(name="tpu-local", mode="kubeconfig", kubeconfig=kubeconfig, context=context)


def lines(config: ClusterConfig, files: dict[Path, str | OSError], env: str | None = None) -> list[str]:
    source = kubeconfig_source(config.kubeconfig, env=env, home=HOME, root=ROOT)
    return kubeconfig_problems(config, source, files).lines


def missing(path: Path) -> FileNotFoundError:
    return FileNotFoundError(2, "No such file or directory", str(path))


# -- which files, as the provider and client-go read them ----------------------------------------


def test_a_path_expands_the_home_folder_and_a_relative_one_is_the_project_folders() -> None:
    assert kubeconfig_source("~/.kube/tpu", env=None, home=HOME, root=ROOT).paths == (HOME / ".kube/tpu",)
    relative = kubeconfig_source("kube/config.yaml", env="/ignored", home=HOME, root=ROOT)
    assert (relative.paths, relative.explicit, relative.relative_to) == (
        (ROOT / "kube/config.yaml",),
        True,
        ROOT,
    )


def test_unset_reads_kubeconfig_from_the_environment_each_file_once_else_the_home_file() -> None:
    listed = kubeconfig_source(None, env=os.pathsep.join(["/a", "", "/b", "/a", "rel"]), home=HOME, root=ROOT)
    assert (listed.paths, listed.explicit) == ((Path("/a"), Path("/b"), ROOT / "rel"), False)
    assert kubeconfig_source(None, env="", home=HOME, root=ROOT).paths == (HOME / ".kube" / "config",)


def test_contents_are_no_path() -> None:
    text = kubeconfig_text("tpu-local")
    assert kubeconfig_source(text, env="/a", home=HOME, root=ROOT).contents == text
    assert lines(cluster(text), {}) == []


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a: [", "not valid YAML at line 1"),
        ("- just\n- a list\n", "not a mapping with contexts:"),
        ("apiVersion: v1\nkind: Config\n", "it holds no contexts: list"),
        ("contexts:\n- context: {}\n", "a context in its contexts: list has no name"),
    ],
)
def test_what_is_no_kubeconfig(text: str, why: str) -> None:
    assert parse_kubeconfig(text) == why


# -- the problems ----------------------------------------------------------------------------------


def test_a_named_file_that_does_not_exist() -> None:
    path = HOME / ".kube" / "tpu"
    assert lines(cluster("~/.kube/tpu"), {path: missing(path)}) == [
        f"tpu-platform:cluster.kubeconfig: no kubeconfig file at {path} (~/.kube/tpu); write it (gcloud "
        "container clusters get-credentials, kind export kubeconfig or your cluster tool's own), or fix the "
        "path"
    ]


def test_a_relative_path_says_where_it_is_read_from() -> None:
    path = ROOT / "kube.yaml"
    (line,) = lines(cluster("kube.yaml"), {path: missing(path)})
    assert line.startswith(
        f"tpu-platform:cluster.kubeconfig: no kubeconfig file at {path} ('kube.yaml' is read from the "
        "project folder, where Pulumi runs the program); "
    )


def test_an_unreadable_file_and_a_file_that_is_no_kubeconfig() -> None:
    path = Path("/etc/kube")
    assert lines(cluster(str(path)), {path: PermissionError(13, "Permission denied")}) == [
        "tpu-platform:cluster.kubeconfig: cannot read /etc/kube: Permission denied; make it readable or "
        "name another file"
    ]
    assert lines(cluster(str(path)), {path: "kind: Config\n"}) == [
        "tpu-platform:cluster.kubeconfig: /etc/kube is not a kubeconfig: it holds no contexts: list; name a "
        "kubeconfig file"
    ]


def test_a_context_the_file_does_not_hold_offers_the_closest() -> None:
    path = Path("/k")
    assert lines(cluster(str(path), "tpu-locl"), {path: kubeconfig_text("tpu-local", "kind-dev")}) == [
        "tpu-platform:cluster.context: no context 'tpu-locl' in /k (did you mean 'tpu-local'?); contexts "
        "there: tpu-local, kind-dev; set context to one of them or add it to the file"
    ]


def test_unset_context_is_the_current_context_which_must_be_one_of_the_files() -> None:
    path = Path("/k")
    assert lines(cluster(str(path), None), {path: kubeconfig_text("a", current="a")}) == []
    assert lines(cluster(str(path), None), {path: kubeconfig_text("a", "b")}) == [
        "tpu-platform:cluster.context: unset, and /k sets no current-context; set context to one of a, b"
    ]
    assert lines(cluster(str(path), None), {path: kubeconfig_text("a", current="gone")}) == [
        "tpu-platform:cluster.context: unset, and the current-context 'gone' of /k is none of its contexts "
        "(a); set context to one of them"
    ]


def test_the_environments_files_merge_and_the_missing_ones_are_skipped() -> None:
    """client-go: a context from the first file that names it, the current context from the first file
    that sets one; a missing file of $KUBECONFIG is skipped, none at all is a problem."""
    a, b, gone = Path("/a"), Path("/b"), Path("/gone")
    files: dict[Path, str | OSError] = {
        a: kubeconfig_text("one"),
        b: kubeconfig_text("tpu-local", current="tpu-local"),
        gone: missing(gone),
    }
    env = os.pathsep.join(["/gone", "/a", "/b"])
    assert lines(cluster(None, None), files, env) == []
    assert lines(cluster(None, "tpu-local"), files, env) == []
    (line,) = lines(cluster(None, "two"), files, env)
    assert line.startswith(f"tpu-platform:cluster.context: no context 'two' in $KUBECONFIG ({env}); ")
    assert lines(cluster(None), {gone: missing(gone)}, "/gone") == [
        "tpu-platform:cluster.kubeconfig: unset, so the Kubernetes provider reads $KUBECONFIG (/gone), and "
        "it does not exist; write it (gcloud container clusters get-credentials, kind export kubeconfig or "
        "your cluster tool's own), and set cluster.kubeconfig to its path or point $KUBECONFIG at it"
    ]
    default = HOME / ".kube" / "config"
    (line,) = lines(cluster(None), {default: missing(default)})
    assert line.startswith(
        f"tpu-platform:cluster.kubeconfig: unset, so the Kubernetes provider reads {default} ($KUBECONFIG is "
        "unset), and it does not exist; "
    )


def test_only_kubeconfig_mode_is_checked() -> None:
    adopted = ClusterConfig(name="tpu", mode="adopt", location="us-east5")
    source = kubeconfig_source(None, env=None, home=HOME, root=ROOT)
    assert kubeconfig_problems(adopted, source, {}).lines == []


# -- through the CLI ---------------------------------------------------------------------------------


@pytest.fixture
def kube_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No kubeconfig anywhere: an empty home and no $KUBECONFIG."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    return home


def _local_copy(tmp_path: Path, old: str = "", new: str = "") -> Path:
    path = tmp_path / "Pulumi.kube.yaml"
    assert old in LOCAL
    path.write_text(LOCAL.replace(old, new, 1))
    return path


def test_validate_checks_the_file_and_the_context(
    tmp_path: Path, kube_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = _local_copy(tmp_path)
    assert cli.main(["validate", str(stack)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"stack kube: {stack}: tpu-platform:cluster.kubeconfig: unset, so the Kubernetes provider reads "
        f"{kube_env}/.kube/config ($KUBECONFIG is unset), and it does not exist; "
    )
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_text("tpu-locall", "kind-x"))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    assert cli.main(["validate", str(stack)]) == 2
    assert capsys.readouterr().err == (
        f"stack kube: {stack}: tpu-platform:cluster.context: no context 'tpu-local' in $KUBECONFIG "
        f"({kubeconfig}) (did you mean 'tpu-locall'?); contexts there: tpu-locall, kind-x; set context to "
        "one of them or add it to the file\n"
    )
    kubeconfig.write_text(kubeconfig_text("tpu-local"))
    assert cli.main(["validate", str(stack)]) == 0
    assert capsys.readouterr().out.startswith("stack kube: ok")


def test_validate_lists_the_kubeconfig_with_the_stacks_other_problems(
    tmp_path: Path, kube_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = _local_copy(
        tmp_path, "    context: tpu-local\n", "    context: tpu-local\n    kubeconfig: ~/kc\n"
    )
    stack.write_text(stack.read_text().replace("      topology: 4x4\n", "      topology: 4x3\n", 1))
    assert cli.main(["validate", str(stack)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert any("tpu-platform:slicePools[0].topology" in line for line in lines)
    assert lines[-1] == (
        f"stack kube: {stack}: tpu-platform:cluster.kubeconfig: no kubeconfig file at {kube_env}/kc (~/kc); "
        "write it (gcloud container clusters get-credentials, kind export kubeconfig or your cluster tool's "
        "own), or fix the path"
    )


def test_plan_renders_without_the_file_and_says_so(
    tmp_path: Path, kube_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The committed plan of ``local`` is made where no kubeconfig exists (CI): plan warns, validate errs."""
    stack = _local_copy(tmp_path)
    plans = tmp_path / "plans"
    argv = ["plan", str(stack), "--stacks-dir", str(tmp_path), "--plans-dir", str(plans)]
    assert cli.main(argv) == 0
    (warning,) = capsys.readouterr().err.splitlines()
    assert warning.startswith(
        "stack kube: warning: tpu-platform:cluster.kubeconfig: unset, so the Kubernetes "
    )
    assert warning.endswith("(the offline plan is made without it; pulumi up needs it)")
    assert (plans / "kube.yaml").is_file()
