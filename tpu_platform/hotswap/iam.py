"""The controller's Google Cloud access for Compute Engine corroboration, as plain data: what the
Pulumi component creates when a stack sets ``hotswap.computeCorroboration``, and what the policy
pack checks.

- A Google service account (GSA) of its own per cluster.
- The permissions of the calls the adapter makes (each method's "IAM Permissions" section:
  https://cloud.google.com/compute/docs/reference/rest/v1/instances/get needs
  ``compute.instances.get``; https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/list
  needs ``compute.zoneOperations.list``; with the fence on, ``reset_silent_vms``, the default,
  https://cloud.google.com/compute/docs/reference/rest/v1/instances/reset needs
  ``compute.instances.reset``), in two custom project roles:

  - :func:`vm_permissions` (``instances.get`` and ``instances.reset``: calls on one VM) bound under the
    IAM condition :func:`vm_scope_condition`, which holds only for VMs carrying the cluster's own
    Resource Manager tag. The stack creates that tag (a key per cluster, under the project of the
    cluster's network) and GKE attaches it to every VM of the cluster's TPU node pools
    (``node_config.resource_manager_tags``): GKE "Selectively enforce firewall policies in GKE"
    (https://cloud.google.com/kubernetes-engine/docs/how-to/tags-firewall-policies): "When you apply
    firewall purpose tags to GKE clusters or node pools, GKE automatically attaches those tags to the
    corresponding Compute Engine virtual machines (VMs)". The node pool tags are ``GCE_FIREWALL`` ones
    (``gcloud container node-pools create --resource-manager-tags``: "resource manager tags that has
    the GCE_FIREWALL purpose", https://cloud.google.com/sdk/gcloud/reference/container/node-pools/create),
    and such a tag serves IAM too (Cloud NGFW "Use Tags for firewalls",
    https://cloud.google.com/firewall/docs/use-tags-for-firewalls: "While the GCE_FIREWALL purpose is
    required for the Tag to be used in networking features, you can use the Tag for other actions").
    A stolen token of the controller can then reset (and read) only its own cluster's TPU VMs: not the
    system pool's, not another cluster's in the same project, not any other workload's.
  - :data:`UNTAGGED_PERMISSIONS` (``zoneOperations.list``) bound without a condition: a list is
    authorized on the project, not on a VM, and no condition attribute names zone operations (IAM
    "Attribute reference for IAM Conditions",
    https://cloud.google.com/iam/docs/conditions-attribute-reference: the Compute Engine types of
    ``resource.type`` and ``resource.name`` are instances, disks, images, firewalls and the like,
    operations are not); a tag condition would have to match a tag on the project, which every VM
    in it inherits. The permission only reads operation records.

  The predefined ``roles/compute.viewer`` would grant every read of the project,
  ``roles/compute.instanceAdmin.v1`` the reset with every other change to every VM.
- ``roles/resourcemanager.tagUser`` and ``roles/resourcemanager.tagHoldAdmin`` on the tag value for
  the GKE service agents that attach it (:data:`TAG_GRANTS`).
- ``roles/iam.workloadIdentityUser`` on the GSA for the controller's Kubernetes service account
  (member ``serviceAccount:PROJECT.svc.id.goog[NAMESPACE/KSA]``) and the KSA annotated
  ``iam.gke.io/gcp-service-account: GSA_EMAIL``, which is how GKE's Workload Identity lets a pod act
  as a GSA (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity, "Link
  Kubernetes ServiceAccounts to IAM"). The cluster needs the workload pool ``PROJECT.svc.id.goog`` and
  the pod's node the GKE metadata server; GKE labels such nodes
  ``iam.gke.io/gke-metadata-server-enabled: "true"`` and the page's Standard-cluster pod spec selects
  them with it, as the controller's pod does. The same page: the metadata server "takes a few seconds
  to start accepting requests on a newly created Pod", so the first reads of a new controller pod may
  fail; such a failure is no evidence, like any other.

A stack on a cluster it reaches only by kubeconfig names the GSA instead (``hotswap.googleIdentity``)
and either registers the same roles, bindings and tag for it or leaves them to the ``gcloud``
commands of :mod:`tpu_platform.hotswap.iam_commands`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

GET_PERMISSION: Final = "compute.instances.get"
OPERATIONS_PERMISSION: Final = "compute.zoneOperations.list"
RESET_PERMISSION: Final = "compute.instances.reset"
COMPUTE_PERMISSIONS: Final = (GET_PERMISSION, OPERATIONS_PERMISSION)
"""The reads of corroboration (the reset comes with the fence)."""
UNTAGGED_PERMISSIONS: Final = (OPERATIONS_PERMISSION,)
"""Granted without a tag condition: authorized on the project, read-only (module docstring)."""
WORKLOAD_IDENTITY_USER: Final = "roles/iam.workloadIdentityUser"
GSA_ANNOTATION: Final = "iam.gke.io/gcp-service-account"
CONTROLLER_KSA: Final = "hotswap-controller"
"""The controller's Kubernetes service account (``components/hotswap_controller.py`` names it so)."""
METADATA_SERVER_LABEL: Final = "iam.gke.io/gke-metadata-server-enabled"
ROLE_PREFIX: Final = "tpuPlatformHotswapCompute"
OPERATIONS_ROLE_PREFIX: Final = "tpuPlatformHotswapOperations"
TAG_USER: Final = "roles/resourcemanager.tagUser"
TAG_HOLD_ADMIN: Final = "roles/resourcemanager.tagHoldAdmin"
TAG_PURPOSE: Final = "GCE_FIREWALL"
TAG_VALUE_SHORT_NAME: Final = "tpu-slice"
"""The one value of a cluster's tag key: the VMs of its TPU node pools."""

_ROLE_CHARS = re.compile(r"[^a-zA-Z0-9_.]")
_TAG_KEY_ID = re.compile(r"tagKeys/[0-9]+")
_TAG_VALUE_ID = re.compile(r"tagValues/[0-9]+")
_NETWORK_PATH = re.compile(
    r"^(?:https://www\.googleapis\.com/compute/v1/)?projects/([^/]+)/global/networks/([^/]+)$"
)


def compute_permissions(reset: bool) -> tuple[str, ...]:
    """Every Compute Engine permission of the controller: the reads, plus the reset when the
    controller fences by it."""
    return (*COMPUTE_PERMISSIONS, RESET_PERMISSION) if reset else COMPUTE_PERMISSIONS


def vm_permissions(reset: bool) -> tuple[str, ...]:
    """The permissions checked on one VM, granted only on the cluster's tagged TPU VMs."""
    return tuple(p for p in compute_permissions(reset) if p not in UNTAGGED_PERMISSIONS)


@dataclass(frozen=True)
class Condition:
    """An IAM condition (``google.type.Expr``) as a binding carries it."""

    title: str
    description: str
    expression: str


def vm_scope_condition(tag_key_id: str, tag_value_id: str) -> Condition:
    """The condition that limits a binding to resources carrying the tag ``tag_key_id: tag_value_id``.

    ``resource.matchTagId(keyId, valueId)``: "Checks whether the resource for the request has a tag
    with the specified key and value. The key and value are looked up by their permanent IDs" (IAM
    "Attribute reference for IAM Conditions",
    https://cloud.google.com/iam/docs/conditions-attribute-reference; IAM "Tags and conditional
    access", https://cloud.google.com/iam/docs/tags-access-control). Permanent IDs are never reused,
    so a tag deleted and made again under the same name does not match. Any stack that knows the
    tag (a created one here; an existing tag of a cluster reached by kubeconfig) builds the same
    condition."""
    if not _TAG_KEY_ID.fullmatch(tag_key_id) or not _TAG_VALUE_ID.fullmatch(tag_value_id):
        raise ValueError(
            f"a tag condition needs permanent IDs tagKeys/N and tagValues/N, not {tag_key_id!r} and "
            f"{tag_value_id!r}"
        )
    return tag_condition(tag_key_id, tag_value_id)


def tag_condition(tag_key: str, tag_value: str) -> Condition:
    """:func:`vm_scope_condition` for the key and value as written, unchecked: the IDs, or the shell
    variables a ``gcloud`` script reads them into once it has created the tag."""
    return Condition(
        title="tpu-platform hotswap TPU VMs",
        description=f"Only VMs tagged {tag_key}={tag_value}: the cluster's TPU node pools",
        expression=f"resource.matchTagId('{tag_key}', '{tag_value}')",
    )


@dataclass(frozen=True)
class Network:
    """A VPC network as a firewall tag names it: the project that holds it, and its name."""

    project: str
    name: str

    @property
    def purpose_data(self) -> str:
        """``network`` purpose data of a ``GCE_FIREWALL`` tag key: ``PROJECT_ID/NETWORK_NAME``
        (GKE "Selectively enforce firewall policies in GKE", "Create tags")."""
        return f"{self.project}/{self.name}"


def cluster_network(project: str, network: str | None) -> Network:
    """The cluster's network from the stack's ``cluster.network`` (a name in the project, or a
    ``projects/P/global/networks/N`` path, as GKE reports an existing cluster's), ``default`` when unset."""
    text = network or "default"
    m = _NETWORK_PATH.match(text)
    return Network(m.group(1), m.group(2)) if m else Network(project, text)


def tag_key_short_name(cluster: str) -> str:
    """The tag key's short name: one key per cluster, so two clusters of a project never share VMs.
    At most 63 characters (a GKE cluster name is at most 40)."""
    return f"{cluster}-hotswap-vms"[:63]


GKE_SERVICE_AGENT: Final = "serviceAccount:service-{number}@container-engine-robot.iam.gserviceaccount.com"
"""The Kubernetes Engine Service Agent of the project numbered ``number``."""
GOOGLE_APIS_SERVICE_AGENT: Final = "serviceAccount:{number}@cloudservices.gserviceaccount.com"
"""The Google APIs Service Agent of the project numbered ``number``."""


@dataclass(frozen=True)
class TagGrant:
    """One role on the tag value for a service agent of the cluster's project."""

    name: str
    role: str
    member_template: str

    def member(self, project_number: str) -> str:
        return self.member_template.format(number=project_number)


TAG_GRANTS: Final = (
    TagGrant("gke-tag-user", TAG_USER, GKE_SERVICE_AGENT),
    TagGrant("gke-tag-hold-admin", TAG_HOLD_ADMIN, GKE_SERVICE_AGENT),
    TagGrant("apis-tag-user", TAG_USER, GOOGLE_APIS_SERVICE_AGENT),
)
"""What GKE needs to attach the tag to new nodes: GKE "Selectively enforce firewall policies in GKE"
(https://cloud.google.com/kubernetes-engine/docs/how-to/tags-firewall-policies), "Grant IAM permissions
to service agents": the Tag User role to the Kubernetes Engine Service Agent and to the Google APIs
Service Agent, and the Tag Holds Administrator role to the former "for the tag key-value pair" ("lets
the service agent prevent tag deletion if the key-value pair is still in use in GKE"). The page grants
Tag User on the project; here it is granted on the one tag value, the narrowest resource that holds
the permission to bind it (the page's own grant for tags outside the project is on the tag key)."""


def workload_pool(project: str) -> str:
    return f"{project}.svc.id.goog"


def workload_identity_member(project: str, namespace: str, service_account: str) -> str:
    """The IAM member that stands for a Kubernetes service account of the project's clusters."""
    return f"serviceAccount:{workload_pool(project)}[{namespace}/{service_account}]"


def account_id(cluster: str) -> str:
    """The GSA's id: 6-30 characters, ``[a-z]([-a-z0-9]*[a-z0-9])`` (the IAM API's rule for
    ``serviceAccounts.create`` ``accountId``); one per cluster so two stacks in a project never share."""
    stem = cluster[:21].rstrip("-")
    return f"{stem}-hotswap"


def role_id(cluster: str) -> str:
    """The tag-scoped custom role's id: ``[a-zA-Z0-9_.]{3,64}`` (IAM ``roles.create`` ``roleId``;
    pulumi-gcp's ``IAMCustomRole.role_id`` "Cannot contain ``-`` characters"), per cluster."""
    return f"{ROLE_PREFIX}_{_ROLE_CHARS.sub('_', cluster)}"[:64]


def operations_role_id(cluster: str) -> str:
    """The id of the custom role of :data:`UNTAGGED_PERMISSIONS`, per cluster (same rules)."""
    return f"{OPERATIONS_ROLE_PREFIX}_{_ROLE_CHARS.sub('_', cluster)}"[:64]


def role_title(cluster: str) -> str:
    return f"hotswap Compute Engine calls on TPU VMs ({cluster})"


ROLE_DESCRIPTION: Final = (
    "Only the calls of Compute Engine corroboration on one VM: its status and (with the fence on) the "
    "reset of a silent VM; bound only for the cluster's tagged TPU VMs"
)


def operations_role_title(cluster: str) -> str:
    return f"hotswap Compute Engine operations reads ({cluster})"


OPERATIONS_ROLE_DESCRIPTION: Final = (
    "Only the listing of a VM's zone operations (its host errors and resets): authorized on the "
    "project, read-only"
)


def service_account_project(email: str) -> str:
    """The project that holds a user-managed service account: ``NAME@PROJECT.iam.gserviceaccount.com``."""
    domain = email.partition("@")[2]
    if not domain.endswith(".iam.gserviceaccount.com"):
        raise ValueError(
            f"{email!r} is not a user-managed service account (NAME@PROJECT.iam.gserviceaccount.com)"
        )
    return domain.removesuffix(".iam.gserviceaccount.com")


def service_account_path(email: str) -> str:
    """The account's resource name, as a binding on it names it (``projects/P/serviceAccounts/EMAIL``)."""
    return f"projects/{service_account_project(email)}/serviceAccounts/{email}"
