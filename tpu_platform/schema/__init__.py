"""Schema fidelity: check Kubernetes objects the way the API server would, offline.

Custom resources are checked against the Kueue and JobSet CRD files (structure, unknown
fields, list keys, CEL rules), built-in kinds against kubernetes-validate, and anything
else is reported as unchecked rather than passed.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .crds import ENV_CRDS, CrdsUnavailable, crds_dir
from .issues import SchemaIssue, SchemaReport
from .outcome import CelOutcome

if TYPE_CHECKING:
    from .core import KUBERNETES_VERSION
    from .rendered import RenderedObject, kubernetes_objects
    from .validate import SchemaValidator, check_object, default_validator, validate_object

# Loaded on first use: they need the ``lint`` extra (jsonschema, cel-python, kubernetes-validate),
# which the checks that only read metadata or structure (``lint --no-schema``) do not.
_LAZY = {
    "KUBERNETES_VERSION": "core",
    "RenderedObject": "rendered",
    "kubernetes_objects": "rendered",
    "SchemaValidator": "validate",
    "check_object": "validate",
    "default_validator": "validate",
    "validate_object": "validate",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ENV_CRDS",
    "KUBERNETES_VERSION",
    "CelOutcome",
    "CrdsUnavailable",
    "RenderedObject",
    "SchemaIssue",
    "SchemaReport",
    "SchemaValidator",
    "check_object",
    "crds_dir",
    "default_validator",
    "kubernetes_objects",
    "validate_object",
]
