"""The controller's Google access as ``gcloud`` commands, for a stack that names the Google service
account rather than creating it (``cluster.mode: kubeconfig`` with ``hotswap.googleIdentity``).

The same pieces, in the same order, as the GKE mode's components register them
(:mod:`tpu_platform.hotswap.iam` cites each): the tag that marks the cluster's TPU VMs, the grants
GKE's service agents need to attach it, the TPU node pools that carry it, the two custom roles, their
bindings to the account (the calls on one VM only under the tag's condition, after the pools are
tagged) and the Workload Identity binding of the controller's Kubernetes service account. The tag's
permanent IDs exist only once it is created, so the script reads them into shell variables.

Flags as the gcloud reference gives them: ``resource-manager tags keys create SHORT_NAME --parent
--purpose --purpose-data=network=NETWORK``; ``tags keys describe`` and ``tags values describe`` of a
namespaced name (``PROJECT_ID/KEY``, ``PROJECT_ID/KEY/VALUE``); ``tags values add-iam-policy-binding``;
``container node-pools update --resource-manager-tags=[KEY=VALUE,…]`` (``tagKeys/N=tagValues/M``; GKE's
``ResourceManagerTags``: "Existing tags will be replaced with new values"); ``iam roles create
--permissions --stage``; ``projects add-iam-policy-binding --condition`` (a dict flag: its expression
holds a comma, so it takes another delimiter, ``gcloud topic escaping``: ``^|^``), ``--condition=None``
for a binding without one; ``iam service-accounts add-iam-policy-binding``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from . import iam

TAG_KEY_VAR = "TAG_KEY"
TAG_VALUE_VAR = "TAG_VALUE"
PROJECT_NUMBER_VAR = "PROJECT_NUMBER"


@dataclass(frozen=True)
class GoogleAccess:
    """Whom the controller's Google access is for, and on what: the cluster (its project, name and
    location), its TPU node pools, the network its tag names, the controller's namespace, the Google
    service account, and whether the controller resets silent VMs."""

    project: str
    cluster: str
    location: str
    network: iam.Network
    namespace: str
    service_account: str
    resets: bool
    node_pools: tuple[str, ...]

    def roles(self) -> dict[str, tuple[str, ...]]:
        """Custom role id -> its permissions: the calls on one VM, then the operations listing."""
        return {
            iam.role_id(self.cluster): iam.vm_permissions(self.resets),
            iam.operations_role_id(self.cluster): iam.UNTAGGED_PERMISSIONS,
        }

    @property
    def member(self) -> str:
        return f"serviceAccount:{self.service_account}"

    @property
    def workload_identity_member(self) -> str:
        return iam.workload_identity_member(self.project, self.namespace, iam.CONTROLLER_KSA)

    @property
    def tag_key_name(self) -> str:
        """The tag key's namespaced name: the network's project, then its short name."""
        return f"{self.network.project}/{iam.tag_key_short_name(self.cluster)}"

    @property
    def tag_value_name(self) -> str:
        return f"{self.tag_key_name}/{iam.TAG_VALUE_SHORT_NAME}"


def _var(name: str) -> str:
    return "${" + name + "}"


def _quoted(value: str) -> str:
    """A shell word: as it is or single-quoted, double-quoted where it expands one of the script's
    variables or holds an apostrophe (no other ``$`` is ever written)."""
    if "${" not in value and "'" not in value:
        return shlex.quote(value)
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`")
    return f'"{escaped}"'


def _command(*words: str, **flags: str) -> str:
    """``gcloud WORDS --flag=VALUE ...``; a flag's Python name has ``_`` for ``-``."""
    parts = ["gcloud", *(_quoted(w) for w in words)]
    parts += [f"--{name.replace('_', '-')}={_quoted(value)}" for name, value in flags.items()]
    return " ".join(parts)


def _assign(variable: str, command: str) -> str:
    """``VARIABLE=$(command)``: one value a later command expands."""
    return f"{variable}=$({command})"


def account_commands(access: GoogleAccess) -> list[str]:
    """The Google service account itself, where it does not exist yet."""
    account, _, _ = access.service_account.partition("@")
    return [
        "# The Google service account the controller acts as (skip if it exists)",
        _command(
            "iam",
            "service-accounts",
            "create",
            account,
            project=iam.service_account_project(access.service_account),
            display_name=f"hotswap controller of {access.cluster}",
        ),
    ]


def tag_id_commands(access: GoogleAccess) -> list[str]:
    """The tag's permanent IDs into ``TAG_KEY`` and ``TAG_VALUE``."""
    describe = ("resource-manager", "tags")
    return [
        _assign(
            TAG_KEY_VAR, _command(*describe, "keys", "describe", access.tag_key_name, format="value(name)")
        ),
        _assign(
            TAG_VALUE_VAR,
            _command(*describe, "values", "describe", access.tag_value_name, format="value(name)"),
        ),
    ]


def tag_commands(access: GoogleAccess) -> list[str]:
    """The tag key (``GCE_FIREWALL``, on the cluster's network) and its one value, their IDs read
    into ``TAG_KEY`` and ``TAG_VALUE``, and the service agents' grants on the value."""
    net = access.network
    key_name, value_name = tag_id_commands(access)
    lines = [
        "# The tag that marks the cluster's TPU VMs: a key of its own per cluster, on the cluster's network",
        _command(
            "resource-manager",
            "tags",
            "keys",
            "create",
            iam.tag_key_short_name(access.cluster),
            parent=f"projects/{net.project}",
            purpose=iam.TAG_PURPOSE,
            purpose_data=f"network={net.purpose_data}",
            description=f"TPU VMs of GKE cluster {access.cluster}: the hotswap controller may read and "
            "reset only these",
        ),
        key_name,
        _command(
            "resource-manager",
            "tags",
            "values",
            "create",
            iam.TAG_VALUE_SHORT_NAME,
            parent=_var(TAG_KEY_VAR),
            description=f"The VMs of the TPU node pools of {access.cluster}",
        ),
        value_name,
        "# GKE's service agents may attach it to the node pools' VMs",
        _assign(
            PROJECT_NUMBER_VAR,
            _command("projects", "describe", access.project, format="value(projectNumber)"),
        ),
    ]
    lines += [
        _command(
            "resource-manager",
            "tags",
            "values",
            "add-iam-policy-binding",
            _var(TAG_VALUE_VAR),
            member=grant.member(_var(PROJECT_NUMBER_VAR)),
            role=grant.role,
        )
        for grant in iam.TAG_GRANTS
    ]
    return lines


def node_pool_commands(
    access: GoogleAccess, tag_key: str = _var(TAG_KEY_VAR), tag_value: str = _var(TAG_VALUE_VAR)
) -> list[str]:
    """Each TPU node pool carries the tag (GKE then attaches it to the pool's VMs); the pool's other
    resource manager tags, if any, are replaced."""
    return [
        "# The TPU node pools carry it (this replaces a pool's other resource manager tags)",
        *(
            _command(
                "container",
                "node-pools",
                "update",
                pool,
                cluster=access.cluster,
                location=access.location,
                project=access.project,
                resource_manager_tags=f"{tag_key}={tag_value}",
            )
            for pool in access.node_pools
        ),
    ]


def role_commands(access: GoogleAccess) -> list[str]:
    """The two custom roles, bound to the account: the calls on one VM under the tag's condition,
    the operations listing without one."""
    vm_role, operations_role = access.roles()
    titles = {
        vm_role: (iam.role_title(access.cluster), iam.ROLE_DESCRIPTION),
        operations_role: (iam.operations_role_title(access.cluster), iam.OPERATIONS_ROLE_DESCRIPTION),
    }
    lines = ["# The two custom roles: exactly the controller's Compute Engine calls"]
    for role, permissions in access.roles().items():
        title, description = titles[role]
        lines.append(
            _command(
                "iam",
                "roles",
                "create",
                role,
                project=access.project,
                title=title,
                description=description,
                permissions=",".join(permissions),
                stage="GA",
            )
        )
    condition = iam.tag_condition(_var(TAG_KEY_VAR), _var(TAG_VALUE_VAR))
    conditioned = (
        f"^|^expression={condition.expression}|title={condition.title}|description={condition.description}"
    )
    lines += [
        "# Bound to the account: the calls on one VM only on tagged VMs, the listing without a condition",
        _command(
            "projects",
            "add-iam-policy-binding",
            access.project,
            member=access.member,
            role=f"projects/{access.project}/roles/{vm_role}",
            condition=conditioned,
        ),
        _command(
            "projects",
            "add-iam-policy-binding",
            access.project,
            member=access.member,
            role=f"projects/{access.project}/roles/{operations_role}",
            condition="None",
        ),
    ]
    return lines


def workload_identity_commands(access: GoogleAccess) -> list[str]:
    """The controller's Kubernetes service account may act as the account (Workload Identity)."""
    return [
        "# Workload Identity: the controller's Kubernetes service account acts as the account",
        _command(
            "iam",
            "service-accounts",
            "add-iam-policy-binding",
            access.service_account,
            project=iam.service_account_project(access.service_account),
            role=iam.WORKLOAD_IDENTITY_USER,
            member=access.workload_identity_member,
        ),
    ]


def setup_commands(access: GoogleAccess) -> list[str]:
    """Everything, in order: a script for a stack that registers no Google resource. A binding that
    needs the tag's IDs comes after the lines that read them."""
    return [
        *account_commands(access),
        *tag_commands(access),
        *node_pool_commands(access),
        *role_commands(access),
        *workload_identity_commands(access),
    ]
