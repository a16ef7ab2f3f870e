"""A discrete-event simulator of a GKE TPU v6e fleet built from a stack, to measure what the hotswap
controller buys over the scheduler-only recipe on the same seeded failure trace.

Modules, one concern each:

- ``params``: every timing, with its default and source; ``floor_seconds``.
- ``engine``: the event heap and the seeded generator (same seed, same run).
- ``model``: slices, nodes, pods, JobSets (``WorkloadSpec`` is what gets submitted).
- ``cluster``: the API server and kubelets: every change goes through it and is announced.
- ``infra``: node failures, NotReady, taint eviction, GKE auto-repair (whole pool), reboots.
- ``jobset``: JobSet/Job controllers: failure policy, restart strategy, followers, progress.
- ``scheduler``: kube-scheduler with exclusive placement and per-node preemption.
- ``kueue``: admission by quota and priority, cohorts, preemption.
- ``snapshot``: the cluster as a ``tpu_platform.hotswap.core.Snapshot``; the core's actions applied.
- ``policies``: ``Baseline`` (no controller) and ``Hotswap`` (``tpu_platform.hotswap.core.decide``).
- ``metrics``: MTTR episodes, lost work, utilization.
- ``workload``: workload mixes from a stack or a file; the closed-loop backlog of long traces.
- ``run``: a ``Scenario`` plus a policy makes a ``Result``; ``compare`` runs both.
- ``scenarios``: the seed document's scenarios as small stacks.
- ``timeline``: the PNG; ``whatif``: the ``tpu-platform whatif`` command.

Typical use::

    from tpu_platform.sim.run import compare
    from tpu_platform.sim.scenarios import seed_scenario

    baseline, hotswap = compare(seed_scenario(spare=False))
    print(baseline.summary.mttr_s, hotswap.summary.mttr_s)
"""
