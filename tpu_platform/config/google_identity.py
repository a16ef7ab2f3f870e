"""The controller's Google access on a kubeconfig-mode stack that names its Google identity
(``hotswap.googleIdentity``): whom it is for and on what, as :mod:`tpu_platform.hotswap.iam_commands`
writes it out and the components register it."""

from __future__ import annotations

from ..hotswap import iam
from ..hotswap.iam_commands import GoogleAccess
from .platform import PlatformConfig


def named_google_access(cfg: PlatformConfig) -> GoogleAccess | None:
    """The access the stack's named identity needs; None unless the controller corroborates with
    one on a cluster reached by kubeconfig."""
    hotswap = cfg.hotswap
    identity = hotswap.google_identity
    if identity is None or not (hotswap.enabled and hotswap.compute_corroboration):
        return None
    if not cfg.cluster.reached_by_kubeconfig or cfg.fleet is not None:
        return None
    return GoogleAccess(
        project=cfg.project,
        cluster=cfg.cluster.name,
        location=identity.cluster_location or cfg.region,
        network=iam.cluster_network(cfg.project, identity.network),
        namespace=hotswap.namespace,
        service_account=identity.service_account,
        resets=hotswap.resets_vms,
        node_pools=tuple(name for pool in cfg.slice_pools for name in pool.pool_names()),
    )
