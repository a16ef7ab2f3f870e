"""Every stack validation rule: the error names the config path and says how to fix it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.config.stack_problems import only_problem, problems_of
from tpu_platform.config import StackConfigError
from tpu_platform.plan import parse_stack_config


def test_minimal_stack_is_valid(stack: dict[str, Any]) -> None:
    cfg = parse_stack_config(stack)
    assert cfg.cluster.name == "tpu-test"
    assert cfg.cluster_location == "us-east5"
    assert [p.pool_names() for p in cfg.slice_pools] == [["train-0", "train-1"]]


def test_unknown_top_level_key(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePool"] = []
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePool: unknown stack key")
    assert "slicePools" in message


def test_unknown_nested_key_lists_valid_keys(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["capacity"] = {"type": "spot", "spotty": True}
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].capacity.spotty: unknown key")
    assert "valid keys here: maxRunDuration, reservation, reservationProject, type" in message


def test_missing_required(stack: dict[str, Any]) -> None:
    del stack["gcp:zone"]
    assert only_problem(stack) == "gcp:zone: required; add it to the stack file"


def test_all_problems_reported_at_once(stack: dict[str, Any]) -> None:
    stack["gcp:zone"] = "europe-west4-a"
    stack["tpu-platform:slicePools"].append({"name": "train-0", "topology": "3x3"})
    problems = problems_of(stack)
    assert len(problems) == 3
    assert any(p.startswith("gcp:zone:") for p in problems)
    assert any(p.startswith("tpu-platform:slicePools[1].topology:") for p in problems)
    assert any(p.startswith("tpu-platform:slicePools[1].name:") for p in problems)


@pytest.mark.parametrize(
    ("zone", "ok"),
    [("us-east5-b", True), ("us-east5-a", True), ("us-east1-d", False), ("us-east5", False)],
)
def test_zone_must_be_in_region(stack: dict[str, Any], zone: str, ok: bool) -> None:
    stack["gcp:zone"] = zone
    if ok:
        parse_stack_config(stack)
    else:
        message = only_problem(stack)
        assert message.startswith("gcp:zone:") and "not in region 'us-east5'" in message


def test_region_name(stack: dict[str, Any]) -> None:
    stack["gcp:region"] = "useast5"
    assert any(p.startswith("gcp:region:") for p in problems_of(stack))


def test_pool_zone_outside_region(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["zone"] = "europe-west4-a"
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].zone:")
    assert "COMPACT placement" in message


def test_pool_zone_must_match_zonal_cluster(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"]["location"] = "us-east5-a"
    stack["tpu-platform:slicePools"][0]["zone"] = "us-east5-b"
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].zone:") and "zonal" in message


def test_cluster_location_outside_region(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"]["location"] = "us-central1"
    assert only_problem(stack).startswith("tpu-platform:cluster.location:")


@pytest.mark.parametrize("name", ["Train", "1train", "train-", "a" * 37, "tr_ain"])
def test_pool_names_gke_accepts(stack: dict[str, Any], name: str) -> None:
    stack["tpu-platform:slicePools"][0]["name"] = name
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].name:")
    assert "lowercase letters, digits and dashes" in message


def test_cluster_name_gke_accepts(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"]["name"] = "TPU"
    assert only_problem(stack).startswith("tpu-platform:cluster.name:")


def test_expanded_pool_names_collide(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"].append({"name": "train-1", "topology": "4x4"})
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[1].name:")
    assert "'train-1' is also created by slicePools[0]" in message


def test_system_pool_name_reserved(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0] = {"name": "system", "topology": "2x2"}
    assert "reserved for the system node pool" in only_problem(stack)


def test_unsupported_topology_lists_valid(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["topology"] = "8x4"
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].topology:")
    assert "16x16 (256 chips, 64 x ct6e-standard-4t)" in message


def test_multi_host_only_for_2x4(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["multiHost"] = True
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].multiHost:")
    assert "only 2x4 has two forms" in message


def test_reservation_needs_name(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["capacity"] = {"type": "reservation"}
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].capacity.reservation:")
    assert "SPECIFIC_RESERVATION" in message


@pytest.mark.parametrize("kind", ["spot", "flexStart", "queuedProvisioning"])
def test_reservation_with_other_capacity(stack: dict[str, Any], kind: str) -> None:
    stack["tpu-platform:slicePools"][0]["capacity"] = {"type": kind, "reservation": "r1"}
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].capacity.reservation:")
    assert "NO_RESERVATION" in message and "type: reservation" in message


def test_unknown_capacity_type(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["capacity"] = {"type": "preemptible"}
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].capacity.type:")
    assert "'spot'" in message and "'flexStart'" in message


def test_max_run_duration_only_for_flex_start(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["capacity"] = {"type": "spot", "maxRunDuration": "3600s"}
    assert only_problem(stack).startswith("tpu-platform:slicePools[0].capacity.maxRunDuration:")


def test_max_run_duration_format(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["capacity"] = {"type": "flexStart", "maxRunDuration": "1h"}
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].capacity.maxRunDuration:")
    assert "'86400s'" in message


def test_flex_start_rejects_auto_repair(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0].update(capacity={"type": "flexStart"}, autoRepair=True)
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].autoRepair:")
    assert "flex-start" in message


def test_auto_repair_required_elsewhere(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["autoRepair"] = False
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].autoRepair:")
    assert "only flex-start" in message


def test_tpu_needs_recent_gke(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"]["minMasterVersion"] = "1.30.5-gke.100"
    stack["tpu-platform:slicePools"][0]["nodeVersion"] = "1.31.2-gke.1000"
    problems = problems_of(stack)
    assert [p.split(":")[1] for p in problems] == ["cluster.minMasterVersion", "slicePools[0].nodeVersion"]
    assert all("1.31.2-gke.1115000" in p for p in problems)


def test_recent_gke_and_aliases_accepted(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"]["minMasterVersion"] = "1.33"
    stack["tpu-platform:slicePools"][0]["nodeVersion"] = "latest"
    parse_stack_config(stack)


def test_adopt_rejects_creation_settings(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"] = {"name": "existing", "mode": "adopt", "releaseChannel": "STABLE"}
    message = only_problem(stack)
    assert message.startswith("tpu-platform:cluster.releaseChannel:")
    assert "remove it with mode: adopt" in message


def test_label_values_checked(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["labels"] = {"owner": "not valid!"}
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].labels:")
    assert "label value" in message


def test_team_label_checked(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["team"] = "-bad-"
    assert only_problem(stack).startswith("tpu-platform:slicePools[0].team:")


def test_authorized_cidrs(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"]["masterAuthorizedCidrs"] = ["10.0.0.0/8", "office"]
    assert only_problem(stack).startswith("tpu-platform:cluster.masterAuthorizedCidrs[1]:")


def test_no_slice_pools(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"] = []
    assert only_problem(stack).startswith("tpu-platform:slicePools:")


def test_wrong_type(stack: dict[str, Any]) -> None:
    stack["tpu-platform:slicePools"][0]["count"] = "two"
    message = only_problem(stack)
    assert message.startswith("tpu-platform:slicePools[0].count:") and "'two'" in message


def test_bad_stack_registers_nothing(stack: dict[str, Any], render_stack: Any) -> None:
    stack["tpu-platform:slicePools"][0]["topology"] = "3x3"
    with pytest.raises(StackConfigError):
        render_stack(stack)
    # A valid run afterwards shows the runtime was left clean and the bad run registered nothing.
    good = dict(stack)
    good["tpu-platform:slicePools"] = [{"name": "train", "topology": "2x2"}]
    rendering = render_stack(good)
    assert any(r.type == "gcp:container/nodePool:NodePool" for r in rendering.resources)
