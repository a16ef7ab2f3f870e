"""The settings reference, ``docs/hotswap-settings.md``, written from the settings model's fields (their
group, unit, default, doc and source), so it says exactly what the stack and the controller read::

    .venv/bin/python -m tpu_platform.hotswap.settings_doc --write docs/hotswap-settings.md
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tpu_platform.hotswap.core.settings import GROUPS, settings_schema

DOC_PATH = "docs/hotswap-settings.md"
COMMAND = f"python -m tpu_platform.hotswap.settings_doc --write {DOC_PATH}"
INTRO = f"""\
# Hotswap controller settings

Every decision threshold of the hotswap controller, from the fields of its settings model
(`tpu_platform/hotswap/core/settings.py`); regenerated, never typed, by
`{COMMAND}`.

A stack sets them under `tpu-platform:hotswap.settings` by their camelCase key, and they are checked
when the stack file is read; the Pulumi component renders them into the controller's config file
(`$HOTSWAP_CONFIG`), which holds them at the top level by their snake_case name and is read once at
start. Each name is read in either file. Durations take seconds or a Go duration (`30s`, `2m`,
`1h30m`). A stack sets `computeCorroboration` with `hotswap.computeCorroboration` and `teams` with its
teams section, not under `settings`. Why the controller decides as it does:
[tpu_platform/hotswap/README.md](../tpu_platform/hotswap/README.md).
"""
HEADER = ("stack key", "config file", "default", "unit", "why", "source")


def render() -> str:
    """The whole reference: the intro, then one table per group in ``GROUPS`` order."""
    schema = settings_schema()
    parts = [INTRO]
    for group, what in GROUPS.items():
        rows = [(name, entry) for name, entry in schema.items() if entry["group"] == group]
        parts.append(f"\n## {group}\n\n{what}\n\n")
        parts.append("| " + " | ".join(HEADER) + " |\n" + "|" + "---|" * len(HEADER) + "\n")
        for name, entry in rows:
            cells = (
                f"`{entry['key']}`",
                f"`{name}`",
                f"`{_shown(entry['default'])}`",
                entry["unit"],
                entry["doc"],
                entry["source"],
            )
            parts.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |\n")
    return "".join(parts)


def _shown(value: Any) -> str:
    """A default as a config file writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(str(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: [{', '.join(items)}]" for key, items in value.items()) + "}"
    return str(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tpu_platform.hotswap.settings_doc", description=__doc__)
    parser.add_argument(
        "--write", metavar="PATH", help=f"write the reference there (the repository's: {DOC_PATH})"
    )
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        Path(args.write).write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
