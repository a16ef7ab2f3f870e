"""A YAML parse error as one line that names the file and the place: ``FILE:LINE:COL: ...``.

PyYAML's own message spans several lines and names the input ``<unicode string>`` when it is handed
text rather than a file (``yaml/reader.py``: a ``str`` stream is named so).
"""

from __future__ import annotations

import yaml


def yaml_error_line(err: yaml.YAMLError, source: str) -> str:
    """``source:line:column: not valid YAML: problem (context)``; the mark is 1-based, as editors count."""
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        what = err.problem or "unreadable"
        context = f" ({err.context})" if err.context else ""
        return f"{where}: not valid YAML: {what}{context}"
    return f"{source}: not valid YAML: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
