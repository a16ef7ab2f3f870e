"""kwok as a local process: upstream's own Stage definitions, nodes chosen by annotation.

The stages are read unmodified from ``../shared/upstream/kwok-v0.8.0/kustomize/stage/`` (each
kustomization's resources, in order): ``node/fast`` initialises a node, ``node/heartbeat-with-lease``
keeps its status fresh while kwok renews its Lease, and ``pod/fast`` runs and deletes pods (its
``pod-complete`` Stage is left out: a trainer runs until it fails or is deleted); ``pod/chaos``
fails a pod's container with the message its annotations give (a trainer that exits with the TPU
runtime's error). The standalone binary exits with "no stages found"
without them, so they go in ``--config`` with the KwokConfiguration (kwok v0.8.0 ``pkg/config``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .charts import UPSTREAM
from .controlplane import ControlPlane
from .nodes import KWOK_ANNOTATION, MANAGED
from .process import Process, free_port, https_ok

STAGE_ROOT = UPSTREAM / "kwok-v0.8.0" / "kustomize" / "stage"
DEFAULT_STAGES = ("node/fast", "node/heartbeat-with-lease", "pod/fast", "pod/chaos")
# pod/fast's pod-complete finishes every Job's pod as soon as it runs; a training Job runs until it
# fails or is deleted, so the tier leaves that one Stage out.
LEFT_OUT = {"pod-complete"}


def stage_documents(stage_dirs: tuple[str, ...] = DEFAULT_STAGES) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for folder in stage_dirs:
        path = STAGE_ROOT / folder
        if (path / "kustomization.yaml").is_file():
            files = yaml.safe_load((path / "kustomization.yaml").read_text()).get("resources", [])
        else:  # the chaos folders have no kustomization: every Stage file in them
            files = sorted(p.name for p in path.glob("*.yaml"))
        for resource in files:
            docs.extend(
                d
                for d in yaml.safe_load_all((path / resource).read_text())
                if d and d.get("metadata", {}).get("name") not in LEFT_OUT
            )
    return docs


def kwok_configuration(lease_seconds: int = 40) -> dict[str, Any]:
    """Nodes annotated ``kwok.x-k8s.io/node=fake`` only; 40 s Leases as the kubelet's default."""
    return {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokConfiguration",
        "options": {
            "manageNodesWithAnnotationSelector": f"{KWOK_ANNOTATION}={MANAGED}",
            "nodeLeaseDurationSeconds": lease_seconds,
            "cidr": "10.64.0.0/16",
            "nodeIP": "10.128.0.10",
            # kwok's own defaults (pkg/apis/config/v1alpha1 zz_generated.defaults.go), which the
            # standalone binary does not apply to a --config file.
            "podPlayStageParallelism": 4,
            "nodePlayStageParallelism": 4,
            "nodeLeaseParallelism": 4,
            "podsOnNodeSyncParallelism": 1,
        },
    }


def start_kwok(cp: ControlPlane, binary: Path, extra_stages: list[dict[str, Any]] | None = None) -> Process:
    config = cp.workdir / "kwok.yaml"
    docs = [kwok_configuration(), *stage_documents(), *(extra_stages or [])]
    config.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    port = free_port()
    proc = Process(
        "kwok",
        [
            str(binary),
            f"--kubeconfig={cp.admin_kubeconfig}",
            f"--config={config}",
            f"--server-address=127.0.0.1:{port}",
            "--v=INFO",
        ],
        cp.workdir / "logs" / "kwok.log",
    )
    cp.group.add(proc).start().wait_ready(https_ok(f"http://127.0.0.1:{port}/healthz"), 60)
    return proc
