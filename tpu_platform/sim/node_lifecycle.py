"""When the node lifecycle controller marks a silent node NotReady (kube-controller-manager's
``monitorNodeHealth``), apart from the rest of the infrastructure so the calibration can use it too."""

from __future__ import annotations

import math

from tpu_platform.sim.params import Timings


def not_ready_after(now: float, last_renewal: float, t: Timings) -> float:
    """Seconds from ``now`` until the node lifecycle controller marks a node silent since
    ``last_renewal`` NotReady. kubernetes v1.34.12 ``pkg/controller/nodelifecycle/
    node_lifecycle_controller.go``: ``monitorNodeHealth`` runs every ``nodeMonitorPeriod``; a pass
    that sees a new Lease renewal sets ``probeTimestamp = nc.now()`` (``tryUpdateNodeHealth``), and
    the first pass after ``probeTimestamp + gracePeriod`` sets Ready=Unknown. So NotReady comes
    40-55 s after the kubelet falls silent (renewals every 10 s, passes every 5 s, grace 50 s), as
    the live tier measures (43-54 s over its runs), not always 50 s after it."""
    period = t.node_monitor_period_s
    seen = math.ceil(last_renewal / period - 1e-9) * period if period > 0 else last_renewal
    return max(0.0, seen + t.node_monitor_grace_s - now)
