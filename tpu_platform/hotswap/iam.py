"""The controller's Google Cloud access for Compute Engine corroboration, as plain data: what the
Pulumi component creates when a stack sets ``hotswap.computeCorroboration``, and what the policy
pack checks.

- A Google service account (GSA) of its own per cluster.
- A custom project role with exactly :func:`compute_permissions`: the permissions of the two calls the
  reader makes, and with the fence on (``reset_silent_vms``, the default) ``compute.instances.reset``
  (https://cloud.google.com/compute/docs/reference/rest/v1/instances/reset, "IAM Permissions"). The
  reads (each method's "IAM Permissions" section:
  https://cloud.google.com/compute/docs/reference/rest/v1/instances/get needs
  ``compute.instances.get``; https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/list
  needs ``compute.zoneOperations.list``). The predefined ``roles/compute.viewer`` would also grant
  them, with every other read of the project besides; ``roles/compute.instanceAdmin.v1`` the reset, with
  every other change to instances.
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
"""

from __future__ import annotations

import re
from typing import Final

COMPUTE_PERMISSIONS: Final = ("compute.instances.get", "compute.zoneOperations.list")
RESET_PERMISSION: Final = "compute.instances.reset"
WORKLOAD_IDENTITY_USER: Final = "roles/iam.workloadIdentityUser"
GSA_ANNOTATION: Final = "iam.gke.io/gcp-service-account"
METADATA_SERVER_LABEL: Final = "iam.gke.io/gke-metadata-server-enabled"
ROLE_PREFIX: Final = "tpuPlatformHotswapCompute"

_ROLE_CHARS = re.compile(r"[^a-zA-Z0-9_.]")


def compute_permissions(reset: bool) -> tuple[str, ...]:
    """The custom role's permissions: the reads, plus the reset when the controller fences by it."""
    return (*COMPUTE_PERMISSIONS, RESET_PERMISSION) if reset else COMPUTE_PERMISSIONS


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
    """The custom role's id: ``[a-zA-Z0-9_.]{3,64}`` (IAM ``roles.create`` ``roleId``; pulumi-gcp's
    ``IAMCustomRole.role_id`` "Cannot contain ``-`` characters"), per cluster."""
    return f"{ROLE_PREFIX}_{_ROLE_CHARS.sub('_', cluster)}"[:64]
