"""What the command line shows a person: colour and progress only on a terminal, quiet on a closed pipe.

Colour follows the NO_COLOR convention (https://no-color.org/: any non-empty value turns it off);
progress goes to standard error and only when it is a terminal, so pipes and CI logs get plain,
stable output.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

_CODES = {"red": "31", "yellow": "33", "green": "32", "bold": "1", "dim": "2"}


def is_terminal(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, style: str, stream: TextIO | None = None) -> str:
    """``text`` in ``style`` when ``stream`` (default stdout) is a terminal and NO_COLOR is unset."""
    target = stream or sys.stdout
    if os.environ.get("NO_COLOR") or not is_terminal(target):
        return text
    return f"\033[{_CODES[style]}m{text}\033[0m"


class Progress:
    """One-line progress on stderr's terminal (``step`` overwrites the line, ``done`` clears it)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream or sys.stderr
        self._on = is_terminal(self._stream)
        self._width = 0

    def step(self, message: str) -> None:
        if not self._on:
            return
        self._stream.write("\r" + message.ljust(self._width))
        self._stream.flush()
        self._width = len(message)

    def done(self) -> None:
        if self._on and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0


def silence_stdout() -> None:
    """After the reader of stdout went away: send what is still buffered nowhere, quietly.

    Python's documented recipe for SIGPIPE (https://docs.python.org/3/library/signal.html#note-on-sigpipe).
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
