"""``hotswap.googleIdentity``: a kubeconfig-mode stack on a GKE cluster keeps Compute Engine
corroboration by naming the Google service account the controller acts as. ``manage: true`` registers
the GKE mode's roles, tag-scoped binding, tag and Workload Identity binding for it; ``manage: false``
registers nothing Google, and validate, plan and the stack's outputs give the gcloud commands that do
the same. Without an identity, corroboration stays refused and the mode says what it loses."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from tests.components.test_hotswap_component import resources_of
from tests.components.test_hotswap_google_access import (
    GSA,
    ROLE,
    SA_MEMBER,
    TAG_KEY,
    TAG_MEMBER,
    TAG_VALUE,
    bindings_of,
    roles_by_id,
)
from tests.components.test_kubeconfig_mode import _calls
from tpu_platform.config import StackConfigError
from tpu_platform.config.checks import stack_warnings
from tpu_platform.config.checks.warnings import google_identity_steps
from tpu_platform.config.google_identity import named_google_access
from tpu_platform.hotswap import iam, iam_commands
from tpu_platform.hotswap.adapter.config import config_from_mapping
from tpu_platform.plan import load_stack_config, parse_stack_config, stack_file
from tpu_platform.plan.document import normalize
from tpu_platform.policy.offline import check_rendering

EMAIL = "tpu-local-hotswap@my-tpu-project-dev.iam.gserviceaccount.com"
PROJECT = "my-tpu-project-dev"
VM_ROLE = "tpuPlatformHotswapCompute_tpu_local"
OPERATIONS_ROLE = "tpuPlatformHotswapOperations_tpu_local"
WI_MEMBER = f"serviceAccount:{PROJECT}.svc.id.goog[tpu-hotswap/hotswap-controller]"


def named(manage: bool, **identity: Any) -> dict[str, Any]:
    stack = load_stack_config(stack_file("local"))
    hotswap = stack["tpu-platform:hotswap"]
    hotswap["computeCorroboration"] = True
    hotswap["googleIdentity"] = {"serviceAccount": EMAIL, "manage": manage, **identity}
    return stack


def controller_objects(rendering: Any) -> tuple[dict[str, Any], dict[str, Any], Any]:
    (ksa,) = resources_of(rendering, "kubernetes:core/v1:ServiceAccount")
    (deployment,) = resources_of(rendering, "kubernetes:apps/v1:Deployment")
    (config_map,) = resources_of(rendering, "kubernetes:core/v1:ConfigMap")
    return ksa, deployment, config_from_mapping(yaml.safe_load(config_map["data"]["config.yaml"]))


def test_unmanaged_registers_nothing_google_and_the_controller_acts_as_the_named_account(
    render_stack: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _calls(monkeypatch)
    rendering = render_stack(named(manage=False), name="local")
    assert not [r.type for r in rendering.resources if r.type.startswith("gcp:")]
    assert calls == [], "no Google function either"
    ksa, deployment, config = controller_objects(rendering)
    assert ksa["metadata"]["annotations"] == {iam.GSA_ANNOTATION: EMAIL}
    assert deployment["spec"]["template"]["spec"]["nodeSelector"] == {iam.METADATA_SERVER_LABEL: "true"}
    assert config.settings.compute_corroboration is True and config.settings.reset_silent_vms is True
    exported = normalize(rendering.outputs["hotswapGoogleIdentity"])
    assert exported["serviceAccount"] == EMAIL
    assert exported["roles"] == {
        VM_ROLE: ["compute.instances.get", "compute.instances.reset"],
        OPERATIONS_ROLE: ["compute.zoneOperations.list"],
    }
    assert exported["workloadIdentityMember"] == WI_MEMBER
    access = named_google_access(parse_stack_config(named(manage=False)))
    assert access is not None and exported["commands"] == iam_commands.setup_commands(access)


def test_managed_registers_the_gke_modes_access_for_the_named_account(
    render_stack: Callable[..., Any], stack: dict[str, Any]
) -> None:
    """The same roles and bindings as the GKE mode's component, for the named account: no account is
    created, and no node pool (the cluster's are not the stack's)."""
    rendering = render_stack(named(manage=True, network="projects/host/global/networks/shared"), name="local")
    assert (
        resources_of(rendering, GSA) == []
        and resources_of(rendering, "gcp:container/nodePool:NodePool") == []
    )
    roles = roles_by_id(rendering)
    stack["tpu-platform:hotswap"] = {"enabled": True, "image": "us-docker.pkg.dev/p/r/hotswap:1.0"}
    gke = {r["roleId"].rsplit("_tpu_test", 1)[0]: r for r in resources_of(render_stack(stack), ROLE)}
    assert {k: (r["permissions"], r["title"]) for k, r in roles.items()} == {
        f"{prefix}_tpu_local": (g["permissions"], g["title"].replace("tpu-test", "tpu-local"))
        for prefix, g in gke.items()
    }
    (key,) = resources_of(rendering, TAG_KEY)
    assert key["parent"] == "projects/host" and key["purposeData"] == {"network": "host/shared"}
    (value,) = resources_of(rendering, TAG_VALUE)
    value_id = next(m["tagValue"] for m in resources_of(rendering, TAG_MEMBER))
    (vm_binding,) = bindings_of(rendering, VM_ROLE)
    assert vm_binding["member"] == f"serviceAccount:{EMAIL}"
    assert vm_binding["condition"] == vars(iam.vm_scope_condition(value["parent"], value_id))
    (operations_binding,) = bindings_of(rendering, OPERATIONS_ROLE)
    assert "condition" not in operations_binding
    assert len(resources_of(rendering, TAG_MEMBER)) == len(iam.TAG_GRANTS)
    (wi,) = resources_of(rendering, SA_MEMBER)
    assert wi == {
        "serviceAccountId": f"projects/{PROJECT}/serviceAccounts/{EMAIL}",
        "role": iam.WORKLOAD_IDENTITY_USER,
        "member": WI_MEMBER,
    }
    ksa, _, config = controller_objects(rendering)
    assert ksa["metadata"]["annotations"] == {iam.GSA_ANNOTATION: EMAIL}
    assert config.settings.compute_corroboration is True
    exported = normalize(rendering.outputs["hotswapGoogleIdentity"])
    assert exported["commands"][1:] == [
        f"gcloud container node-pools update {pool} --cluster=tpu-local --location=us-east5 "
        f"--project={PROJECT} --resource-manager-tags={value['parent']}={value_id}"
        for pool in ("dev-4x4-0", "dev-4x4-1")
    ]


def test_without_the_fence_neither_mode_grants_the_reset(render_stack: Callable[..., Any]) -> None:
    for manage in (True, False):
        stack = named(manage=manage)
        stack["tpu-platform:hotswap"]["settings"] = {"resetSilentVms": False}
        rendering = render_stack(stack, name="local")
        exported = normalize(rendering.outputs["hotswapGoogleIdentity"])
        assert exported["roles"][VM_ROLE] == ["compute.instances.get"]
        if manage:
            assert roles_by_id(rendering)[VM_ROLE]["permissions"] == ["compute.instances.get"]
        else:
            assert "--permissions=compute.instances.get --stage=GA" in "\n".join(exported["commands"])


def test_the_policy_pack_passes_either_mode(render_stack: Callable[..., Any]) -> None:
    for manage in (True, False):
        rendering = render_stack(named(manage=manage), name="local")
        assert [v.message for v in check_rendering(rendering)] == [], manage


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (
            lambda h: h.update(computeCorroboration=True),
            "tpu-platform:hotswap.computeCorroboration",
            ["hotswap.googleIdentity", "waits for GKE's repair", "tpu-platform whatif"],
        ),
        (
            lambda h: h.update(googleIdentity={"serviceAccount": EMAIL}),
            "tpu-platform:hotswap.googleIdentity",
            ["set hotswap.computeCorroboration: true"],
        ),
        (
            lambda h: h.update(
                computeCorroboration=True,
                googleIdentity={"serviceAccount": "123456789012-compute@developer.gserviceaccount.com"},
            ),
            "tpu-platform:hotswap.googleIdentity.serviceAccount",
            ["an account of its own"],
        ),
        (
            lambda h: h.update(computeCorroboration=True, googleIdentity={"serviceAccount": "hotswap"}),
            "tpu-platform:hotswap.googleIdentity.serviceAccount",
            ["not a service account email"],
        ),
    ],
    ids=["corroboration-without-identity", "identity-without-corroboration", "default-account", "not-email"],
)
def test_a_kubeconfig_stacks_mistakes_name_the_fix(
    change: Callable[[dict[str, Any]], object], path: str, words: list[str]
) -> None:
    stack = load_stack_config(stack_file("local"))
    change(stack["tpu-platform:hotswap"])
    with pytest.raises(StackConfigError) as err:
        parse_stack_config(stack)
    (problem,) = [p for p in err.value.problems if p.startswith(f"{path}: ")]
    assert all(w in problem for w in words), problem


def test_the_identity_is_for_the_kubeconfig_mode_alone(stack: dict[str, Any]) -> None:
    stack["tpu-platform:hotswap"] = {
        "enabled": True,
        "image": "us-docker.pkg.dev/p/r/hotswap:1.0",
        "googleIdentity": {"serviceAccount": EMAIL},
    }
    with pytest.raises(StackConfigError) as err:
        parse_stack_config(stack)
    assert err.value.problems == [
        "tpu-platform:hotswap.googleIdentity: is for mode: kubeconfig; with mode: create the stack creates "
        "the controller's own Google service account and its access: remove googleIdentity"
    ]


def test_the_mode_without_corroboration_says_what_it_loses() -> None:
    local = load_stack_config(stack_file("local"))
    (warning,) = [w for w in stack_warnings(parse_stack_config(local)).lines if "hotswap" in w]
    assert warning.startswith("tpu-platform:hotswap.computeCorroboration: is off:")
    assert "waits for GKE's repair" in warning and "hotswap.googleIdentity" in warning
    local["tpu-platform:hotswap"]["settings"] = {"forceDeleteUnconfirmed": True}
    assert not [w for w in stack_warnings(parse_stack_config(local)).lines if "hotswap" in w]


def test_validate_and_plan_print_the_commands_and_the_roles() -> None:
    unmanaged = parse_stack_config(named(manage=False))
    lines = stack_warnings(unmanaged).lines
    assert any(w.startswith("tpu-platform:hotswap.googleIdentity: ") and "svc.id.goog" in w for w in lines)
    (steps,) = google_identity_steps(unmanaged).lines
    assert steps in lines, "validate prints what plan prints"
    assert steps.startswith(
        "tpu-platform:hotswap.googleIdentity.manage: false: the stack registers no Google"
    )
    access = named_google_access(unmanaged)
    assert access is not None
    assert all(f"    {line}" in steps for line in iam_commands.setup_commands(access))
    assert (
        f"{VM_ROLE} (compute.instances.get, compute.instances.reset; only on VMs carrying the tag)" in steps
    )
    (managed,) = google_identity_steps(parse_stack_config(named(manage=True))).lines
    assert "gcloud container node-pools update dev-4x4-0" in managed
    assert "gcloud iam roles create" not in managed, "the stack registers the roles itself"


def test_no_identity_no_steps() -> None:
    local = parse_stack_config(load_stack_config(stack_file("local")))
    assert named_google_access(local) is None and not google_identity_steps(local).lines


FAKE_GCLOUD = """
gcloud() {
  python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "$CALLS"
  case "$*" in
    *"tags keys describe"*) echo tagKeys/111 ;;
    *"tags values describe"*) echo tagValues/222 ;;
    *"projects describe"*) echo 333 ;;
  esac
}
"""


def test_the_script_passes_gcloud_exactly_the_intended_arguments(tmp_path: Any) -> None:
    """Run under bash with a gcloud that records its argv: the quoting and the shell variables give
    the tag's IDs, the condition and the members as the GKE mode's resources hold them."""
    access = named_google_access(parse_stack_config(named(manage=False)))
    assert access is not None
    calls = tmp_path / "calls"
    script = FAKE_GCLOUD + "\n".join(iam_commands.setup_commands(access))
    subprocess.run(["bash", "-euc", script], env={"CALLS": str(calls), "PATH": "/usr/bin:/bin"}, check=True)
    argv = [json.loads(line) for line in calls.read_text().splitlines()]
    flags = [dict(a.split("=", 1) for a in args if a.startswith("--")) for args in argv]
    condition = iam.vm_scope_condition("tagKeys/111", "tagValues/222")
    conditioned = next(f for f in flags if f.get("--role", "").endswith(VM_ROLE))
    assert conditioned["--condition"] == (
        f"^|^expression={condition.expression}|title={condition.title}|description={condition.description}"
    )
    assert conditioned["--member"] == f"serviceAccount:{EMAIL}"
    assert next(f for f in flags if f.get("--role", "").endswith(OPERATIONS_ROLE))["--condition"] == "None"
    agents = [f["--member"] for f in flags if f.get("--role", "").startswith("roles/resourcemanager.")]
    assert agents == [grant.member("333") for grant in iam.TAG_GRANTS]
    pools = [f["--resource-manager-tags"] for f in flags if "--resource-manager-tags" in f]
    assert pools == ["tagKeys/111=tagValues/222"] * 2
    assert next(f for f in flags if f.get("--role") == iam.WORKLOAD_IDENTITY_USER)["--member"] == WI_MEMBER
    created = [args for args in argv if args[:3] == ["iam", "roles", "create"]]
    assert [(a[3], dict(x.split("=", 1) for x in a[4:])["--permissions"]) for a in created] == [
        (VM_ROLE, "compute.instances.get,compute.instances.reset"),
        (OPERATIONS_ROLE, "compute.zoneOperations.list"),
    ]
    assert shlex.split(iam_commands.setup_commands(access)[1])[:4] == [
        "gcloud",
        "iam",
        "service-accounts",
        "create",
    ]


def test_the_kubernetes_account_the_binding_names_is_the_controllers() -> None:
    from tpu_platform.components.hotswap_controller import APP_NAME

    assert iam.CONTROLLER_KSA == APP_NAME


def test_the_local_examples_commented_identity_is_valid_once_uncommented() -> None:
    """The example keeps corroboration off (the live tier's control plane has no Workload Identity);
    its commented lines are the GKE cluster's setting."""
    lines = stack_file("local").read_text().splitlines()
    switch = lines.index("    computeCorroboration: false")
    uncommented = [line.replace("# ", "", 1) if line.startswith("    # ") else line for line in lines]
    del uncommented[switch]
    config = yaml.safe_load("\n".join(uncommented))["config"]
    assert config["tpu-platform:hotswap"]["googleIdentity"] == {"serviceAccount": EMAIL, "manage": False}
    assert named_google_access(parse_stack_config(config)) is not None
