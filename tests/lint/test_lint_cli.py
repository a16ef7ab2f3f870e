"""``tpu-platform lint``, context files, and the rule reference in docs/linter.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tpu_platform.cli import main
from tpu_platform.lint import RULES, ContextError, context_from_data, load_context
from tpu_platform.plan import list_stacks

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "jobsets"
CONTEXT = str(EXAMPLES / "seed-context.yaml")
FIXED = [str(EXAMPLES / "low-jax-trillium.yaml"), str(EXAMPLES / "high-jax-trillium.yaml")]
ORIGINAL = str(EXAMPLES / "seed-originals" / "low-jax-trillium.yaml")


def test_clean_files_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    for fixed in FIXED:
        assert main(["lint", fixed, "--context", CONTEXT]) == 0
        out = capsys.readouterr().out
        assert "0 error(s), 0 warning(s)" in out
        assert "blocking-recreate" in out


def test_two_jobsets_that_each_need_the_whole_queue_cannot_run_together(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["lint", *FIXED, "--context", CONTEXT]) == 0
    out = capsys.readouterr().out
    assert "0 error(s), 2 warning(s)" in out
    assert out.count("queue-quota-together") == 2
    assert "need 64 google.com/tpu together" in out and "holds at most 32" in out
    assert main(["lint", *FIXED, "--context", CONTEXT, "--fail-on", "warning"]) == 1


def test_errors_exit_one_and_are_explained(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", ORIGINAL, "--context", CONTEXT]) == 1
    out = capsys.readouterr().out
    assert 'error   queue-as-annotation  metadata.annotations["kueue.x-k8s.io/queue-name"]' in out
    assert "fix: move it to metadata.labels: `kueue.x-k8s.io/queue-name: default-queue`" in out


def test_fail_on_warning(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    manifest = tmp_path / "jobset.yaml"
    manifest.write_text(
        (EXAMPLES / "high-jax-trillium.yaml").read_text().replace("tpu-platform.dev/hotswap: enabled", "")
    )
    assert main(["lint", str(manifest), "--context", CONTEXT]) == 0
    assert main(["lint", str(manifest), "--context", CONTEXT, "--fail-on", "warning"]) == 1
    assert "hotswap-opt-in" in capsys.readouterr().out


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", ORIGINAL, "--context", CONTEXT, "--format", "json", "--no-schema"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert {row["file"] for row in rows} == {ORIGINAL}
    assert {"rule", "severity", "path", "message", "fix", "document", "name"} <= set(rows[0])
    assert "queue-as-annotation" in {row["rule"] for row in rows}


def test_namespace_option_applies_to_manifests_without_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    manifest = tmp_path / "jobset.yaml"
    manifest.write_text(
        (EXAMPLES / "high-jax-trillium.yaml").read_text().replace("  namespace: default\n", "")
    )
    assert main(["lint", str(manifest), "--context", CONTEXT]) == 0
    assert main(["lint", str(manifest), "--context", CONTEXT, "-n", "research"]) == 1
    assert "no LocalQueue 'default-queue' in namespace 'research'" in capsys.readouterr().out


def test_bad_input_exits_two(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["lint", str(tmp_path / "missing.yaml"), "--context", CONTEXT]) == 2
    assert main(["lint", *FIXED, "--context", str(tmp_path / "missing.yaml")]) == 2
    err = capsys.readouterr().err
    assert "missing.yaml" in err


def test_stack_context(capsys: pytest.CaptureFixture[str]) -> None:
    if "seed" not in list_stacks():
        pytest.skip("no seed stack")
    assert main(["lint", *FIXED, "--stack", "seed"]) == 0
    assert main(["lint", ORIGINAL, "--stack", "seed"]) == 1
    assert main(["lint", *FIXED, "--stack", "no-such-stack"]) == 2
    assert "no-such-stack" in capsys.readouterr().err


def test_context_and_stack_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["lint", *FIXED, "--context", CONTEXT, "--stack", "seed"])
    with pytest.raises(SystemExit):
        main(["lint", *FIXED])


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"slicePools": [{"topology": "3x3"}]}, "3x3"),
        ({"localQueues": [{"name": "q", "clusterQueue": "cq"}]}, "undefined clusterQueues: cq"),
        ({"localQueue": []}, "localQueue"),
        (
            {"clusterQueues": {"cq": {"flavors": [{"name": "f", "topology": "4x4", "tpuQuota": -1}]}}},
            "tpuQuota",
        ),
    ],
)
def test_context_errors_name_the_problem(data: dict[str, object], fragment: str) -> None:
    with pytest.raises(ContextError, match=re.escape(fragment)):
        context_from_data(data, "ctx.yaml")


def test_context_files_in_json_and_yaml(tmp_path: Path) -> None:
    data = {
        "localQueues": [{"namespace": "ml", "name": "q", "clusterQueue": "cq"}],
        "clusterQueues": {
            "cq": {"flavors": [{"name": "f", "topology": "2x4", "multiHost": True, "tpuQuota": 8}]}
        },
        "slicePools": [{"topology": "2x4", "multiHost": True, "count": 3}],
    }
    path = tmp_path / "ctx.json"
    path.write_text(json.dumps(data))
    ctx = load_context(path)
    (shape,) = ctx.cluster_slices
    assert (shape.topology, shape.vms, ctx.cluster_slices[shape]) == ("2x4", 2, 3)
    assert ctx.local_queues[("ml", "q")].quota_chips(shape) == 8
    bad = tmp_path / "ctx.yaml"
    bad.write_text("- a list\n")
    with pytest.raises(ContextError, match="mapping"):
        load_context(bad)


def test_docs_describe_every_rule() -> None:
    text = (REPO / "docs" / "linter.md").read_text()
    documented = set(re.findall(r"^### `([a-z0-9-]+)`", text, flags=re.MULTILINE))
    assert documented == set(RULES)
    for rule_id in RULES:
        section = text.split(f"### `{rule_id}`", 1)[1].split("\n### ", 1)[0]
        assert "Why" in section and "Fix" in section, rule_id
