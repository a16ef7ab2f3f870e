"""``cluster.mode: kubeconfig``: the Kubernetes half on an existing cluster, with no Google resource
and no Google provider call; what it cannot do is an error that says what to set."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tpu_platform.config import StackConfigError
from tpu_platform.plan import harness, load_stack_config, parse_stack_config, stack_file
from tpu_platform.plan.document import normalize

GMP = "kubernetes:monitoring.googleapis.com/v1"


@pytest.fixture
def local() -> dict[str, Any]:
    return load_stack_config(stack_file("local"))


def _calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    original = harness.PlatformMocks.call

    def recording(self: harness.PlatformMocks, args: Any) -> Any:
        seen.append(args.token)
        return original(self, args)

    monkeypatch.setattr(harness.PlatformMocks, "call", recording)
    return seen


def test_the_example_registers_no_google_resource_and_calls_no_google_function(
    local: dict[str, Any], render_stack: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _calls(monkeypatch)
    rendering = render_stack(local, name="local")
    types = {r.type for r in rendering.resources}
    assert not [t for t in types if t.startswith(("gcp:", "docker-build:"))], sorted(types)
    assert not [t for t in types if t.startswith(GMP)], "the cluster may not run Managed Prometheus"
    assert calls == []
    (provider,) = [r for r in rendering.resources if r.type == "pulumi:providers:kubernetes"]
    assert normalize(provider.inputs)["context"] == "tpu-local"
    kinds = {t.split(":")[-1] for t in types}
    assert {"ClusterQueue", "LocalQueue", "Deployment", "ValidatingAdmissionPolicy", "NetworkPolicy"} <= kinds
    assert rendering.outputs["kubeconfigContext"] == "tpu-local"
    assert "controlPlaneServer" not in rendering.outputs


def test_managed_prometheus_can_be_turned_on_and_still_no_google_resource(
    local: dict[str, Any], render_stack: Callable[..., Any]
) -> None:
    local["tpu-platform:monitoring"] = {"managedPrometheus": True}
    types = {r.type for r in render_stack(local, name="local").resources}
    assert f"{GMP}:PodMonitoring" in types and f"{GMP}:Rules" in types
    assert not [t for t in types if t.startswith("gcp:")]


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (lambda s: s["tpu-platform:hotswap"].pop("image"), "tpu-platform:hotswap.image", "builds no image"),
        (
            lambda s: s["tpu-platform:hotswap"].update(computeCorroboration=True),
            "tpu-platform:hotswap.computeCorroboration",
            "set hotswap.computeCorroboration: false",
        ),
        (
            lambda s: s.update({"tpu-platform:monitoring": {"dashboard": True}}),
            "tpu-platform:monitoring.dashboard",
            "Google resource",
        ),
        (
            lambda s: s["tpu-platform:cluster"].update(privateNodes=True),
            "tpu-platform:cluster.privateNodes",
            "remove it with mode: kubeconfig",
        ),
        (
            lambda s: s["tpu-platform:cluster"].update(location="us-east5"),
            "tpu-platform:cluster.location",
            "through its kubeconfig and context",
        ),
    ],
    ids=["image", "corroboration", "dashboard", "creation-only", "location"],
)
def test_what_the_mode_cannot_do_is_an_error_naming_the_fix(
    local: dict[str, Any], change: Callable[[dict[str, Any]], object], path: str, words: str
) -> None:
    stack = copy.deepcopy(local)
    change(stack)
    with pytest.raises(StackConfigError) as err:
        parse_stack_config(stack)
    assert any(p.startswith(f"{path}: ") and words in p for p in err.value.problems), err.value.problems


def test_kubeconfig_and_context_belong_to_the_mode(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"]["context"] = "other"
    with pytest.raises(StackConfigError) as err:
        parse_stack_config(stack)
    assert err.value.problems == [
        "tpu-platform:cluster.context: only applies with mode: kubeconfig; remove it, or set mode: "
        "kubeconfig to run only the Kubernetes half on an existing cluster"
    ]


@pytest.mark.parametrize(
    ("kubeconfig", "secret"),
    [
        ("apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user: {token: abc}\n", True),
        ('{"apiVersion": "v1", "kind": "Config"}', True),
        ("/home/me/.kube/config", False),
    ],
    ids=["yaml-contents", "json-contents", "path"],
)
def test_kubeconfig_contents_are_a_secret_and_a_path_is_not(
    local: dict[str, Any], render_stack: Callable[..., Any], kubeconfig: str, secret: bool
) -> None:
    local["tpu-platform:cluster"]["kubeconfig"] = kubeconfig
    (provider,) = [
        r for r in render_stack(local, name="local").resources if r.type == "pulumi:providers:kubernetes"
    ]
    assert normalize(provider.inputs)["kubeconfig"] == ("[secret]" if secret else kubeconfig)


def test_a_chart_folder_of_another_version_is_an_error_naming_the_key(
    local: dict[str, Any], render_stack: Callable[..., Any], tmp_path: Any
) -> None:
    (tmp_path / "Chart.yaml").write_text("name: kueue\nversion: 0.18.0\n")
    local["tpu-platform:kueue"]["controller"] = {"chart": str(tmp_path)}
    words = r"kueue\.controller\.chart: .* is kueue 0\.18\.0, the platform pins 0\.19\.2"
    with pytest.raises(Exception, match=words):
        render_stack(local, name="local")
