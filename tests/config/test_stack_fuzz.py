"""Fuzzing the stack model: mutated stack files either pass or fail with ``StackConfigError``.

Every example stack is mutated at a random place (a value replaced by hostile data of another
type, a key dropped or added) and read the way ``pulumi up`` and ``validate`` read it. Any other
exception is a crash. A rejected stack must register nothing: the program runs under Pulumi's
mocks and the recording monitor must stay empty.
"""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tpu_platform.components.program import read_platform_config, stack_program

from tpu_platform.config import StackConfigError
from tpu_platform.plan import list_stacks, load_stack_config, parse_stack_config, stack_file
from tpu_platform.plan.harness import config_values, render
from tpu_platform.plan.stacks import stack_config_from_text

STACKS = {name: load_stack_config(stack_file(name)) for name in list_stacks()}

# Values people and tools put where they do not belong: other types, padded numbers, huge sizes.
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([0, -1, 2**63, 2**31, 1e308, float("inf"), 0.5]),
    st.sampled_from(
        [" 2 ", "", " ", "0s", "-1s", "9Ti", "1Mi", "Bad Key!", "mars-north1-a", "999.999.999.999/99"]
    ),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=6), st.integers(), max_size=2),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a stack's config map a mutation can land."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _mutate(config: dict[str, Any], path: tuple[Any, ...], action: str, value: Any) -> dict[str, Any]:
    mutant = copy.deepcopy(config)
    parent: Any = mutant
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if action == "replace":
        parent[last] = value
    elif action == "delete":
        del parent[last]
    elif action == "add" and isinstance(parent, dict):
        parent[value if isinstance(value, str) and value else "extraKey"] = value
    elif action == "add" and isinstance(parent, list):
        parent.append(value)
    return mutant


@st.composite
def mutants(draw: st.DrawFn) -> dict[str, Any]:
    config = STACKS[draw(st.sampled_from(sorted(STACKS)))]
    path = draw(st.sampled_from(_paths(config)))
    action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
    return _mutate(config, path, action, draw(HOSTILE))


def _outcome(config: dict[str, Any]) -> str:
    try:
        parse_stack_config(config)
    except StackConfigError as err:
        assert err.problems and all(isinstance(p, str) and p for p in err.problems)
        return "rejected"
    return "accepted"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants())
def test_mutated_stacks_fail_only_with_typed_errors(config: dict[str, Any]) -> None:
    _outcome(config)


def _program_problems(config: dict[str, Any]) -> list[str]:
    """What the program itself reports when Pulumi hands it this stack (``pulumi.Config``)."""
    pulumi.runtime.set_all_config(config_values(config))
    try:
        read_platform_config()
    except StackConfigError as err:
        return err.problems
    finally:
        pulumi.runtime.set_all_config({})
    return []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants())
def test_validate_and_the_program_decode_the_same(config: dict[str, Any]) -> None:
    """``validate`` (the stack file) and ``pulumi up`` (``pulumi.Config``) accept and reject alike."""
    assert _problems(config) == _program_problems(config)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutants())
def test_a_rejected_stack_registers_nothing(config: dict[str, Any]) -> None:
    if _outcome(config) == "accepted":
        return
    with pytest.raises(Exception) as err:  # the program's StackConfigError, as the engine sees it
        rendering = render(stack_program, config)
        pytest.fail(f"rejected stack rendered {len(rendering.resources)} resources")
    assert "invalid stack configuration" in str(err.value) or isinstance(err.value, StackConfigError)


@pytest.mark.parametrize(
    "text",
    [
        "config:\n  5: x\n",
        "config:\n  true: x\n",
        "config:\n  tpu-platform:cluster: [[[[[[[[[[]]]]]]]]]]\n",
        "config: [1]\n",
        "[" * 5000,
    ],
)
def test_hostile_stack_files_are_typed_errors(text: str) -> None:
    with pytest.raises(StackConfigError):
        parse_stack_config(stack_config_from_text(text, "fuzz.yaml"))


def test_quoted_and_plain_scalars_decode_the_same_as_pulumi_passes_them() -> None:
    """``gcp:project: 123456`` and ``"123456"`` both reach the program as the text "123456"
    (pulumi/config.py ``Config.get``); both paths decode it the same way."""
    base = copy.deepcopy(STACKS["dev"])
    quoted = {**base, "gcp:project": "tpu-123456"}
    assert parse_stack_config(quoted).project == "tpu-123456"
    number = {**base, "gcp:project": 123456}
    text = {**base, "gcp:project": "123456"}
    assert _problems(number) == _problems(text)


def _problems(config: dict[str, Any]) -> list[str]:
    try:
        parse_stack_config(config)
    except StackConfigError as err:
        return err.problems
    return []
