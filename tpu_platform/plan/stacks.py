"""Read ``stacks/Pulumi.<stack>.yaml`` offline exactly as the program reads ``pulumi.Config``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..config import PlatformConfig, StackConfigError, read_stack

REPO_ROOT = Path(__file__).resolve().parents[2]
STACKS_DIR = REPO_ROOT / "stacks"
PLANS_DIR = REPO_ROOT / "plans"


def stack_file(stack: str, stacks_dir: Path = STACKS_DIR) -> Path:
    return stacks_dir / f"Pulumi.{stack}.yaml"


def list_stacks(stacks_dir: Path = STACKS_DIR) -> list[str]:
    """Stack names, from the stack files present."""
    return sorted(
        p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in stacks_dir.glob("Pulumi.*.yaml")
    )


def load_stack_config(path: Path) -> dict[str, Any]:
    """The ``config:`` map of a stack file, as ``namespace:key`` -> value."""
    if not path.exists():
        raise StackConfigError(
            [f"{path}: no such stack file; create it or pick one of {list_stacks(path.parent)}"]
        )
    doc = yaml.safe_load(path.read_text()) or {}
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise StackConfigError([f"{path}: a stack file is a mapping with a 'config:' mapping inside"])
    config = doc.get("config") or {}
    for key, value in config.items():
        if isinstance(value, dict) and "secure" in value:
            raise StackConfigError([f"{path}: {key} is an encrypted secret; the offline plan cannot read it"])
    return dict(config)


def parse_stack_config(config: dict[str, Any]) -> PlatformConfig:
    """Validate a stack's config map with the same reader the Pulumi program uses."""

    def get(namespace: str, key: str) -> Any:
        return config.get(f"{namespace}:{key}")

    def present(namespace: str) -> list[str]:
        prefix = f"{namespace}:"
        return [key.removeprefix(prefix) for key in config if key.startswith(prefix)]

    return read_stack(get, present)
