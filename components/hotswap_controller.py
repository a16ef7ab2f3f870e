"""``HotswapController``: the bundled controller as a least-privilege, hardened Deployment.

Creates its namespace, service account, RBAC (the table in the controller's ``deploy``
module: nothing on secrets, nothing cluster-wide beyond what it reads and patches), a
ConfigMap of settings from the stack, a Deployment with probes and a locked-down security
context, a PodDisruptionBudget, a metrics Service and a PodMonitoring for Managed Prometheus.
Two ValidatingAdmissionPolicies (with their bindings) let only the controller's service account set,
change or remove its taint and state annotations on nodes and its preemption record on JobSets
(``tpu_platform.hotswap.admission``). Only when the settings turn on the node Lease signal
(``leaseStaleSeconds``), a Role and RoleBinding in ``kube-node-lease`` to read the kubelets' Leases:
access that is not granted unless it is used. Likewise only with ``hotswap.computeCorroboration``: a
Google service account; a custom project role of the calls on one VM (``instances.get``, and with the
fence ``instances.reset``) bound to it under an IAM condition that holds only for the VMs carrying the
cluster's TPU tag (``components/vm_scope.py``), and one of ``zoneOperations.list`` bound without; the
Workload Identity binding that lets the controller's service account act as it, the
``iam.gke.io/gcp-service-account`` annotation, and a node selector for nodes with the GKE metadata
server (``tpu_platform.hotswap.iam`` cites each).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from tpu_platform.config import HotswapConfig
from tpu_platform.constants import LABEL_APP_NAME, LABEL_PART_OF
from tpu_platform.hotswap import admission, deploy, iam

from .kube_object import KubeObject
from .vm_scope import HotswapVmScope

APP_NAME = "hotswap-controller"
LABELS = {LABEL_APP_NAME: APP_NAME, LABEL_PART_OF: "tpu-platform"}


@dataclass(frozen=True)
class HotswapControllerArgs:
    """The ``hotswap`` stack section, the image to run, and the cluster's provider."""

    config: HotswapConfig
    image: pulumi.Input[str]
    provider: k8s.Provider
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    project: str = ""
    """The cluster's project: where the Google service account and its role live (corroboration)."""
    cluster_name: str = ""
    """Names the Google service account and role, so two clusters of a project never share them."""
    managed_prometheus: bool = True
    """Whether the cluster runs Google Managed Prometheus (its PodMonitoring CRD)."""
    teams: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Each team's namespaces: the controller counts a team as one tenant."""
    vm_scope: HotswapVmScope | None = None
    """The tag of the cluster's TPU VMs (corroboration): the only VMs its calls on one VM may reach."""
    tagged_node_pools: Sequence[pulumi.Resource] = field(default_factory=tuple)
    """The node pools that carry the tag: the tag-scoped binding waits for them, so on a stack that
    had the unconditioned grant the VMs are tagged before the grant narrows to them."""


def pod_spec(cfg: HotswapConfig, image: Any, config_map: Any) -> dict[str, Any]:
    """The controller pod: non-root, read-only root, no privilege, probes, resources."""
    env: list[dict[str, Any]] = [
        {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
        for name, path in deploy.DOWNWARD_API_ENV
    ]
    env.append({"name": deploy.CONFIG_ENV, "value": deploy.CONFIG_PATH})
    probe_port = "health"
    return {
        "serviceAccountName": APP_NAME,
        "automountServiceAccountToken": True,
        **({"nodeSelector": {iam.METADATA_SERVER_LABEL: "true"}} if cfg.compute_corroboration else {}),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": deploy.RUN_AS_USER,
            "runAsGroup": deploy.RUN_AS_USER,
            "fsGroup": deploy.RUN_AS_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {LABEL_APP_NAME: APP_NAME}},
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            }
        },
        "containers": [
            {
                "name": "controller",
                "image": image,
                **({"args": list(deploy.CONTAINER_ARGS)} if deploy.CONTAINER_ARGS else {}),
                "env": env,
                "ports": [
                    {"name": "metrics", "containerPort": deploy.METRICS_PORT},
                    {"name": "health", "containerPort": deploy.HEALTH_PORT},
                ],
                "livenessProbe": {
                    "httpGet": {"path": deploy.LIVENESS_PATH, "port": probe_port},
                    "periodSeconds": 10,
                    "failureThreshold": 3,
                },
                "readinessProbe": {
                    "httpGet": {"path": deploy.READINESS_PATH, "port": probe_port},
                    "periodSeconds": 5,
                },
                "resources": {
                    "requests": {"cpu": cfg.resources.cpu_request, "memory": cfg.resources.memory_request},
                    "limits": {"memory": cfg.resources.memory_limit},
                },
                "securityContext": dict(deploy.SECURITY_CONTEXT),
                "volumeMounts": [
                    {"name": "config", "mountPath": deploy.CONFIG_DIR, "readOnly": True},
                    {"name": "tmp", "mountPath": "/tmp"},
                ],
            }
        ],
        "volumes": [
            {"name": "config", "configMap": {"name": config_map}},
            {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
        ],
    }


def _plain_object(cls: Any, name: str, **fields: Any) -> Any:
    """Create a typed Kubernetes resource from plain dicts.

    pulumi-kubernetes types its inputs as TypedDicts that ``dict[str, Any]`` does not satisfy; the
    rendered objects are checked against the Kubernetes schemas by the tests instead.
    """
    return cls(name, **fields)


class HotswapController(pulumi.ComponentResource):
    """Everything the controller needs in the cluster, all through the explicit provider."""

    namespace: pulumi.Output[str]
    deployment: Any

    def __init__(
        self, name: str, args: HotswapControllerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("tpu-platform:hotswap:Controller", name, None, opts)
        cfg = args.config
        ns_name = cfg.namespace
        k8s_opts = pulumi.ResourceOptions(
            parent=self, provider=args.provider, depends_on=list(args.depends_on)
        )
        meta = {"namespace": ns_name, "labels": LABELS}

        namespace = _plain_object(
            k8s.core.v1.Namespace,
            f"{name}-namespace",
            metadata={
                "name": ns_name,
                "labels": {**LABELS, "pod-security.kubernetes.io/enforce": "restricted"},
            },
            opts=k8s_opts,
        )
        self.namespace_object: pulumi.Resource = namespace
        in_ns = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[namespace])
        sa_meta: dict[str, Any] = {"name": APP_NAME, **meta}
        if cfg.compute_corroboration:
            gsa_email = self._google_access(name, args)
            sa_meta["annotations"] = {iam.GSA_ANNOTATION: gsa_email}
        account = _plain_object(k8s.core.v1.ServiceAccount, f"{name}-sa", metadata=sa_meta, opts=in_ns)
        cluster_role = _plain_object(
            k8s.rbac.v1.ClusterRole,
            f"{name}-clusterrole",
            metadata={"name": f"tpu-platform:{APP_NAME}", "labels": LABELS},
            rules=deploy.cluster_role_rules(),
            opts=k8s_opts,
        )
        subject = [{"kind": "ServiceAccount", "name": APP_NAME, "namespace": ns_name}]
        _plain_object(
            k8s.rbac.v1.ClusterRoleBinding,
            f"{name}-clusterrolebinding",
            metadata={"name": f"tpu-platform:{APP_NAME}", "labels": LABELS},
            role_ref={
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": cluster_role.metadata.name,
            },
            subjects=subject,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[account]),
        )
        role = _plain_object(
            k8s.rbac.v1.Role,
            f"{name}-role",
            metadata={"name": f"{APP_NAME}-leader-election", **meta},
            rules=deploy.role_rules(),
            opts=in_ns,
        )
        _plain_object(
            k8s.rbac.v1.RoleBinding,
            f"{name}-rolebinding",
            metadata={"name": f"{APP_NAME}-leader-election", **meta},
            role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role.metadata.name},
            subjects=subject,
            opts=in_ns,
        )
        controller_user = admission.service_account_user(ns_name, APP_NAME)
        for policy in admission.state_policies(controller_user):
            vap = _plain_object(
                k8s.admissionregistration.v1.ValidatingAdmissionPolicy,
                f"{name}-{policy.name}",
                metadata={"name": policy.name, "labels": LABELS},
                spec=policy.policy_spec,
                opts=k8s_opts,
            )
            _plain_object(
                k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding,
                f"{name}-{policy.name}-binding",
                metadata={"name": policy.name, "labels": LABELS},
                spec={**policy.binding_spec, "policyName": vap.metadata.name},
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[vap]),
            )
        settings = cfg.controller_settings(args.teams)
        lease_rules = deploy.node_lease_role_rules(settings)
        if lease_rules:
            lease_meta = {"name": f"{APP_NAME}-node-leases", "namespace": deploy.NODE_LEASE_NAMESPACE}
            lease_role = _plain_object(
                k8s.rbac.v1.Role,
                f"{name}-node-lease-role",
                metadata={**lease_meta, "labels": LABELS},
                rules=lease_rules,
                opts=k8s_opts,
            )
            _plain_object(
                k8s.rbac.v1.RoleBinding,
                f"{name}-node-lease-rolebinding",
                metadata={**lease_meta, "labels": LABELS},
                role_ref={
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": lease_role.metadata.name,
                },
                subjects=subject,
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[account]),
            )
        config_text = deploy.config_yaml(settings, cfg.runtime())
        config_name = f"{APP_NAME}-config"
        config_map = _plain_object(
            k8s.core.v1.ConfigMap,
            f"{name}-config",
            metadata={"name": config_name, **meta},
            data={deploy.CONFIG_FILE: config_text},
            opts=in_ns,
        )
        config_hash = hashlib.sha256(config_text.encode()).hexdigest()[:16]
        self.deployment = _plain_object(
            k8s.apps.v1.Deployment,
            f"{name}-deployment",
            metadata={"name": APP_NAME, **meta},
            spec={
                "replicas": cfg.replicas,
                "selector": {"matchLabels": {LABEL_APP_NAME: APP_NAME}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "template": {
                    "metadata": {
                        "labels": LABELS,
                        "annotations": {"tpu-platform.dev/config-sha256": config_hash},
                    },
                    # The ConfigMap's name as written, not its output: a settings change replaces the
                    # ConfigMap (delete first: a fixed name) and an input taken from it would make the
                    # engine replace the Deployment too; dependsOn keeps the order, the hash rolls the pods.
                    "spec": pod_spec(cfg, args.image, config_name),
                },
            },
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[account, config_map]
            ),
        )
        if cfg.replicas > 1:
            _plain_object(
                k8s.policy.v1.PodDisruptionBudget,
                f"{name}-pdb",
                metadata={"name": APP_NAME, **meta},
                spec={"minAvailable": 1, "selector": {"matchLabels": {LABEL_APP_NAME: APP_NAME}}},
                opts=in_ns,
            )
        service = _plain_object(
            k8s.core.v1.Service,
            f"{name}-metrics",
            metadata={"name": f"{APP_NAME}-metrics", **meta},
            spec={
                "selector": {LABEL_APP_NAME: APP_NAME},
                "ports": [{"name": "metrics", "port": deploy.METRICS_PORT, "targetPort": "metrics"}],
            },
            opts=in_ns,
        )
        if cfg.pod_monitoring and args.managed_prometheus:
            KubeObject(
                f"{name}-podmonitoring",
                {
                    "apiVersion": "monitoring.googleapis.com/v1",
                    "kind": "PodMonitoring",
                    "metadata": {"name": APP_NAME, **meta},
                    "spec": {
                        "selector": {"matchLabels": {LABEL_APP_NAME: APP_NAME}},
                        "endpoints": [{"port": "metrics", "path": deploy.METRICS_PATH, "interval": "30s"}],
                    },
                },
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[service]),
            )
        self.namespace = namespace.metadata.name
        self.register_outputs({"namespace": self.namespace, "deployment": self.deployment.metadata.name})

    def _google_access(self, name: str, args: HotswapControllerArgs) -> pulumi.Output[str]:
        """The GSA, its two custom roles on the project (:func:`iam.vm_permissions` under the TPU tag's
        condition, :data:`iam.UNTAGGED_PERMISSIONS` without), and the Workload Identity binding for
        the controller's KSA; returns the GSA's email for the KSA annotation. A kubeconfig-mode stack
        names the GSA (``hotswap.googleIdentity``): none is created, and with ``manage: false`` nothing
        Google is (``validate`` and ``plan`` print the gcloud commands instead)."""
        identity = args.config.google_identity
        if identity is not None and not identity.manage:
            return pulumi.Output.from_input(identity.service_account)
        scope = args.vm_scope
        if not args.project or not args.cluster_name or scope is None:
            raise ValueError(
                "computeCorroboration needs the cluster's project, name and TPU VM tag: set "
                "HotswapControllerArgs project, cluster_name and vm_scope"
            )
        cfg = args.config
        # After the cluster (and with it the project's services, iam.googleapis.com among them).
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on))
        email, account_path = self._service_account(name, args, child)
        member = email.apply(lambda address: f"serviceAccount:{address}")
        role = gcp.projects.IAMCustomRole(
            f"{name}-compute-role",
            role_id=iam.role_id(args.cluster_name),
            title=f"hotswap Compute Engine calls on TPU VMs ({args.cluster_name})",
            description="Only the calls of Compute Engine corroboration on one VM: its status and (with "
            "the fence on) the reset of a silent VM; bound only for the cluster's tagged TPU VMs",
            permissions=list(iam.vm_permissions(cfg.resets_vms)),
            project=args.project,
            opts=child,
        )
        operations = gcp.projects.IAMCustomRole(
            f"{name}-operations-role",
            role_id=iam.operations_role_id(args.cluster_name),
            title=f"hotswap Compute Engine operations reads ({args.cluster_name})",
            description="Only the listing of a VM's zone operations (its host errors and resets): "
            "authorized on the project, read-only",
            permissions=list(iam.UNTAGGED_PERMISSIONS),
            project=args.project,
            opts=child,
        )
        self.compute_role = role
        self.operations_role = operations
        condition = scope.condition
        gcp.projects.IAMMember(
            f"{name}-compute-reader",
            project=args.project,
            role=role.name,
            member=member,
            condition=gcp.projects.IAMMemberConditionArgs(
                title=condition.apply(lambda c: c.title),
                description=condition.apply(lambda c: c.description),
                expression=condition.apply(lambda c: c.expression),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*args.depends_on, *args.tagged_node_pools]),
        )
        gcp.projects.IAMMember(
            f"{name}-operations-reader",
            project=args.project,
            role=operations.name,
            member=member,
            opts=child,
        )
        gcp.serviceaccount.IAMMember(
            f"{name}-workload-identity",
            service_account_id=account_path,
            role=iam.WORKLOAD_IDENTITY_USER,
            member=iam.workload_identity_member(args.project, cfg.namespace, APP_NAME),
            opts=child,
        )
        return email

    def _service_account(
        self, name: str, args: HotswapControllerArgs, opts: pulumi.ResourceOptions
    ) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
        """The GSA's email and resource name: the one the stack names, else one of the controller's own."""
        identity = args.config.google_identity
        if identity is not None:
            named = identity.service_account
            return pulumi.Output.from_input(named), pulumi.Output.from_input(iam.service_account_path(named))
        gsa = gcp.serviceaccount.Account(
            f"{name}-gsa",
            account_id=iam.account_id(args.cluster_name),
            display_name=f"hotswap controller of {args.cluster_name}",
            description="Reads (and with the fence on, resets) the Compute Engine VMs behind suspect "
            "nodes through Workload Identity",
            project=args.project,
            opts=opts,
        )
        return gsa.email, gsa.name
