"""Every kind of write the hotswap controller makes, accepted by the real API server as the controller.

The double in ``tests/kubeapi`` checks Events and patches by our reading of the API server's
validation; here the real one judges the bodies the adapter builds (``adapter/applier.py``),
sent with the controller's own ServiceAccount token and the plan's RBAC.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.live.cluster import Kube, LiveCluster
from tests.live.cluster.addons import service_account_token
from tests.live.cluster.figures import Report
from tpu_platform.hotswap.adapter.applier import event_body
from tpu_platform.hotswap.core.actions import EmitEvent


@pytest.fixture(scope="module")
def controller(dev: LiveCluster) -> Iterator[Kube]:
    token = service_account_token(dev.admin, "tpu-hotswap", "hotswap-controller")
    kube = Kube(dev.cp.token_kubeconfig("writes-controller", token), field_manager="hotswap")
    yield kube
    kube.close()


def test_the_controllers_events_are_accepted(dev: LiveCluster, controller: Kube, report: Report) -> None:
    assert dev.current is not None
    node = dev.current.pools[0].node_names()[0]
    node_uid = dev.admin.get("v1", "Node", node)["metadata"]["uid"]
    events = [
        EmitEvent(
            "Node",
            "",
            node,
            node_uid,
            "Warning",
            "HotswapPoolUnhealthy",
            "pool dev-4x4-0 is unhealthy",
            "Taint",
        ),
        EmitEvent(
            "JobSet",
            "research",
            "train",
            "0b5c2f8e-1111-4c1a-9c0e-3f4e5d6a7b8c",
            "Normal",
            "HotswapFailFast",
            "m",
        ),
    ]
    for action in events:
        namespace, body = event_body(
            action, identity="hotswap-live-0", now=time.time(), node_namespace="default"
        )
        path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
        created = controller.request("POST", path, body)
        assert created["reason"] == action.reason
    report.append(
        f"controller writes: {len(events)} of {len(events)} Event bodies accepted by the API server"
    )
