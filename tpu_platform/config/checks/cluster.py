"""Checks of the ``cluster`` section: adopted clusters, GKE versions, authorized networks."""

from __future__ import annotations

import ipaddress
import re

from ... import catalog
from ..platform import PlatformConfig
from ..problems import Loc, Problems


def parse_version(version: str) -> tuple[int, ...] | None:
    """``1.31.2-gke.1115000`` -> ``(1, 31, 2, 1115000)``; None for aliases like ``latest``."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-gke\.(\d+))?$", version)
    if not match:
        return None
    return tuple(int(g) if g is not None else 0 for g in match.groups())


def check_cluster(cfg: PlatformConfig) -> Problems:
    """Creation-only keys on an adopted cluster, TPU-capable GKE versions, IPv4 CIDRs."""
    problems = Problems()
    cluster = cfg.cluster
    if cluster.mode in ("adopt", "kubeconfig"):
        for key in cluster.creation_only_fields_set():
            problems.add(
                ("cluster", key),
                "only applies when the platform creates the cluster (mode: create); "
                f"remove it with mode: {cluster.mode}",
            )
    if cluster.reached_by_kubeconfig:
        for key, value in (
            ("location", cluster.location),
            ("controlPlaneAccess", cluster.control_plane_access),
        ):
            if value is not None:
                problems.add(
                    ("cluster", key),
                    "mode: kubeconfig reaches the cluster through its kubeconfig and context; remove it",
                )
    for key, value in (("kubeconfig", cluster.kubeconfig), ("context", cluster.context)):
        if value is not None and not cluster.reached_by_kubeconfig:
            problems.add(
                ("cluster", key),
                "only applies with mode: kubeconfig; remove it, or set mode: kubeconfig to run only the "
                "Kubernetes half on an existing cluster",
            )
    if cluster.min_master_version:
        check_tpu_version(("cluster", "minMasterVersion"), cluster.min_master_version, problems)
    return problems


def check_tpu_version(loc: Loc, version: str, problems: Problems) -> None:
    """Versions older than the first GKE release with TPU v6e on Standard clusters."""
    parsed = parse_version(version)
    minimum = parse_version(catalog.MIN_GKE_VERSION)
    if parsed is not None and minimum is not None and parsed < minimum:
        problems.add(
            loc,
            f"TPU v6e on GKE Standard needs GKE {catalog.MIN_GKE_VERSION} or later; got {version!r}",
        )


def _check_ip_endpoint(cfg: PlatformConfig, problems: Problems) -> None:
    """The IP endpoint mode against how pulumi up reaches the cluster and what private nodes need."""
    cluster = cfg.cluster
    mode = cluster.ip_endpoint_mode
    loc: Loc = ("cluster", "ipEndpoint")
    if mode == "off" and cluster.private_nodes:
        problems.add(
            loc,
            "private nodes need the control plane's private endpoint (the firewall rule for the "
            "webhooks takes it as its source); use ipEndpoint: internal",
        )
    if mode == "off" and cluster.access == "ip":
        problems.add(loc, "controlPlaneAccess: ip needs the IP endpoint; use internal or public")
    if mode == "off" and cluster.master_authorized_cidrs:
        problems.add(
            ("cluster", "masterAuthorizedCidrs"),
            "authorize networks on no endpoint: ipEndpoint is off; remove them or set ipEndpoint: internal",
        )


def check_network(cfg: PlatformConfig) -> Problems:
    """A control plane ``pulumi up`` can reach, and NAT for private nodes."""
    problems = Problems()
    cluster = cfg.cluster
    cidrs = cluster.master_authorized_cidrs or []
    if cluster.mode == "create":
        _check_ip_endpoint(cfg, problems)
    if cluster.access == "ip" and cidrs and all(ipaddress.IPv4Network(c).is_private for c in cidrs):
        problems.add(
            ("cluster", "masterAuthorizedCidrs"),
            f"only private ranges ({', '.join(cidrs)}) may reach the IP endpoint, so pulumi up from a laptop "
            "or CI runner times out on every Kubernetes object; set controlPlaneAccess: dns (GKE's "
            "IAM-authorized DNS endpoint) or add the runner's public CIDR",
        )
    if cluster.mode != "create":
        return problems
    nat = cluster.nat
    if cluster.private_nodes and cluster.nat_mode() == "none":
        problems.add(
            ("cluster", "nat", "mode"),
            "private nodes have no external IPs, so Kueue's and JobSet's images from registry.k8s.io never "
            "pull without Cloud NAT; use mode: create, or mode: existing with the router's name",
        )
    if nat is not None and not cluster.private_nodes and nat.mode != "none":
        problems.add(
            ("cluster", "nat"),
            "nodes with external IPs need no Cloud NAT; remove nat or set privateNodes: true",
        )
    if nat is not None and nat.mode == "existing" and nat.router is None:
        problems.add(("cluster", "nat", "router"), "mode: existing needs the existing Cloud Router's name")
    if nat is not None and nat.mode != "existing" and nat.router is not None:
        problems.add(("cluster", "nat", "router"), "only applies to mode: existing; remove it")
    if cluster.master_ipv4_cidr_block is not None and not cluster.private_nodes:
        problems.add(
            ("cluster", "masterIpv4CidrBlock"),
            "only applies to private clusters; remove it or set privateNodes: true",
        )
    if cluster.webhook_source_ranges is not None and not cluster.private_nodes:
        problems.add(
            ("cluster", "webhookSourceRanges"),
            "only applies to private nodes (the webhook firewall rule); remove it or set privateNodes: true",
        )
    return problems


# GKE maintenance rules (https://cloud.google.com/kubernetes-engine/docs/maintenance-window): a window
# must allow at least 48 hours of maintenance in any 32 days, counting only contiguous windows of at
# least 4 hours; a "no upgrades" exclusion lasts at most 30 days
# (https://cloud.google.com/kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions).
MIN_WINDOW_HOURS = 4
MIN_HOURS_PER_32_DAYS = 48
MAX_NO_UPGRADES_DAYS = 30


def check_maintenance(cfg: PlatformConfig) -> Problems:
    """A window GKE accepts, exclusions that end after they start, no node auto-upgrade opt-out."""
    problems = Problems()
    if cfg.cluster.mode == "create":
        for index, pool in enumerate(cfg.slice_pools):
            if not pool.auto_upgrade:
                problems.add(
                    ("slicePools", index, "autoUpgrade"),
                    "GKE rejects autoUpgrade: false on a cluster with a release channel (every created "
                    "cluster has one); to keep upgrades away from a training run, add "
                    "tpu-platform:cluster.maintenance.exclusions with scope NO_MINOR_OR_NODE_UPGRADES",
                )
    maintenance = cfg.cluster.maintenance
    if maintenance is None:
        return problems
    window = maintenance.window
    here: Loc = ("cluster", "maintenance", "window")
    if window is not None:
        hours = window.hours()
        if hours <= 0:
            problems.add((*here, "end"), "must be after start")
        elif hours < MIN_WINDOW_HOURS:
            problems.add(
                (*here, "end"),
                f"a {hours:g} h window does not count for GKE (only windows of at least {MIN_WINDOW_HOURS} h "
                "do); make it longer",
            )
        elif hours > 24:
            problems.add((*here, "end"), "a recurring window lasts at most a day; shorten it")
        elif hours * window.occurrences_per_32_days() < MIN_HOURS_PER_32_DAYS:
            problems.add(
                here,
                f"{hours:g} h x {window.occurrences_per_32_days()} occurrences leaves less than the "
                f"{MIN_HOURS_PER_32_DAYS} h of maintenance in 32 days GKE requires; add days or hours",
            )
    names: dict[str, int] = {}
    for index, exclusion in enumerate(maintenance.exclusions):
        loc: Loc = ("cluster", "maintenance", "exclusions", index)
        if exclusion.name in names:
            problems.add((*loc, "name"), f"{exclusion.name!r} is also exclusions[{names[exclusion.name]}]")
        names.setdefault(exclusion.name, index)
        days = exclusion.days()
        if days <= 0:
            problems.add((*loc, "end"), "must be after start")
        elif exclusion.scope == "NO_UPGRADES" and days > MAX_NO_UPGRADES_DAYS:
            problems.add(
                (*loc, "end"),
                f"a NO_UPGRADES exclusion lasts at most {MAX_NO_UPGRADES_DAYS} days (this one {days:g}); "
                "use NO_MINOR_OR_NODE_UPGRADES for a longer campaign",
            )
    return problems
