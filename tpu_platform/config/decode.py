"""How a stack value reaches the program: one decoding for ``pulumi up`` and the offline tools.

Pulumi hands a Python program every config value as text: ``pulumi.runtime.config.get_config``
reads the ``PULUMI_CONFIG`` map of strings, ``pulumi.Config.get`` returns that text unchanged and
``pulumi.Config.get_object`` JSON-decodes it (``pulumi/config.py``, ``Config._get_object``:
``json.loads``, ``ConfigTypeError`` when it is not JSON). A stack file's scalar therefore arrives
as its text whether it was quoted or not (``gcp:project: 123456`` and ``gcp:project: "123456"``
are both ``"123456"``), and a mapping or list as JSON whose inner values keep their types.

The offline tools turn a parsed stack file into that same text (``pulumi_text``) and both paths
decode it here (``decode_value``), so ``validate``, ``plan`` and ``pulumi up`` see one value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .problems import GCP_KEYS, PROJECT_NAMESPACE, StackConfigError, format_path


class DecodeError(ValueError):
    """A config value the program cannot decode; the message names the key and the fix."""


def pulumi_text(value: Any) -> str:
    """The text Pulumi passes to the program for a stack-file value: strings as they are, the rest
    JSON; a key written without a value (YAML null) is an empty value, which both paths reject."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, sort_keys=False)


def decode_value(namespace: str, key: str, text: str) -> Any:
    """``gcp:`` keys as text (``Config.get``, what pulumi-gcp itself reads); ``tpu-platform:`` keys as
    structured values (``Config.get_object``)."""
    if namespace == "gcp" and key in GCP_KEYS:
        return text
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise DecodeError(
            f"{format_path((key,))}: {shown!r} is not a structured value; write a YAML mapping or list "
            "(see README.md, Configuration reference)"
        ) from None


def qualified_config(config: Mapping[Any, Any], where: str = "stack config") -> dict[str, Any]:
    """Config keys as Pulumi names them: ``namespace:key``; a bare key belongs to the project's
    namespace (the Pulumi CLI qualifies it with the project name, ``tpu-platform``). A key that is
    not a string (YAML ``5:`` or ``true:``) is no config key at all."""
    bad = [key for key in config if not isinstance(key, str) or not key or key.startswith(":")]
    if bad:
        raise StackConfigError(
            [
                f"{where}: config key {key!r} is not 'namespace:key' (Pulumi config keys are strings such "
                "as 'tpu-platform:cluster' or 'gcp:project'); fix or remove it"
                for key in bad
            ]
        )
    return {key if ":" in key else f"{PROJECT_NAMESPACE}:{key}": value for key, value in config.items()}
