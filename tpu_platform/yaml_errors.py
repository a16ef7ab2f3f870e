"""A YAML parse error as one line that names the file and the place: ``FILE:LINE:COL: ...``.

PyYAML's own message spans several lines and names the input ``<unicode string>`` when it is handed
text rather than a file (``yaml/reader.py``: a ``str`` stream is named so). Its words name the parser's
state (``expected <block end>``), so each line also says what to change, in an author's words.
"""

from __future__ import annotations

import yaml

INDENTATION = (
    "check the indentation of line {line}: a key must line up with its siblings (the same number of "
    "spaces), and tabs are not allowed"
)

# (words in PyYAML's problem, what to do); the first match wins. {line} is the line of the problem,
# {opened} the line where what is unfinished began.
ADVICE: tuple[tuple[str, str], ...] = (
    ("tab character", "line {line} holds a tab: YAML indents with spaces only; replace the tab with spaces"),
    ("'\\t'", "line {line} holds a tab: YAML indents with spaces only; replace the tab with spaces"),
    ("expected <block end>", INDENTATION),
    (
        "mapping values are not allowed",
        INDENTATION + "; a value that itself holds ': ' needs quotes",
    ),
    (
        "could not find expected ':'",
        "line {opened} is neither 'key: value' nor '- item': add the ':' after its key, or line it up "
        "with its siblings (tabs are not allowed)",
    ),
    ("end of stream", "close the quote opened on line {opened}"),
    (
        "expected ',' or ']'",
        "close the '[' opened on line {opened} with ']', or quote a value that starts with '['",
    ),
    (
        "expected ',' or '}'",
        "close the '{{' opened on line {opened} with '}}', or quote a value that starts with '{{'",
    ),
    (
        "cannot start any token",
        "quote the value on line {line}: a plain value cannot start with this character",
    ),
    ("alias", "a value starting with '*' names an anchor (&name): quote it ('*...') on line {line}"),
    ("duplicate anchor", "give each anchor (&name) on line {opened} and line {line} its own name"),
    (
        "escape character",
        "inside double quotes a backslash starts an escape: use single quotes or write '\\\\'",
    ),
    ("constructor for the tag", "remove the tag (!!...) on line {line}: a stack file holds plain values"),
    ("<stream end>", "the file ends inside an unfinished value: close each '[', '{{' and quote it opens"),
    ("single document", "keep one YAML document: remove the '---' on line {line} and what follows it"),
    ("unhashable key", "a key must be a plain word, not a list or a mapping (line {line})"),
)


def yaml_error_line(err: yaml.YAMLError, source: str) -> str:
    """``source:line:column: not valid YAML: problem (context); what to do``; the mark is 1-based,
    as editors count."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        what = err.problem or "unreadable"
        context = f" ({err.context})" if err.context else ""
        return f"{where}: not valid YAML: {what}{context}{_advice(err)}"
    return f"{source}: not valid YAML: {str(err).splitlines()[0] if str(err) else type(err).__name__}"


def _advice(err: yaml.MarkedYAMLError) -> str:
    """``; what to do`` for the problems people make by hand, or nothing for the rest."""
    words = f"{err.problem or ''} {err.context or ''}"
    mark = err.problem_mark or err.context_mark
    line = mark.line + 1 if mark is not None else 0
    opened = err.context_mark.line + 1 if err.context_mark is not None else line
    for needle, advice in ADVICE:
        if needle in words:
            return "; " + advice.format(line=line, opened=opened)
    return ""
