"""etcd, kube-apiserver, kube-controller-manager and kube-scheduler as local processes on loopback.

Flags follow controller-runtime envtest (`pkg/internal/testing/controlplane/apiserver.go`,
`etcd.go`) and kwokctl's binary runtime (`pkg/kwokctl/components/kube_*.go`, kwok v0.8.0). The
API server runs with Node and RBAC authorization, service-account keys and issuer, and the admission
plugins of kube-apiserver's default set plus two that GKE runs: ``NodeRestriction`` and
``ExtendedResourceToleration`` (pods that request ``google.com/tpu`` get the toleration of the TPU
nodes' ``google.com/tpu`` taint from GKE, `../shared/reference/tpu-v6e-and-gke.md`; that plugin is
upstream's way of adding exactly that toleration, `plugin/pkg/admission/extendedresourcetoleration`);
ValidatingAdmissionPolicy is GA and on by default since Kubernetes 1.30. The controller manager
runs every default controller (node lifecycle, job, disruption, garbage collector, pod GC, ...)
at upstream's default timings unless a caller passes its own flags.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .pki import CertificateAuthority, KeyPair, service_account_keys
from .process import Process, ProcessGroup, StartError, address_in_use, free_port, https_ok

# kube-apiserver's default admission plugins (pkg/kubeapiserver/options/plugins.go,
# DefaultOffAdmissionPlugins is the complement) plus NodeRestriction and ExtendedResourceToleration.
ADMISSION_PLUGINS = (
    "NamespaceLifecycle,LimitRanger,ServiceAccount,TaintNodesByCondition,PodSecurity,Priority,"
    "DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,"
    "RuntimeClass,CertificateApproval,CertificateSigning,ClusterTrustBundleAttest,CertificateSubjectRestriction,"
    "DefaultIngressClass,MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,"
    "ResourceQuota,NodeRestriction,ExtendedResourceToleration"
)
SERVICE_CIDR = "10.0.0.0/24"
ISSUER = "https://kubernetes.default.svc.cluster.local"


def kubeconfig_text(
    server: str, ca_pem: bytes, *, user: str, cert: KeyPair | None = None, token: str = ""
) -> str:
    """A kubeconfig for one user: a client certificate or a bearer token."""
    auth: dict[str, str] = {"token": token} if token else {}
    if cert is not None:
        auth = {"client-certificate": str(cert.cert), "client-key": str(cert.key)}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "live",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": auth}],
        "contexts": [{"name": "live", "context": {"cluster": "live", "user": user}}],
        "current-context": "live",
    }
    return yaml.safe_dump(doc, sort_keys=False)


@dataclass
class ControlPlane:
    """The four Kubernetes processes of one test session, in ``workdir``; ``stop()`` ends them."""

    binaries: dict[str, Path]
    workdir: Path
    controller_manager_flags: tuple[str, ...] = ()
    group: ProcessGroup = field(default_factory=ProcessGroup)

    def __post_init__(self) -> None:
        self.pki = CertificateAuthority(self.workdir / "pki")
        self.api_port = free_port()
        self.url = f"https://127.0.0.1:{self.api_port}"
        self.admin = self.pki.issue(
            "admin", common_name="live-admin", organizations=("system:masters",), client=True
        )
        self.admin_kubeconfig = self.workdir / "admin.kubeconfig"
        self.admin_kubeconfig.write_text(
            kubeconfig_text(self.url, self.pki.pem(), user="admin", cert=self.admin)
        )

    def _move_api_port(self) -> None:
        """Another process bound the API server's port first: drop the failed process, take a new
        port and point the admin kubeconfig at it (nothing else has read it before the start)."""
        self.group.processes[:] = [p for p in self.group.processes if p.name != "kube-apiserver"]
        self.api_port = free_port()
        self.url = f"https://127.0.0.1:{self.api_port}"
        self.admin_kubeconfig.write_text(
            kubeconfig_text(self.url, self.pki.pem(), user="admin", cert=self.admin)
        )

    def _logs(self, name: str) -> Path:
        return self.workdir / "logs" / f"{name}.log"

    def user_kubeconfig(self, name: str, *, user: str, groups: tuple[str, ...] = ()) -> Path:
        """A kubeconfig authenticating as ``user`` in ``groups`` by a client certificate."""
        pair = self.pki.issue(name, common_name=user, organizations=groups, client=True)
        path = self.workdir / f"{name}.kubeconfig"
        path.write_text(kubeconfig_text(self.url, self.pki.pem(), user=name, cert=pair))
        return path

    def token_kubeconfig(self, name: str, token: str) -> Path:
        path = self.workdir / f"{name}.kubeconfig"
        path.write_text(kubeconfig_text(self.url, self.pki.pem(), user=name, token=token))
        return path

    def start(self) -> ControlPlane:
        try:
            self._start_etcd()
            for attempt in range(3):
                try:
                    self._start_apiserver()
                    break
                except StartError as err:
                    if attempt == 2 or not address_in_use(err):
                        raise
                    self._move_api_port()
            self._start_controller_manager()
            self._start_scheduler()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        self.group.stop_all()

    def _start_etcd(self) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        proc = Process(
            "etcd",
            [
                str(self.binaries["etcd"]),
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=default=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
            self._logs("etcd"),
        )
        self.group.add(proc).start().wait_ready(https_ok(f"{self.etcd_url}/health"), 60)

    def _start_apiserver(self) -> None:
        serving = self.pki.issue(
            "apiserver",
            common_name="kube-apiserver",
            hosts=("127.0.0.1", "localhost", "10.0.0.1", "kubernetes", "kubernetes.default.svc"),
            server=True,
        )
        self.sa_keys = service_account_keys(self.workdir / "pki")
        # The front proxy's CA and client: aggregated API servers (Kueue's visibility server)
        # authenticate the API server's proxied requests by it, as on any cluster.
        proxy = self.pki.issue("front-proxy-client", common_name="front-proxy-client", client=True)
        proc = Process(
            "kube-apiserver",
            [
                str(self.binaries["kube-apiserver"]),
                f"--etcd-servers={self.etcd_url}",
                "--advertise-address=127.0.0.1",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.api_port}",
                f"--tls-cert-file={serving.cert}",
                f"--tls-private-key-file={serving.key}",
                f"--client-ca-file={self.pki.cert}",
                "--authorization-mode=Node,RBAC",
                f"--enable-admission-plugins={ADMISSION_PLUGINS}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                f"--service-account-issuer={ISSUER}",
                f"--service-account-key-file={self.sa_keys.cert}",
                f"--service-account-signing-key-file={self.sa_keys.key}",
                f"--requestheader-client-ca-file={self.pki.cert}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={proxy.cert}",
                f"--proxy-client-key-file={proxy.key}",
                "--endpoint-reconciler-type=none",
                "--enable-priority-and-fairness=false",
                "--v=1",
            ],
            self._logs("kube-apiserver"),
        )
        self.group.add(proc).start().wait_ready(
            https_ok(f"{self.url}/readyz", ca=self.pki.cert, cert=(self.admin.cert, self.admin.key)), 90
        )

    def _common(self, name: str) -> list[str]:
        return [
            f"--kubeconfig={self.admin_kubeconfig}",
            f"--authentication-kubeconfig={self.admin_kubeconfig}",
            f"--authorization-kubeconfig={self.admin_kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={free_port()}",
            f"--cert-dir={self.workdir / name}",
            "--leader-elect=false",
            "--v=1",
        ]

    def _start_controller_manager(self) -> None:
        args = [
            str(self.binaries["kube-controller-manager"]),
            *self._common("kube-controller-manager"),
            f"--service-account-private-key-file={self.sa_keys.key}",
            f"--root-ca-file={self.pki.cert}",
            "--use-service-account-credentials=true",
            f"--cluster-signing-cert-file={self.pki.cert}",
            f"--cluster-signing-key-file={self.pki.key}",
            "--allocate-node-cidrs=false",
            *self.controller_manager_flags,
        ]
        proc = self.group.add(Process("kube-controller-manager", args, self._logs("kube-controller-manager")))
        port = next(a.split("=")[1] for a in args if a.startswith("--secure-port="))
        proc.start().wait_ready(https_ok(f"https://127.0.0.1:{port}/healthz"), 60)

    def _start_scheduler(self) -> None:
        args = [str(self.binaries["kube-scheduler"]), *self._common("kube-scheduler")]
        proc = self.group.add(Process("kube-scheduler", args, self._logs("kube-scheduler")))
        port = next(a.split("=")[1] for a in args if a.startswith("--secure-port="))
        proc.start().wait_ready(https_ok(f"https://127.0.0.1:{port}/healthz"), 60)
