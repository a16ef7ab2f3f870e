"""``whatif`` simulates the controller as the stack configures it: a kubeconfig-mode stack without a
Google identity has no Compute Engine corroboration, recovers a silent host death no faster than the
recipe, and is told in one line what corroboration would give and which key turns it on; with
``hotswap.googleIdentity`` it recovers as the GKE mode does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.sim.test_sim_whatif import SPREAD, _seconds
from tpu_platform.cli import main
from tpu_platform.hotswap.core import Settings
from tpu_platform.plan import stack_file
from tpu_platform.sim.without_compute import lacks_corroboration

HIGH = "research/research-4x4-high"


def _whatif(stack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert main(["whatif", stack, "--draws", "3", "--out", str(tmp_path), *extra]) == 0
    return capsys.readouterr().out


def _row(out: str) -> tuple[int, int, int]:
    row = re.search(rf"{HIGH}\s+{SPREAD}\s+{SPREAD}\s+{SPREAD}", out)
    assert row, out
    recipe, kueue_tas, hotswap = (_seconds(d) for d in row.groups()[::2])
    return recipe, kueue_tas, hotswap


def test_without_an_identity_the_figure_is_the_recipes_and_one_line_says_what_is_lost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _whatif("local", tmp_path, capsys)
    recipe, _, hotswap = _row(out)
    assert hotswap == recipe, "no force deletion without corroboration: the dead host's pods wait for repair"
    line = re.search(
        rf"hotswap runs without Compute Engine corroboration, .*: {HIGH} Running after {SPREAD}; "
        rf"with it {SPREAD} \(set hotswap\.googleIdentity and computeCorroboration: true\)",
        out,
    )
    assert line, out
    now, with_it = _seconds(line.group(1)), _seconds(line.group(3))
    assert now == hotswap and with_it < recipe / 3


def test_with_an_identity_the_mode_recovers_as_the_gke_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = yaml.safe_load(stack_file("local").read_text())
    hotswap = doc["config"]["tpu-platform:hotswap"]
    hotswap["computeCorroboration"] = True
    hotswap["googleIdentity"] = {
        "serviceAccount": "tpu-local-hotswap@my-tpu-project-dev.iam.gserviceaccount.com"
    }
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "Pulumi.local.yaml").write_text(yaml.safe_dump(doc))
    kubeconfig = _row(_whatif("local", tmp_path, capsys, "--stacks-dir", str(stacks)))
    out = _whatif("dev", tmp_path, capsys)
    assert "without Compute Engine corroboration" not in out
    gke = _row(out)
    assert kubeconfig[2] == gke[2] < kubeconfig[0] / 3, "the GKE mode's recovery, well under the recipe's"


def test_only_a_controller_that_can_never_force_delete_lacks_it() -> None:
    assert lacks_corroboration(Settings(compute_corroboration=False))
    assert not lacks_corroboration(Settings(compute_corroboration=False, force_delete_unconfirmed=True))
    assert not lacks_corroboration(Settings(compute_corroboration=True))
