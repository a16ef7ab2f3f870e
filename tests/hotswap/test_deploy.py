"""Deployment data, packaging, the config file and the entrypoint."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tpu_platform.hotswap import deploy
from tpu_platform.hotswap.adapter import jsonlog
from tpu_platform.hotswap.adapter.config import RuntimeConfig, config_from_mapping, load_config
from tpu_platform.hotswap.adapter.main import main, parse_args, resolve_config
from tpu_platform.hotswap.core import Settings, SettingsError

PACKAGE = Path(deploy.__file__).parent
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """main() configures the root logger; put it back for the other tests."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_rbac_is_exactly_the_least_privilege_table() -> None:
    rules = {
        (tuple(r["apiGroups"]), tuple(r["resources"])): set(r["verbs"]) for r in deploy.cluster_role_rules()
    }
    assert rules == {
        (("",), ("nodes",)): {"list", "watch", "patch"},
        (("",), ("pods",)): {"list", "watch", "delete"},
        (("",), ("pods/eviction",)): {"create"},
        (("jobset.x-k8s.io",), ("jobsets",)): {"list", "watch", "patch"},
        (("batch",), ("jobs",)): {"list", "watch"},
        (("events.k8s.io",), ("events",)): {"create"},
    }
    assert deploy.role_rules() == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}
    ]
    everything = json.dumps(deploy.cluster_role_rules() + deploy.role_rules())
    assert "secrets" not in everything and "*" not in everything


def test_constants_match_the_runtime_and_the_image() -> None:
    rt = RuntimeConfig()
    assert (deploy.METRICS_PORT, deploy.HEALTH_PORT) == (rt.metrics_port, rt.health_port) == (8080, 8081)
    assert deploy.CONFIG_DIR + "/" + deploy.CONFIG_FILE == deploy.CONFIG_PATH == "/etc/hotswap/config.yaml"
    assert deploy.CONFIG_ENV == "HOTSWAP_CONFIG"
    dockerfile = (PACKAGE / "Dockerfile").read_text()
    (base,) = re.findall(r"^FROM (\S+)", dockerfile, re.M)
    assert re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", base), "base pinned by digest"
    assert (
        "pip install --no-cache-dir --require-hashes --only-binary=:all: -r /app/requirements.txt"
        in dockerfile
    )
    assert f"USER {deploy.RUN_AS_USER}:{deploy.RUN_AS_USER}" in dockerfile
    assert 'ENTRYPOINT ["python", "-m", "tpu_platform.hotswap"]' in dockerfile
    assert f"EXPOSE {deploy.METRICS_PORT} {deploy.HEALTH_PORT}" in dockerfile
    assert re.findall(r"^COPY (\S+)", dockerfile, re.M) == [
        "tpu_platform/hotswap/requirements.txt",
        "tpu_platform/__init__.py",
        "tpu_platform/hotswap/",
    ]
    assert deploy.SECURITY_CONTEXT["runAsNonRoot"] is True


def test_config_yaml_round_trips_and_validates() -> None:
    text = deploy.config_yaml(Settings(healthy_after_seconds=300), RuntimeConfig(dry_run=True))
    cfg = config_from_mapping(yaml.safe_load(text))
    assert cfg.settings == Settings(healthy_after_seconds=300)
    assert cfg.runtime.dry_run is True
    assert yaml.safe_load(deploy.config_yaml()) == deploy.default_config()
    with pytest.raises(SettingsError) as err:
        config_from_mapping({"healthy_after_seconds": "later"})
    assert err.value.field == "healthy_after_seconds"
    with pytest.raises(SettingsError) as err:
        config_from_mapping({"runtime": {"metrics_port": "x"}})
    assert err.value.field == "runtime.metrics_port"
    with pytest.raises(SettingsError) as err:
        config_from_mapping({"runtime": {"renew_deadline_seconds": 30}})
    assert err.value.field == "runtime.renew_deadline_seconds"
    with pytest.raises(SettingsError) as err:
        config_from_mapping({"runtime": {"dryrun": True}})
    assert err.value.field == "runtime.dryrun"


def test_config_file_and_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("unhealthy_after_seconds: 20s\nruntime:\n  metrics_port: 9100\n")
    monkeypatch.setenv("HOTSWAP_CONFIG", str(path))
    cfg = resolve_config(parse_args(["--dry-run", "--health-port", "9200"]))
    assert cfg.settings.unhealthy_after_seconds == 20.0
    assert (cfg.runtime.metrics_port, cfg.runtime.health_port, cfg.runtime.dry_run) == (9100, 9200, True)
    assert load_config(tmp_path / "absent.yaml", required=False) == config_from_mapping(None)
    with pytest.raises(SettingsError, match="does not exist"):
        load_config(tmp_path / "absent.yaml", required=True)


def test_entrypoint_rejects_bad_config_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("flap_threshold: zero\n")
    assert main(["--config", str(bad)]) == 2
    err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert err["level"] == "error" and err["field"] == "flap_threshold"


def test_check_config_prints_the_effective_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("fail_fast: false\n")
    assert main(["--config", str(good), "--check-config"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["fail_fast"] is False and printed["runtime"]["dry_run"] is False


def test_logs_are_one_json_object_per_line() -> None:
    stream = io.StringIO()
    jsonlog.configure("INFO", stream)
    logging.getLogger("hotswap.test").info("hello", extra={"fields": {"pool": "a", "n": 3}})
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("hotswap.test").exception("failed")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["msg"] == "hello" and first["pool"] == "a" and first["n"] == 3 and first["level"] == "info"
    assert second["level"] == "error" and "ValueError: boom" in second["exc"]


def test_entrypoint_without_a_cluster_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing-kubeconfig"))
    assert main(["--config", str(tmp_path / "none.yaml"), "--kubeconfig", str(tmp_path / "missing")]) == 2
    (tmp_path / "ok.yaml").write_text("{}\n")
    assert main(["--config", str(tmp_path / "ok.yaml"), "--kubeconfig", str(tmp_path / "missing")]) == 1
    last = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert last["msg"] == "no cluster to talk to"


def test_node_lease_rules_only_when_the_lease_signal_is_on() -> None:
    from tpu_platform.hotswap import deploy

    assert deploy.node_lease_role_rules(Settings()) == []
    assert deploy.node_lease_role_rules(Settings(lease_stale_seconds=0)) == []
    assert deploy.node_lease_role_rules(Settings(lease_stale_seconds=20)) == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["list", "watch"]}
    ]
    assert deploy.NODE_LEASE_NAMESPACE == "kube-node-lease"
    assert all("leases" not in r.resources for r in deploy.CLUSTER_RULES)
