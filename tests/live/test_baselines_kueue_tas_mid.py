"""``kueue_tas`` at the simulator's default 30 s tolerations (the mid configuration), beside the
strongest one of ``test_baselines_kueue_tas.py``: a silent host death, on its own install."""

from __future__ import annotations

from tests.live.cluster import LiveCluster
from tests.live.cluster import incidents as inc
from tests.live.cluster import kueue_tas as tas_setup
from tests.live.cluster.figures import Report


def test_kueue_tas_silent_host_death_at_30_s_tolerations(live: LiveCluster, report: Report) -> None:
    tas_setup.install(live)
    inc.fresh_teams(live, tas_setup.jobsets(tas_setup.MID_S))
    tas_setup.silent_host_death_waits(live, report, f"kueue_tas (tolerations {tas_setup.MID_S} s)")
