"""Read a Terraform SDKv2 resource schema from the provider's Go source, without a Go toolchain.

The Google provider declares each resource as Go composite literals: ``&schema.Resource{Schema:
map[string]*schema.Schema{"name": {Type: schema.TypeString, ForceNew: true}, ...}}``, with nested
blocks under ``Elem: &schema.Resource{...}`` and shared parts behind package-level ``var``\\ s and
zero-argument helper functions (``"node_config": schemaNodeConfig()``, ``Elem:
computeFirewallAllowSchema()``, ``tpgresource.MergeSchemas(a, b)``). This module tokenizes that
source, evaluates those literals and references, and returns each field's flags: enough to know which
fields force a new resource and how the Pulumi bridge names them (a list or set without ``MaxItems:
1`` gets a plural name).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_TOKEN = re.compile(
    r"""(?P<skip>\s+|//[^\n]*|/\*.*?\*/)
      |(?P<raw>`[^`]*`)
      |(?P<str>"(?:\\.|[^"\\\n])*")
      |(?P<rune>'(?:\\.|[^'\\\n])+')
      |(?P<num>\d[\w.]*)
      |(?P<ident>[A-Za-z_]\w*)
      |(?P<punct>\.\.\.|:=|&&|\|\||==|!=|<=|>=|<-|\+\+|--|[-+*/%&|^<>=!{}()\[\],;:.])""",
    re.S | re.X,
)
_OPEN = {"{": "}", "(": ")", "[": "]"}


@dataclass(frozen=True)
class Token:
    kind: str
    text: str


def tokenize(source: str) -> list[Token]:
    """Go source as tokens (comments and blanks dropped), with the semicolons Go inserts at the end
    of a line (after a name, a literal, a closing bracket or ``return``) so declarations and
    statements end where the compiler ends them."""
    out: list[Token] = []
    pos = 0
    while pos < len(source):
        match = _TOKEN.match(source, pos)
        if match is None:
            pos += 1  # a character Go would reject; nothing a schema literal holds
            continue
        pos = match.end()
        kind = match.lastgroup or ""
        if kind != "skip":
            out.append(Token(kind, match.group()))
        elif "\n" in match.group() and out and _ends_statement(out[-1]):
            out.append(Token("punct", ";"))
    return out


def _ends_statement(tok: Token) -> bool:
    """Whether a line ending after ``tok`` gets a semicolon (The Go Programming Language
    Specification, Semicolons)."""
    if tok.kind in ("ident", "num", "str", "raw", "rune"):
        return tok.text not in ("func", "var", "const", "type", "map", "struct", "interface", "chan", "else")
    return tok.text in (")", "]", "}", "++", "--")


@dataclass
class Field:
    """One schema field: the flags that decide replacement and naming, and its nested fields."""

    type: str = ""
    max_items: int | None = None
    force_new: bool = False
    optional: bool = False
    required: bool = False
    computed: bool = False
    fields: dict[str, Field] = field(default_factory=dict)

    @property
    def is_block_list(self) -> bool:
        """A list or set the bridge shows as an array (``MaxItems: 1`` makes it a single object)."""
        return self.type in ("TypeList", "TypeSet") and self.max_items != 1

    @property
    def is_input(self) -> bool:
        return self.optional or self.required


@dataclass
class Unresolved:
    """A reference the source read could not evaluate (another package's helper, a computed map)."""

    name: str


class Source:
    """The top-level ``var`` and ``func`` declarations of some Go files, by name."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.vars: dict[str, list[Token]] = {}
        self.funcs: dict[str, list[Token]] = {}
        for text in texts:
            self._declarations(tokenize(text))

    def _declarations(self, tokens: list[Token]) -> None:
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.text == "func" and i + 1 < len(tokens) and tokens[i + 1].kind == "ident":
                name = tokens[i + 1].text
                body_start = _find_body(tokens, i + 2)
                end = matching(tokens, body_start)
                self.funcs.setdefault(name, tokens[body_start + 1 : end])
                i = end + 1
            elif tok.text == "var":
                i = self._var(tokens, i + 1)
            elif tok.text in _OPEN:
                i = matching(tokens, i) + 1
            else:
                i += 1

    def _var(self, tokens: list[Token], i: int) -> int:
        if i < len(tokens) and tokens[i].text == "(":
            end = matching(tokens, i)
            j = i + 1
            while j < end:
                if tokens[j].kind == "ident" and j + 1 < end and tokens[j + 1].text == "=":
                    stop = _expression_end(tokens, j + 2, end)
                    self.vars.setdefault(tokens[j].text, tokens[j + 2 : stop])
                    j = stop
                else:
                    j = matching(tokens, j) + 1 if tokens[j].text in _OPEN else j + 1
            return end + 1
        if i + 1 < len(tokens) and tokens[i].kind == "ident":
            j = i + 1
            while j < len(tokens) and tokens[j].text != "=" and tokens[j].text not in ("{", ";"):
                j += 1  # a declared type: ``var x map[string]*schema.Schema = ...``
            if j < len(tokens) and tokens[j].text == "=":
                stop = _expression_end(tokens, j + 1, len(tokens))
                self.vars.setdefault(tokens[i].text, tokens[j + 1 : stop])
                return stop
        return i + 1


def _find_body(tokens: list[Token], i: int) -> int:
    """The ``{`` that opens a function body (after its parameters and results)."""
    depth = 0
    while i < len(tokens):
        text = tokens[i].text
        if text in ("(", "["):
            depth += 1
        elif text in (")", "]"):
            depth -= 1
        elif text == "{" and depth == 0:
            return i
        i += 1
    return len(tokens) - 1


def matching(tokens: list[Token], i: int) -> int:
    """The index of the bracket that closes the one at ``i``."""
    opener = tokens[i].text
    closer = _OPEN[opener]
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].text == opener:
            depth += 1
        elif tokens[j].text == closer:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1


def _expression_end(tokens: list[Token], i: int, limit: int) -> int:
    """Where an expression starting at ``i`` ends: a ``,`` or ``;`` at its own depth, or the
    closing bracket of an enclosing one."""
    j = i
    while j < limit:
        text = tokens[j].text
        if text in _OPEN:
            j = matching(tokens, j) + 1
            continue
        if text in (",", ";", ")", "}", "]"):
            return j
        j += 1
    return j


class Evaluator:
    """Evaluates schema expressions of one ``Source`` into ``Field`` trees."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.unresolved: set[str] = set()
        self._stack: list[str] = []

    # -- entry points ------------------------------------------------------------------------------

    def resource(self, func: str) -> dict[str, Field]:
        """The fields of ``func ResourceX() *schema.Resource`` (its ``return &schema.Resource{...}``)."""
        value = self._call(func)
        return value.fields if isinstance(value, Field) else {}

    def schema_map(self, name: str) -> dict[str, Field]:
        """The fields of ``var name = map[string]*schema.Schema{...}``."""
        value = self._reference(name)
        return value.fields if isinstance(value, Field) else {}

    # -- expressions -------------------------------------------------------------------------------

    def expression(self, tokens: list[Token], hint: str = "") -> Any:
        """A schema value (``Field``, for a Schema, Resource or schema map), a scalar, or ``Unresolved``."""
        if not tokens:
            return None
        i = 1 if tokens[0].text == "&" else 0
        head = tokens[i:]
        if not head:
            return None
        if head[0].text == "{":  # a composite literal whose type the enclosing map elides
            return self._literal(hint or "schema.Schema", head[1 : matching(head, 0)])
        name, after = qualified(head)
        if name in ("true", "false"):
            return name == "true"
        if head[0].kind == "num":
            return _number(head[0].text)
        if head[0].kind in ("str", "raw"):
            return head[0].text
        if head[0].text == "map" or (name and after < len(head) and head[after].text == "{"):
            type_end = _type_end(head)
            if type_end < len(head) and head[type_end].text == "{":
                type_text = "".join(t.text for t in head[:type_end])
                return self._literal(type_text, head[type_end + 1 : matching(head, type_end)])
        if name and after < len(head) and head[after].text == "(":
            args = split_elements(head[after + 1 : matching(head, after)])
            return self._apply(name, args)
        if name:
            if name.startswith("schema.Type"):
                return name.removeprefix("schema.")
            return self._reference(name)
        return None

    def _literal(self, type_text: str, body: list[Token]) -> Any:
        elements = split_elements(body)
        if type_text.startswith("map[string]"):
            out = Field()
            for element in elements:
                key, value = key_value(element)
                if key is not None and key[0].kind == "str":
                    resolved = self.expression(value, "schema.Schema")
                    out.fields[key[0].text.strip('"')] = resolved if isinstance(resolved, Field) else Field()
            return out
        if type_text.endswith("schema.Resource"):
            out = Field()
            for element in elements:
                key, value = key_value(element)
                if key is not None and key[0].text == "Schema":
                    resolved = self.expression(value)
                    if isinstance(resolved, Field):
                        out.fields = resolved.fields
            return out
        if type_text.endswith("schema.Schema"):
            return self._schema(elements)
        return None

    def _schema(self, elements: list[list[Token]]) -> Field:
        out = Field()
        for element in elements:
            key, value = key_value(element)
            if key is None:
                continue
            attr = key[0].text
            if attr == "Type":
                out.type = str(self.expression(value) or "")
            elif attr == "MaxItems":
                number = self.expression(value)
                out.max_items = number if isinstance(number, int) else None
            elif attr in ("ForceNew", "Optional", "Required", "Computed"):
                setattr(out, attr.lower().replace("forcenew", "force_new"), self.expression(value) is True)
            elif attr == "Elem":
                elem = self.expression(value, "schema.Resource")
                if isinstance(elem, Field):
                    out.fields = elem.fields
        return out

    def _apply(self, name: str, args: list[list[Token]]) -> Any:
        if name.endswith("MergeSchemas"):
            merged = Field()
            for arg in args:
                part = self.expression(arg)
                if isinstance(part, Field):
                    merged.fields.update(part.fields)
                else:
                    self.unresolved.add(f"{name} argument")
            return merged
        return self._call(name)

    def _call(self, name: str) -> Any:
        """A helper function's result: the last ``return`` of a schema literal in its body (its
        arguments only parameterize descriptions and defaults in the provider's helpers)."""
        short = name.rsplit(".", 1)[-1]
        body = self.source.funcs.get(short)
        if body is None or short in self._stack:
            self.unresolved.add(name)
            return Unresolved(name)
        self._stack.append(short)
        try:
            result: Any = Unresolved(name)
            for i in _returns(body):
                stop = _expression_end(body, i + 1, len(body))
                value = self.expression(body[i + 1 : stop])
                if isinstance(value, Field):
                    result = value
            if isinstance(result, Unresolved):
                self.unresolved.add(name)
            return result
        finally:
            self._stack.pop()

    def _reference(self, name: str) -> Any:
        short = name.rsplit(".", 1)[-1]
        tokens = self.source.vars.get(short)
        if tokens is None or short in self._stack:
            self.unresolved.add(name)
            return Unresolved(name)
        self._stack.append(short)
        try:
            return self.expression(tokens)
        finally:
            self._stack.pop()


def _returns(body: list[Token]) -> list[int]:
    """The ``return`` statements of a function body itself, not of the function literals inside
    its result (a ``SchemaFunc: func() ... { return ... }`` of a resource identity); any ``return``
    when the body has none at its own level."""
    own: list[int] = []
    depth = 0
    for i, tok in enumerate(body):
        if tok.text in _OPEN:
            depth += 1
        elif tok.text in ("}", ")", "]"):
            depth -= 1
        elif tok.text == "return" and depth == 0:
            own.append(i)
    return own or [i for i, tok in enumerate(body) if tok.text == "return"]


def qualified(tokens: list[Token]) -> tuple[str, int]:
    """``schema.TypeList`` or ``tpgresource.MergeSchemas`` from the front of ``tokens``, and where it ends."""
    if not tokens or tokens[0].kind != "ident":
        return "", 0
    parts = [tokens[0].text]
    i = 1
    while i + 1 < len(tokens) and tokens[i].text == "." and tokens[i + 1].kind == "ident":
        parts.append(tokens[i + 1].text)
        i += 2
    return ".".join(parts), i


def _type_end(tokens: list[Token]) -> int:
    """The end of a type expression (``map[string]*schema.Schema``, ``schema.Resource``)."""
    i = 0
    while i < len(tokens):
        text = tokens[i].text
        if text == "[":
            i = matching(tokens, i) + 1
        elif text in ("*", ".") or tokens[i].kind == "ident":
            i += 1
        else:
            return i
    return i


def split_elements(tokens: list[Token]) -> list[list[Token]]:
    """Comma-separated elements at depth 0."""
    out: list[list[Token]] = []
    current: list[Token] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.text in _OPEN:
            end = matching(tokens, i)
            current.extend(tokens[i : end + 1])
            i = end + 1
            continue
        if tok.text == ",":
            if current:
                out.append(current)
            current = []
        else:
            current.append(tok)
        i += 1
    if current:
        out.append(current)
    return out


def key_value(element: list[Token]) -> tuple[list[Token] | None, list[Token]]:
    """``Key: value`` split at its first depth-0 colon."""
    depth = 0
    for i, tok in enumerate(element):
        if tok.text in _OPEN:
            depth += 1
        elif tok.text in ("}", ")", "]"):
            depth -= 1
        elif tok.text == ":" and depth == 0:
            return element[:i], element[i + 1 :]
    return None, element


def _number(text: str) -> int | None:
    try:
        return int(text, 0)
    except ValueError:
        return None
