"""Upstream's own test tables for the parsers in ``tpu_platform/hotswap/formats``, read from the Go
sources on this machine at run time (nothing upstream is committed).

- Go's ``parseDurationTests`` and ``parseDurationErrorTests`` from ``$(go env GOROOT)/src/time/time_test.go``;
- apimachinery's quantity tests from the module cache (filled by ``./dev upstream``), at the version
  ``upstream/kubernetes/go.mod`` pins: ``$(go env GOMODCACHE)/k8s.io/apimachinery@<v>/pkg/api/resource/
  quantity_test.go``.

Rows are read with regular expressions and a small evaluator for the Go constant expressions the
tables use (``5*Second + 600*Millisecond``, ``decQuantity(.5*1024*1024, 0, BinarySI)``). A row in a
form the evaluator does not know raises :class:`TableShapeError`, so a changed table fails the test
instead of shrinking it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
KUBERNETES_GO_MOD = REPO / "upstream" / "kubernetes" / "go.mod"
QUANTITY_TEST = "pkg/api/resource/quantity_test.go"

DURATION_UNITS = {
    "Nanosecond": 1,
    "Microsecond": 10**3,
    "Millisecond": 10**6,
    "Second": 10**9,
    "Minute": 60 * 10**9,
    "Hour": 3600 * 10**9,
}
MAX_ALLOWED = 2**63 - 1
"""apimachinery's ``maxAllowed`` (``math.go``)."""


class TableShapeError(RuntimeError):
    """An upstream table is not in the form this reader knows: update it, do not skip rows."""


@dataclass(frozen=True)
class GoSources:
    """Where this machine's Go keeps the two upstream test files; None for a file that is absent."""

    go_version: str
    time_test: Path
    apimachinery_version: str
    quantity_test: Path | None


def go_sources() -> GoSources | str:
    """The upstream test files, or the reason they cannot be found (for ``pytest.skip``)."""
    go = shutil.which("go")
    if go is None:
        return "`go` is not on PATH: install Go 1.26 (the live tier builds upstream with it)"
    env = dict(os.environ, GOTOOLCHAIN="local", GOWORK="off")
    out = subprocess.run(
        [go, "env", "GOROOT", "GOMODCACHE", "GOVERSION"], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode != 0:
        return f"`go env` failed: {out.stderr.strip()}"
    goroot, modcache, version = out.stdout.splitlines()
    time_test = Path(goroot) / "src" / "time" / "time_test.go"
    if not time_test.is_file():
        return f"{time_test} is absent: this Go installation ships no sources"
    pinned = re.search(r"^\s*k8s\.io/apimachinery (v\S+)", KUBERNETES_GO_MOD.read_text(), re.M)
    if pinned is None:
        raise TableShapeError(f"{KUBERNETES_GO_MOD} no longer requires k8s.io/apimachinery")
    quantity_test = Path(modcache) / f"k8s.io/apimachinery@{pinned[1]}" / QUANTITY_TEST
    return GoSources(version, time_test, pinned[1], quantity_test if quantity_test.is_file() else None)


# --- Go source: function bodies, composite literals, string literals ---------------------------------


def function_body(source: str, name: str) -> str:
    """The text of ``func name(...) {...}``."""
    match = re.search(rf"^func {re.escape(name)}\(.*\{{$", source, re.M)
    if match is None:
        raise TableShapeError(f"no func {name} in the upstream test file")
    return _braced(source, match.end() - 1)


def var_literal(source: str, name: str) -> str:
    """The composite literal of ``var name = []struct{...}{...}``, without its outer braces."""
    match = re.search(rf"^var {re.escape(name)} = \[\]struct \{{", source, re.M)
    if match is None:
        raise TableShapeError(f"no var {name} in the upstream test file")
    return _rows_after_type(source, match.end() - 1)


def local_table(body: str, name: str) -> str:
    """The rows of ``name := []struct{...}{...}`` or ``name := []string{...}`` inside a function body."""
    match = re.search(rf"\b{re.escape(name)} := \[\](struct \{{|string\{{)", body)
    if match is None:
        raise TableShapeError(f"no table {name} in the upstream test function")
    if match[1].startswith("string"):
        return _braced(body, match.end() - 1)[1:-1]
    return _rows_after_type(body, match.end() - 1)


def top_level_items(text: str, opener: str = "") -> list[str]:
    """The comma-separated items of a literal's contents (``{...}`` rows when ``opener`` is ``{``),
    with comments dropped and nested brackets and strings kept whole."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    i = 0
    while i < len(text):
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
            continue
        if c in "\"`'":
            end = _string_end(text, i)
            current.append(text[i:end])
            i = end
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(c)
        i += 1
    items.append("".join(current).strip())
    items = [item for item in items if item]
    if opener and any(not (item.startswith(opener) and item.endswith("}")) for item in items):
        raise TableShapeError(f"a row is not a {opener}...}} literal: {items}")
    return items


def fields(row: str) -> list[str]:
    """The fields of one ``{a, b, c}`` row."""
    return top_level_items(row.strip()[1:-1])


def go_string(literal: str) -> str:
    """A Go string literal's value; bytes that are no UTF-8 become lone surrogates (as Python reads
    them with ``surrogateescape``), so an invalid string stays invalid."""
    if literal.startswith("`") and literal.endswith("`"):
        return literal[1:-1]
    if not (len(literal) >= 2 and literal[0] == literal[-1] == '"'):
        raise TableShapeError(f"not a Go string literal: {literal}")
    out = bytearray()
    body = literal[1:-1]
    i = 0
    simple = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34, "'": 39}
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        kind = body[i + 1]
        if kind in simple:
            out.append(simple[kind])
            i += 2
        elif kind == "x":
            out.append(int(body[i + 2 : i + 4], 16))
            i += 4
        elif kind in "uU":
            width = 4 if kind == "u" else 8
            out += chr(int(body[i + 2 : i + 2 + width], 16)).encode()
            i += 2 + width
        elif kind in "01234567":
            out.append(int(body[i + 1 : i + 4], 8))
            i += 4
        else:
            raise TableShapeError(f"unknown escape \\{kind} in {literal}")
    return out.decode("utf-8", "surrogateescape")


def _braced(text: str, start: int) -> str:
    """``text[start:]`` up to the brace matching the one at ``start``, braces included."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if text.startswith("//", i):
            i = text.index("\n", i)
            continue
        if c in "\"`'":
            i = _string_end(text, i)
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
        i += 1
    raise TableShapeError("unbalanced braces in the upstream test file")


def _rows_after_type(text: str, type_brace: int) -> str:
    """After ``[]struct {...}`` at ``type_brace``, the contents of the ``{...}`` literal that follows."""
    struct = _braced(text, type_brace)
    rest = type_brace + len(struct)
    if text[rest] != "{":
        raise TableShapeError("a []struct type is not followed by its literal")
    return _braced(text, rest)[1:-1]


def _string_end(text: str, start: int) -> int:
    """The index after the string or rune literal opening at ``start``."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        if text[i] == "\\" and quote != "`":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    raise TableShapeError("unterminated string in the upstream test file")


# --- Go constant expressions ----------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<number>[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)|(?P<name>[A-Za-z_]\w*)|(?P<op><<|[-+*/()]))"
)


def constant(expression: str, names: dict[str, int]) -> Fraction:
    """The exact value of a Go constant expression over numbers, ``names``, ``+ - * / <<`` and
    parentheses, with Go's precedence (``*``, ``/`` and ``<<`` bind alike, above ``+`` and ``-``)."""
    tokens = _tokens(expression)
    value, rest = _sum(tokens, names)
    if rest:
        raise TableShapeError(f"cannot read the Go expression {expression!r}")
    return value


def _tokens(expression: str) -> list[str]:
    tokens: list[str] = []
    position = 0
    text = expression.rstrip()
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            raise TableShapeError(f"cannot read the Go expression {expression!r}")
        tokens.append(match[0].strip())
        position = match.end()
    return tokens


def _sum(tokens: list[str], names: dict[str, int]) -> tuple[Fraction, list[str]]:
    value, tokens = _product(tokens, names)
    while tokens and tokens[0] in "+-":
        op = tokens[0]
        right, tokens = _product(tokens[1:], names)
        value = value + right if op == "+" else value - right
    return value, tokens


def _product(tokens: list[str], names: dict[str, int]) -> tuple[Fraction, list[str]]:
    value, tokens = _unary(tokens, names)
    while tokens and tokens[0] in ("*", "/", "<<"):
        op = tokens[0]
        right, tokens = _unary(tokens[1:], names)
        if op == "*":
            value *= right
        elif op == "/":
            value /= right
        else:
            if value.denominator != 1 or right.denominator != 1:
                raise TableShapeError("a shift of a non-integer")
            value = Fraction(int(value) << int(right))
    return value, tokens


def _unary(tokens: list[str], names: dict[str, int]) -> tuple[Fraction, list[str]]:
    if not tokens:
        raise TableShapeError("a Go expression ends early")
    head, rest = tokens[0], tokens[1:]
    if head == "-":
        value, rest = _unary(rest, names)
        return -value, rest
    if head == "+":
        return _unary(rest, names)
    if head == "(":
        value, rest = _sum(rest, names)
        if not rest or rest[0] != ")":
            raise TableShapeError("unbalanced parentheses in a Go expression")
        return value, rest[1:]
    if head in names:
        return Fraction(names[head]), rest
    if re.fullmatch(r"[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?", head):
        return Fraction(head), rest
    raise TableShapeError(f"unknown name {head!r} in a Go expression")


# --- the tables ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DurationRow:
    text: str
    nanoseconds: int | None
    """None: Go refuses it."""


def duration_rows(time_test: Path) -> list[DurationRow]:
    """``parseDurationTests`` (value rows) then ``parseDurationErrorTests`` (refused rows)."""
    source = time_test.read_text(encoding="utf-8", errors="surrogateescape")
    rows: list[DurationRow] = []
    for row in top_level_items(var_literal(source, "parseDurationTests"), "{"):
        text, want = fields(row)
        value = constant(want, DURATION_UNITS)
        if value.denominator != 1:
            raise TableShapeError(f"a duration that is no whole number of nanoseconds: {row}")
        rows.append(DurationRow(go_string(text), int(value)))
    for row in top_level_items(var_literal(source, "parseDurationErrorTests"), "{"):
        rows.append(DurationRow(go_string(fields(row)[0]), None))
    return rows


@dataclass(frozen=True)
class QuantityRow:
    """One check upstream makes of ``ParseQuantity`` on ``text``."""

    table: str
    text: str
    expect: Fraction | str | None
    """The value; or another string that must give the same value; None: refused."""
    as_float: bool = False
    """Upstream compares the value as a float64 (``AsApproximateFloat64``, ``AsFloat64Slow``)."""


def quantity_rows(quantity_test: Path) -> list[QuantityRow]:
    """Every table-shaped check of ``ParseQuantity`` in apimachinery's quantity_test.go:

    - TestQuantityParse: each row's input gives its expected quantity, and so do ``-input``
      (negated) and ``+input``, which the test also checks; every entry of ``invalid`` is refused;
    - TestParseQuantityString: each input gives what the number rebuilt from its parts gives;
    - TestQuantityString: the canonical string and its alternate both give the row's quantity;
    - TestQuantityParseEmit: the input gives what the string it is emitted as gives;
    - TestStringQuantityAsApproximateFloat64 and TestStringQuantityAsFloat64Slow: the input's
      value as a float64.

    TestQuantityCmp's rows are :func:`quantity_comparisons`. The other tables start from quantities
    built in Go, or test arithmetic, formatting or encodings, not parsing."""
    source = quantity_test.read_text(encoding="utf-8")
    return [
        *_parse_rows(source),
        *_parse_string_rows(source),
        *_string_rows(source),
        *_emit_rows(source),
        *_float_rows(source, "TestStringQuantityAsApproximateFloat64"),
        *_float_rows(source, "TestStringQuantityAsFloat64Slow"),
    ]


def quantity_comparisons(quantity_test: Path) -> list[tuple[str, str, int]]:
    """TestQuantityCmp's first table: (x, y, the sign of x - y)."""
    body = function_body(quantity_test.read_text(encoding="utf-8"), "TestQuantityCmp")
    out = []
    for row in top_level_items(local_table(body, "table"), "{"):
        x, y, expect = fields(row)
        out.append((go_string(x), go_string(y), int(constant(expect, {}))))
    return out


def expected_quantity(expression: str) -> Fraction:
    """The value of ``decQuantity(i, exponent, format)`` or ``Quantity{d: maxAllowed, ...}``."""
    call = re.fullmatch(r"decQuantity\((.*)\)", expression.strip(), re.S)
    if call is not None:
        mantissa, exponent, _format = top_level_items(call[1])
        power = constant(exponent, {})
        if power.denominator != 1:
            raise TableShapeError(f"a non-integer exponent in {expression}")
        return constant(mantissa, {}) * Fraction(10) ** int(power)
    if re.fullmatch(r"Quantity\{d: maxAllowed, Format: \w+\}", expression.strip()):
        return Fraction(MAX_ALLOWED)
    raise TableShapeError(f"an expected quantity in a form this reader does not know: {expression}")


def _parse_rows(source: str) -> list[QuantityRow]:
    body = function_body(source, "TestQuantityParse")
    rows: list[QuantityRow] = []
    for row in top_level_items(local_table(body, "table"), "{"):
        text, expect = fields(row)
        value = expected_quantity(expect)
        rows.append(QuantityRow("TestQuantityParse", go_string(text), value))
        rows.append(QuantityRow("TestQuantityParse (negated)", "-" + go_string(text).lstrip(), -value))
        rows.append(QuantityRow("TestQuantityParse (explicit +)", "+" + go_string(text).lstrip(), value))
    for literal in top_level_items(local_table(body, "invalid")):
        rows.append(QuantityRow("TestQuantityParse invalid", go_string(literal), None))
    if '_, err := ParseQuantity(""); err == nil' in body:
        rows.append(QuantityRow("TestQuantityParse invalid", "", None))
    return rows


def _parse_string_rows(source: str) -> list[QuantityRow]:
    """Rows of (input, positive, value, num, denom, suffix)."""
    body = function_body(source, "TestParseQuantityString")
    rows = []
    for row in top_level_items(local_table(body, "table"), "{"):
        text, positive, _value, num, denom, suffix = fields(row)
        rebuilt = ("" if positive == "true" else "-") + go_string(num)
        if go_string(denom):
            rebuilt += "." + go_string(denom)
        rows.append(QuantityRow("TestParseQuantityString", go_string(text), rebuilt + go_string(suffix)))
    return rows


def _string_rows(source: str) -> list[QuantityRow]:
    body = function_body(source, "TestQuantityString")
    rows = []
    for row in top_level_items(local_table(body, "table"), "{"):
        quantity, expect, alternate = fields(row)
        value = expected_quantity(quantity)
        rows.append(QuantityRow("TestQuantityString", go_string(expect), value))
        if go_string(alternate):
            rows.append(QuantityRow("TestQuantityString (alternate)", go_string(alternate), value))
    return rows


def _emit_rows(source: str) -> list[QuantityRow]:
    body = function_body(source, "TestQuantityParseEmit")
    rows = []
    for row in top_level_items(local_table(body, "table"), "{"):
        text, emitted = fields(row)
        rows.append(QuantityRow("TestQuantityParseEmit", go_string(text), go_string(emitted)))
    return rows


def _float_rows(source: str, function: str) -> list[QuantityRow]:
    body = function_body(source, function)
    rows = []
    for row in top_level_items(local_table(body, "table"), "{"):
        text, out = fields(row)
        rows.append(QuantityRow(function, go_string(text), constant(out, {}), as_float=True))
    return rows
