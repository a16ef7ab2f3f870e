"""``runtime.compute_endpoint``: validated naming the field, read from the ConfigMap's ``runtime``
section, rendered only when set, and honoured by Google's real clients (both of them), with
Application Default Credentials from a metadata server, here the live tier's loopback double."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.auth.credentials import AnonymousCredentials
from google.cloud import compute_v1

from tests.live.cluster.compute_double import ComputeDouble
from tpu_platform.hotswap import deploy
from tpu_platform.hotswap.adapter.compute import InstanceReader
from tpu_platform.hotswap.adapter.config import RuntimeConfig, config_from_mapping, load_config
from tpu_platform.hotswap.core import SettingsError

ROOT = Path(__file__).resolve().parents[2]
VM = "gce://my-tpu-project-dev/us-east5-b/gke-dev-4x4-0-{:02d}"


@pytest.fixture
def double() -> Iterator[ComputeDouble]:
    d = ComputeDouble().start()
    yield d
    d.stop()


@pytest.mark.parametrize(
    "endpoint",
    [
        "",
        "compute.googleapis.com",
        "https://compute-psc1.p.googleapis.com",
        "https://10.1.2.3:443",
        "http://127.0.0.1:8089",
        "http://127.8.9.1:5",
        "http://localhost:1",
        "http://[::1]:8080",
    ],
)
def test_endpoints_the_client_library_takes_as_they_are(endpoint: str) -> None:
    assert RuntimeConfig(compute_endpoint=endpoint).compute_endpoint == endpoint


@pytest.mark.parametrize(
    "endpoint",
    [
        "ftp://compute.example.com",
        "HTTPS://compute.example.com",
        "https://compute.example.com/compute/v1",
        "https://compute.example.com/",
        "https://compute.example.com?alt=json",
        "https://user@compute.example.com",
        " https://compute.example.com",
        "https://",
        "https://compute.example.com:0",
        "https://compute.example.com:70000",
        "http://compute.example.com",
        "http://10.0.0.1:80",
        7,
    ],
)
def test_bad_endpoints_are_refused_naming_the_field(endpoint: Any) -> None:
    with pytest.raises(SettingsError) as err:
        config_from_mapping({"runtime": {"compute_endpoint": endpoint}})
    assert err.value.field == "runtime.compute_endpoint"


def test_the_config_file_carries_it_and_the_stack_renders_it_only_when_set(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "compute_corroboration: true\nruntime:\n  compute_endpoint: https://compute-psc1.p.googleapis.com\n"
    )
    cfg = load_config(path, required=True)
    assert cfg.runtime.compute_endpoint == "https://compute-psc1.p.googleapis.com"
    assert cfg.runtime.to_dict()["compute_endpoint"] == "https://compute-psc1.p.googleapis.com"
    assert "compute_endpoint" not in yaml.safe_load(deploy.config_yaml())["runtime"]
    assert set(yaml.safe_load(deploy.config_yaml())["runtime"]) == set(RuntimeConfig().to_dict()) - {
        "compute_endpoint"
    }
    rendered = yaml.safe_load(deploy.config_yaml(runtime={"compute_endpoint": "http://127.0.0.1:9"}))
    assert rendered["runtime"]["compute_endpoint"] == "http://127.0.0.1:9"
    assert config_from_mapping(rendered).runtime.compute_endpoint == "http://127.0.0.1:9"


READ = """
import json, sys, time
from tpu_platform.hotswap.adapter.compute import google_reader
reader = google_reader(time.time, endpoint=sys.argv[1])
answers = [reader.read(pid) for pid in sys.argv[2:]]
print(json.dumps({
    "answers": [None if a is None else [a.status, a.host_error_at] for a in answers],
    "errors": reader.errors,
}))
"""


def test_googles_clients_read_through_the_endpoint_with_metadata_server_credentials(
    double: ComputeDouble, tmp_path: Path
) -> None:
    """In a process of its own, as the controller runs: google.auth reads ``GCE_METADATA_HOST`` when
    it is imported, and the machine's own gcloud credentials (``CLOUDSDK_CONFIG``) must not count."""
    double.set_status(VM.format(1), "TERMINATED")
    failed_at = time.time() - 5
    double.host_error(VM.format(2), failed_at)
    env = {"PATH": "/usr/bin:/bin", "CLOUDSDK_CONFIG": str(tmp_path), **double.env()}
    pids = [VM.format(i) for i in range(3)]
    out = subprocess.run(
        [sys.executable, "-c", READ, double.url, *pids],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["errors"] == {}, out.stderr
    (running, _), (terminated, _), (host_errored, error_at) = result["answers"]
    assert (running, terminated, host_errored) == ("RUNNING", "TERMINATED", "RUNNING")
    assert error_at == pytest.approx(failed_at, abs=0.001), "insertTime in milliseconds"
    kinds = [c.kind for c in double.calls]
    assert {"ping", "project-id", "service-account", "token"} <= set(kinds), "ADC from the metadata server"
    for pid in pids:
        assert len(double.reads_of(pid)) == 1, "InstancesClient went to the endpoint"
        assert len(double.reads_of(pid, "zoneOperations.list")) == 1, "ZoneOperationsClient too"
    assert all(c.status == 200 for c in double.calls), double.calls


def test_an_unauthenticated_read_is_no_evidence(double: ComputeDouble) -> None:
    """The double checks the metadata server's token as Compute Engine checks a bearer token. A 401
    makes google-auth's ``AuthorizedSession.request`` refresh the credentials and resend
    (``google/auth/transport/requests.py``), which anonymous ones cannot (``InvalidOperation``, a
    ``GoogleAuthError``): the reader reports nothing, never a status."""
    options = {"api_endpoint": double.url}
    reader = InstanceReader(
        compute_v1.InstancesClient(credentials=AnonymousCredentials(), client_options=options),
        compute_v1.ZoneOperationsClient(credentials=AnonymousCredentials(), client_options=options),
        time.time,
    )
    double.set_status(VM.format(0), "TERMINATED")
    assert reader.read(VM.format(0)) is None
    assert reader.errors == {"InvalidOperation": 1}
    assert [(c.kind, c.status) for c in double.calls] == [("instances.get", 401)]
