"""A discrete-event simulator of a GKE TPU v6e fleet built from a stack, to measure what the hotswap
controller buys over the guide's scheduler-only recipe and over Kueue 0.19's own recovery
(``kueue_tas``) on the same seeded failure trace. Every modelled behaviour is taken from upstream source
at the pinned versions and cited where it is modelled (and in docs/benchmarks.md).

Modules, one concern each:

- ``params``: every timing, with its default and source; the floors per failure kind.
- ``versions``: the stack's Kubernetes minor and the node-monitor-grace-period that follows.
- ``failures``: the failure kinds and their public (or chosen) rates.
- ``engine``: the event heap and the seeded generator (same seed, same run).
- ``model``: slices, nodes, pods, JobSets (``WorkloadSpec`` is what gets submitted).
- ``cluster``: the API server and kubelets: every change goes through it and is announced.
- ``infra``: incidents of every kind, NotReady, taint eviction, GKE's repair (whole pool), reboots.
- ``jobset``: JobSet/Job controllers: failure policy, restart strategy, followers, progress.
- ``scheduler``: kube-scheduler with exclusive placement and per-node preemption.
- ``kueue``: admission by quota and priority, cohort trees, preemption, waitForPodsReady, TAS placement.
- ``kueue_tas``: Kueue's TAS node controller with FailFast and FailureRecoveryPolicy (the policy).
- ``snapshot``: the cluster as a ``tpu_platform.hotswap.core.Snapshot``; the core's actions applied.
- ``policies``: ``Baseline`` (the recipe) and ``Hotswap`` (``tpu_platform.hotswap.core.decide``).
- ``metrics``: episodes (pods Running, training resumed), lost work, utilization.
- ``workload``: workload mixes from a stack or a file; the closed-loop backlog of long traces.
- ``run``: a ``Scenario`` plus a policy makes a ``Result``; ``compare_all`` runs the three.
- ``scenarios``: the seed document's scenarios as small stacks.
- ``timeline``: the PNG; ``whatif``: the ``tpu-platform whatif`` command; ``draws``: its seeded draws
  and their p50 and p95.

Typical use::

    from tpu_platform.sim.run import compare_all
    from tpu_platform.sim.scenarios import seed_scenario

    results = compare_all(seed_scenario(spare=False))
    print({name: r.summary.mttr_s for name, r in results.items()})
"""
