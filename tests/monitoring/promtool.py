"""Running Debian's ``promtool`` (package ``prometheus``, which ``.ci/run`` installs) from tests.

Without it the tests skip, naming the package; under CI (``$CI`` set) a missing promtool fails them
instead, so CI can never pass without running the rules for real.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

INSTALL = "apt-get install -y prometheus (Debian's package ships promtool and prometheus)"


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing under CI; .ci/run installs it: {INSTALL}")
        pytest.skip(f"{name} is not installed: {INSTALL}")
    return path


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [binary("promtool"), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def write_yaml(path: Path, doc: Any) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def check_rules(tmp: Path, rule_file: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return run(["check", "rules", str(write_yaml(tmp / "rules.yaml", rule_file))], tmp)


def unit_test_rules(
    tmp: Path, rule_file: dict[str, Any], tests: list[dict[str, Any]]
) -> subprocess.CompletedProcess[str]:
    write_yaml(tmp / "rules.yaml", rule_file)
    unit = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}
    return run(["test", "rules", str(write_yaml(tmp / "tests.yaml", unit))], tmp)
