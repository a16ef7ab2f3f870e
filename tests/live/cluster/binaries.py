"""Where the pinned upstream binaries are: the manifest ``upstream/build.py --print`` prints.

A missing binary is an error naming it and the command that builds it, never a skip: the live
tier runs against the real components or not at all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
BUILD = REPO / "upstream" / "build.py"


class MissingBinaries(RuntimeError):
    pass


def manifest() -> dict[str, dict[str, str]]:
    out = subprocess.run([sys.executable, str(BUILD), "--print"], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise MissingBinaries(f"{BUILD} --print failed: {out.stderr.strip()}")
    return dict(json.loads(out.stdout))


def locate(names: tuple[str, ...]) -> tuple[dict[str, Path], dict[str, str]]:
    """Paths and versions of ``names``; raises naming every one not built yet."""
    found = manifest()
    missing = [n for n in names if "path" not in found.get(n, {})]
    if missing:
        raise MissingBinaries(
            f"upstream binaries not built: {', '.join(missing)}; run `./dev upstream` "
            "(builds them from the Go module proxy into the cache, once per machine)"
        )
    return {n: Path(found[n]["path"]) for n in names}, {n: found[n]["version"] for n in names}
