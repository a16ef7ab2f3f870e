"""``x-kubernetes-validations`` rules evaluated with cel-python.

cel-python implements standard CEL, not the Kubernetes extension libraries (quantity, url,
lists, strings ...) nor optional types. A rule that needs one of those is reported as not
evaluated, with the reason, instead of counting as passed. Transition rules (``oldSelf``)
only apply to updates and are skipped with a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.evaluation import base_functions

from .cel_equality import EQUALITY_FUNCTIONS
from .outcome import CelOutcome

# Function-like macros the cel-python evaluator implements besides ``base_functions``.
_MACROS = frozenset({"has", "dyn", "all", "exists", "exists_one", "map", "filter"})
SUPPORTED_FUNCTIONS = frozenset(name for name in base_functions if name.isidentifier()) | _MACROS


@dataclass(frozen=True)
class _Compiled:
    program: celpy.Runner | None
    transition: bool
    unsupported: str | None


_ENV = celpy.Environment()


@lru_cache(maxsize=512)
def _compile(rule: str) -> _Compiled:
    """Parse once per rule text and decide whether cel-python can run it."""
    try:
        ast = _ENV.compile(rule)
    except celpy.CELParseError as err:
        lines = str(err).splitlines()
        caret = lines[1].find("^") if len(lines) > 1 else -1
        where = f" at column {caret + 1}" if caret >= 0 else ""
        return _Compiled(
            None, False, f"cel-python cannot parse it{where} (newer CEL syntax such as optionals)"
        )
    idents = {tok.value for tok in ast.scan_values(lambda t: isinstance(t, lark.Token) and t.type == "IDENT")}
    transition = "oldSelf" in idents
    calls: set[str] = set()
    for tree in ast.iter_subtrees():
        if tree.data in ("member_dot_arg", "ident_arg", "dot_ident_arg"):
            calls.update(
                tok.value for tok in tree.children if isinstance(tok, lark.Token) and tok.type == "IDENT"
            )
    missing = sorted(calls - SUPPORTED_FUNCTIONS)
    if missing:
        names = ", ".join(f"{name}()" for name in missing)
        return _Compiled(None, transition, f"cel-python lacks {names} (Kubernetes CEL library)")
    return _Compiled(_ENV.program(ast, functions=EQUALITY_FUNCTIONS), transition, None)


def evaluate_rule(rule: dict[str, Any], value: Any, path: str) -> CelOutcome:
    """Run one rule with ``self`` bound to ``value``; errors count as failures, like the API server."""
    text = str(rule.get("rule", ""))
    where = path + str(rule.get("fieldPath") or "")
    compiled = _compile(text)
    if compiled.transition:
        return CelOutcome(
            where, text, "transition", "transition rule (uses oldSelf): applies to updates only"
        )
    if compiled.unsupported or compiled.program is None:
        return CelOutcome(where, text, "not-evaluated", f"rule not evaluated: {compiled.unsupported}")
    activation = {"self": celpy.json_to_cel(value)}
    try:
        result = compiled.program.evaluate(activation)
    except celpy.CELEvalError as err:
        return _eval_error(where, text, err)
    if isinstance(result, celpy.CELEvalError):
        return _eval_error(where, text, result)
    if not isinstance(result, celtypes.BoolType):
        return CelOutcome(where, text, "failed", f"rule returned {result!r}, not a bool: {text}")
    if result:
        return CelOutcome(where, text, "passed")
    return CelOutcome(where, text, "failed", _failure_message(rule, activation, text))


def _eval_error(where: str, text: str, err: celpy.CELEvalError) -> CelOutcome:
    detail = str(err.args[0]) if err.args else str(err)
    if detail.startswith("undeclared reference"):
        return CelOutcome(
            where, text, "not-evaluated", f"rule not evaluated: cel-python: {detail.split(' (')[0]}"
        )
    return CelOutcome(where, text, "failed", f"{detail} evaluating rule: {text}")


def _failure_message(rule: dict[str, Any], activation: dict[str, Any], text: str) -> str:
    """``messageExpression`` when cel-python can run it, else ``message``, else the rule."""
    expression = rule.get("messageExpression")
    if isinstance(expression, str):
        compiled = _compile(expression)
        if compiled.program is not None and not compiled.transition:
            try:
                message = compiled.program.evaluate(activation)
            except celpy.CELEvalError:
                # The API server also falls back to ``message`` when the expression fails.
                message = None
            if isinstance(message, str) and message:
                return message
    message = rule.get("message")
    return str(message) if message else f"failed rule: {text}"


def evaluate_expression(expression: str, bindings: dict[str, Any]) -> Any:
    """Evaluate one CEL expression with top-level variables bound (JSON values are converted; CEL
    values, e.g. an earlier result, pass through). For admission-policy expressions, whose
    variables are ``object``, ``oldObject``, ``request`` and ``variables``. Raises ValueError if
    cel-python cannot run it and ``celpy.CELEvalError`` if evaluation fails (the API server then
    applies the policy's ``failurePolicy``)."""
    compiled = _compile(expression)
    if compiled.unsupported or compiled.program is None:
        raise ValueError(f"cannot evaluate {expression!r}: {compiled.unsupported}")
    activation = {
        name: value if isinstance(value, celtypes.MapType | celtypes.ListType) else celpy.json_to_cel(value)
        for name, value in bindings.items()
    }
    result = compiled.program.evaluate(activation)
    if isinstance(result, celpy.CELEvalError):
        raise result
    return result
