"""A stack file's problems in one run, each naming the file and the place and saying what to do:
keys written twice, the structure and the cross-field checks together, YAML slips in plain words,
and the key most likely meant for every unknown key."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.config.stack_problems import problems_of
from tpu_platform import cli
from tpu_platform.config import StackConfigError
from tpu_platform.plan.stacks import stack_config_from_text
from tpu_platform.policy.replacement import stack_acknowledgements

REPO_ROOT = Path(__file__).resolve().parents[2]
DEV = (REPO_ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
OVER_QUOTA = "nominal quotas for 4x4 add up to"


def _bad_copy(tmp_path: Path, old: str, new: str, count: int = 1) -> Path:
    """The dev stack with ``old`` replaced by ``new`` (``count`` times), as ``Pulumi.bad.yaml``."""
    assert DEV.count(old) >= count, old
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text(DEV.replace(old, new, count))
    return path


def _line_of(path: Path, text: str, nth: int = 1) -> int:
    """The 1-based line of the ``nth`` line of the file that starts with ``text``."""
    numbers = [i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(text)]
    return numbers[nth - 1]


def _validate(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = cli.main(["validate", str(path)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.splitlines()


# -- keys written twice ----------------------------------------------------------------------------


def test_a_key_written_twice_names_the_key_and_both_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _bad_copy(tmp_path, "      count: 2\n", "      count: 5\n      count: 2\n")
    first, again = _line_of(path, "      count: 5"), _line_of(path, "      count: 2")
    code, lines = _validate(path, capsys)
    assert code == 2
    assert lines == [
        f"stack bad: {path}:{again}:7: tpu-platform:slicePools[0].count: key 'count' is written twice "
        f"(lines {first} and {again}); the Pulumi CLI rejects a stack file with a duplicate key: keep one "
        "of them"
    ]


@pytest.mark.parametrize(
    ("text", "path", "lines"),
    [
        ("config:\n  gcp:zone: a\n  gcp:zone: b\n", "gcp:zone", (2, 3)),
        ("config:\n  cluster: {}\n  cluster: {}\n", "tpu-platform:cluster", (2, 3)),
        ("config: {}\nconfig: {}\n", "config", (1, 2)),
        (
            "config:\n  tpu-platform:teams:\n    - name: a\n      quota:\n        - slices: 1\n"
            "          slices: 2\n",
            "tpu-platform:teams[0].quota[0].slices",
            (5, 6),
        ),
    ],
    ids=["config-key", "bare-config-key", "root", "in-a-list"],
)
def test_duplicates_anywhere_in_the_file(text: str, path: str, lines: tuple[int, int]) -> None:
    with pytest.raises(StackConfigError) as err:
        stack_config_from_text(text, "s.yaml")
    (problem,) = err.value.problems
    assert problem.startswith(f"s.yaml:{lines[1]}:")
    assert f": {path}: key " in problem and f"(lines {lines[0]} and {lines[1]})" in problem


def test_every_repeat_is_reported_and_anchors_are_no_repeat() -> None:
    text = (
        "config:\n"
        "  tpu-platform:cluster: &c {name: a}\n"
        "  tpu-platform:kueue: {allowOvercommit: true, allowOvercommit: false, allowOvercommit: true}\n"
        "  tpu-platform:hotswap: {<<: *c, name: b, enabled: true}\n"
    )
    with pytest.raises(StackConfigError) as err:
        stack_config_from_text(text, "s.yaml")
    assert [p.split(": ", 2)[1] for p in err.value.problems] == ["tpu-platform:kueue.allowOvercommit"] * 2


def test_a_key_written_twice_comes_with_the_other_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _bad_copy(tmp_path, "      count: 2\n", "      count: 2\n      count: 2\n")
    path.write_text(path.read_text().replace("    releaseChannel: RAPID\n", "    releaseChanel: RAPID\n"))
    code, lines = _validate(path, capsys)
    assert code == 2 and len(lines) == 2, lines
    assert "key 'count' is written twice" in lines[0]
    assert "tpu-platform:cluster.releaseChanel: unknown key" in lines[1]


def test_every_reader_of_a_stack_file_refuses_a_key_written_twice(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.prod.yaml"
    stack.write_text("config:\n  tpu-platform:acknowledgeReplacement: [a]\n  acknowledgeReplacement: [b]\n")
    with pytest.raises(
        StackConfigError, match=r"tpu-platform:acknowledgeReplacement: key .* \(lines 2 and 3\)"
    ):
        stack_acknowledgements(stack)
    stack.write_text("config:\n  acknowledgeReplacement: [b]\n")
    assert stack_acknowledgements(stack) == ["b"]


# -- structure and checks in one run ---------------------------------------------------------------


def test_an_unknown_key_and_an_over_quota_team_come_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _bad_copy(tmp_path, "    releaseChannel: RAPID\n", "    releaseChanel: RAPID\n")
    path.write_text(path.read_text().replace("          slices: 1\n", "          slices: 3\n", 1))
    code, lines = _validate(path, capsys)
    assert code == 2 and len(lines) == 2, lines
    assert lines[0].startswith(f"stack bad: {path}: tpu-platform:cluster.releaseChanel: unknown key")
    assert lines[1].startswith(f"stack bad: {path}: tpu-platform:teams: {OVER_QUOTA} 4 slices")


TEAMS = [
    {"name": "a", "quota": [{"topology": "4x4", "slices": 3}]},
    {"name": "b", "quota": [{"topology": "4x4", "slices": 1}]},
]
DUPLICATE_PRIORITIES = [{"name": "p", "value": 1}, {"name": "p", "value": 2}]


def test_the_checks_run_on_the_sections_that_validated(stack: dict[str, Any]) -> None:
    stack["tpu-platform:cluster"]["releaseChanel"] = "RAPID"
    stack["tpu-platform:hotswap"] = {"replicas": "two"}
    stack["tpu-platform:teams"] = copy.deepcopy(TEAMS)
    stack["tpu-platform:priorities"] = DUPLICATE_PRIORITIES
    problems = problems_of(stack)
    assert [p.split(":")[1] for p in problems] == [
        "cluster.releaseChanel",  # structure first
        "hotswap.replicas",
        "priorities[1].name",  # then the checks of the sections that validated
        "teams",
    ]
    assert OVER_QUOTA in problems[-1]


@pytest.mark.parametrize(
    ("section", "value"),
    [
        ("tpu-platform:kueue", {"allowOvercommit": "no"}),
        ("tpu-platform:slicePools", [{"name": "train", "topology": "4x4", "count": "two"}]),
    ],
    ids=["optional-section", "required-section"],
)
def test_a_section_that_failed_leaves_out_the_checks_that_read_it(
    stack: dict[str, Any], section: str, value: Any
) -> None:
    """The capacity check reads the pools and kueue.allowOvercommit: with either broken it stays
    silent, while the priorities (which read neither) are still checked."""
    stack[section] = value
    stack["tpu-platform:teams"] = [TEAMS[0]]
    stack["tpu-platform:priorities"] = DUPLICATE_PRIORITIES
    problems = problems_of(stack)
    assert problems[0].startswith(section)
    assert any(p.startswith("tpu-platform:priorities[1].name:") for p in problems)
    assert not any(OVER_QUOTA in p for p in problems)


def test_an_undecodable_value_leaves_its_section_out_and_the_rest_checked(stack: dict[str, Any]) -> None:
    stack["tpu-platform:kueue"] = "allowOvercommit"  # text where a mapping belongs
    stack["tpu-platform:priorities"] = DUPLICATE_PRIORITIES
    problems = problems_of(stack)
    assert problems[0].startswith("tpu-platform:kueue: 'allowOvercommit' is not a structured value")
    assert [p.split(":")[1] for p in problems[1:]] == ["priorities[1].name"]


def test_a_fleet_worker_pool_with_an_unknown_key_keeps_the_fleet_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fleet = (REPO_ROOT / "stacks" / "Pulumi.fleet.yaml").read_text()
    old = "          - name: east-4x4\n            topology: 4x4\n"
    assert old in fleet
    path = tmp_path / "Pulumi.fleet.yaml"
    cohort = "    - name: fleet\n"
    assert fleet.count(cohort) == 1
    path.write_text(fleet.replace(old, old + "            zoen: us-east5-b\n").replace(cohort, cohort * 2))
    code, lines = _validate(path, capsys)
    assert code == 2
    assert "fleet.workers[0].slicePools[0].zoen: unknown key (did you mean 'zone'?)" in lines[0]
    assert lines[1].endswith(
        "tpu-platform:cohorts[1].name: cohort 'fleet' is also cohorts[0] (in cohort 'fleet')"
    )


# -- YAML slips in plain words ---------------------------------------------------------------------


def test_a_misindented_line_names_the_place_and_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _bad_copy(tmp_path, "      topology: 4x4\n", "     topology: 4x4\n")
    line = _line_of(path, "     topology: 4x4")
    code, lines = _validate(path, capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"stack bad: {path}:{line}:6: not valid YAML: ")
    assert lines[0].endswith(
        f"; check the indentation of line {line}: a key must line up with its siblings (the same number "
        "of spaces), and tabs are not allowed"
    )


@pytest.mark.parametrize(
    ("text", "where", "advice"),
    [
        ("config:\n\tgcp:zone: a\n", "s.yaml:2:1", "line 2 holds a tab: YAML indents with spaces only"),
        ("config:\n  gcp:zone: a\n    gcp:region: b\n", "s.yaml:3:15", "check the indentation of line 3"),
        ("config:\n  gcp:zone: a\n  gcp:region\n  a: b\n", "s.yaml:4:3", "line 3 is neither 'key: value'"),
        ("config:\n  gcp:zone: 'a\n", "s.yaml:3:1", "close the quote opened on line 2"),
        ("config:\n  tpu-platform:teams: [a, b\n", "s.yaml:3:1", "close the '[' opened on line 2 with ']'"),
        ("config:\n  gcp:zone: a\n---\nconfig: {}\n", "s.yaml:3:1", "keep one YAML document"),
    ],
    ids=["tab", "deeper-than-a-sibling", "no-colon", "open-quote", "open-bracket", "two-documents"],
)
def test_yaml_slips_say_what_to_change(text: str, where: str, advice: str) -> None:
    with pytest.raises(StackConfigError) as err:
        stack_config_from_text(text, "s.yaml")
    (problem,) = err.value.problems
    assert problem.startswith(f"{where}: not valid YAML: ") and advice in problem, problem


# -- the key most likely meant, at every level -----------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "path", "meant"),
    [
        ("tpu-platform:slicePool", [], "tpu-platform:slicePool: unknown stack key", "slicePools"),
        ("tpu-platform:priorites", [], "tpu-platform:priorites: unknown stack key", "priorities"),
        ("tpu-platform:cluster.releaseChanel", "RAPID", "tpu-platform:cluster.releaseChanel: unknown key",
         "releaseChannel"),
        ("tpu-platform:slicePools.0.capacity.reservaton", "r", "capacity.reservaton: unknown key",
         "reservation"),
        ("tpu-platform:hotswap.settings.unhealthyAfterSecond", 30,
         "tpu-platform:hotswap.settings.unhealthyAfterSecond: unknown key", "unhealthyAfterSeconds"),
    ],
    ids=["top-level", "top-level-2", "section", "nested", "hotswap-settings"],
)  # fmt: skip
def test_every_unknown_key_names_the_key_most_likely_meant(
    stack: dict[str, Any], key: str, value: Any, path: str, meant: str
) -> None:
    head, *rest = key.split(".")
    node: Any = stack
    for part in [head, *rest[:-1]]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    if rest:
        node[rest[-1]] = value
    else:
        stack[head] = value
    problems = [p for p in problems_of(stack) if "unknown" in p]
    assert len(problems) == 1 and path in problems[0], problems
    assert f"(did you mean {meant!r}?); remove it or fix its spelling; valid keys here: " in problems[0]
