"""``hotswap_api_requests_total``: every request of the controller's real client counted by verb,
resource and HTTP status (0 when there is no usable reply), which the API-error alert reads."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubeapi import ApiDouble, Fault, Seeder
from tests.kubeapi.objects import node_obj
from tpu_platform.hotswap.adapter.client import ApiError, Resource
from tpu_platform.hotswap.adapter.kube import KubernetesApi, configure
from tpu_platform.hotswap.adapter.metrics import Metrics


def test_requests_are_counted_by_outcome() -> None:
    metrics = Metrics()
    with ApiDouble() as api:
        Seeder(api).node(node_obj("n-0", "pool-a"))
        cfg = configure(client.Configuration(host=api.url))
        kube = KubernetesApi(client.ApiClient(cfg), observe=metrics.api_request)
        kube.list_objects(Resource("nodes"))
        api.faults.add(Fault(status=500, verbs=("list",), resources=("nodes",)))
        with pytest.raises(ApiError):
            kube.list_objects(Resource("nodes"))
        api.faults.add(Fault(reset=True, verbs=("list",), resources=("nodes",)))
        with pytest.raises(ApiError):
            kube.list_objects(Resource("nodes"))

    def count(code: str) -> float:
        labels = {"verb": "list", "resource": "nodes", "code": code}
        return metrics.value("hotswap_api_requests_total", labels)

    assert (count("200"), count("500"), count("0")) == (1, 1, 1)
