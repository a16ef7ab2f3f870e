"""Compute Engine carrying out the controller's resets of silent VMs (``core/vm_evidence.py`` decides).

A reset's Operation is ``DONE`` ``Timings.compute_reset_s`` after the call (chosen: not published),
for a hung guest and for a VM whose dead host Compute Engine has not noticed yet alike. Then nothing
of the guest that ran is left: the node's pods are gone with it, and its kubelet registers again after
``Timings.vm_boot_s`` with no containers (a VM on a dead host is restarted elsewhere). A kubelet that
was about to return from a restart does not: the reset reboots it first.
"""

from __future__ import annotations

from tpu_platform.sim.cluster import Cluster
from tpu_platform.sim.infra import Infra


class VmResets:
    def __init__(self, cluster: Cluster, infra: Infra) -> None:
        self.c = cluster
        self.infra = infra
        self.sent = 0
        cluster.reset_vm = self.send

    def send(self, name: str) -> None:
        """One ``instances.reset``; a repeated call while one is pending is the same request."""
        node = self.c.nodes.get(name)
        if node is None or (node.reset_sent_at is not None and not node.reset_done):
            return
        self.sent += 1
        node.reset_sent_at, node.reset_done = self.c.now, False
        self.c.engine.after(self.c.t.compute_reset_s, "vm-reset-done", self._done, name, self.c.now)

    def _done(self, name: str, sent: float) -> None:
        node = self.c.nodes.get(name)
        if node is None or node.reset_sent_at != sent:
            return
        node.reset_done = True
        if node.vm_running:
            node.vm_running, node.vm_down_at = False, self.c.now
        inc = self.infra.silence(node)
        self.c.engine.after(self.c.t.vm_boot_s, "vm-booted", self.infra.kubelet_back, name, inc, False)
