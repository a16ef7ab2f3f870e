"""What a controller without Compute Engine corroboration loses on a stack's own scenario.

``whatif`` simulates the controller as the stack deploys it. Without corroboration (a kubeconfig-mode
stack that names no Google identity, or one that turned it off) it never force-deletes a silent node's
pods, so a silent host death waits for GKE's repair as under the recipe; this reruns the controller
with corroboration on over the same draws and says, in one line, what that costs and which key gets
it back (``hotswap.googleIdentity`` on a kubeconfig-mode cluster, ``hotswap.computeCorroboration``
elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from tpu_platform.hotswap.core import Settings
from tpu_platform.sim.draws import Draw, PolicyDraw, Sample, reduce
from tpu_platform.sim.policies import Hotswap
from tpu_platform.sim.run import Scenario, run


def lacks_corroboration(settings: Settings) -> bool:
    """The controller can never force-delete a silent node's pods: no Compute Engine evidence, and no
    opt-in to force-delete without it."""
    return not settings.compute_corroboration and not settings.force_delete_unconfirmed


def with_corroboration(scenario: Scenario, seed: int) -> PolicyDraw:
    """The controller with Compute Engine corroboration on, the stack's other settings kept."""
    settings = scenario.settings.model_copy(update={"compute_corroboration": True})
    result = run(replace(scenario, seed=seed, settings=settings), Hotswap(settings))
    return reduce(result, scenario.end)


def lost_line(
    draws: Sequence[Draw],
    corroborated: Sequence[PolicyDraw],
    spread: Callable[[Sequence[Sample]], str],
    *,
    kubeconfig: bool,
) -> str:
    """One line: the first high-priority JobSet's recovery under the controller as configured and
    with corroboration, over the same draws (``spread`` prints a figure), and the key that turns
    corroboration on."""
    keys = sorted({k for d in draws for k in d.policies["hotswap"].running})
    key = (
        "hotswap.googleIdentity and computeCorroboration: true"
        if kubeconfig
        else "hotswap.computeCorroboration: true"
    )
    if not keys:
        return f"hotswap runs without Compute Engine corroboration; {key} turns it on"
    top = keys[0]
    now = [d.policies["hotswap"].running[top] for d in draws if top in d.policies["hotswap"].running]
    then = [c.running[top] for c in corroborated if top in c.running]
    return (
        f"hotswap runs without Compute Engine corroboration, so a dead host's pods wait for GKE's repair: "
        f"{top} Running after {spread(now)}; with it {spread(then) if then else 'not hit'} (set {key})"
    )
