"""Schema fidelity: check Kubernetes objects the way the API server would, offline.

Custom resources are checked against the Kueue and JobSet CRD files (structure, unknown
fields, list keys, CEL rules), built-in kinds against kubernetes-validate, and anything
else is reported as unchecked rather than passed.
"""

from .cel import CelOutcome
from .core import KUBERNETES_VERSION
from .crds import ENV_CRDS, CrdsUnavailable, crds_dir
from .issues import SchemaIssue, SchemaReport
from .rendered import RenderedObject, kubernetes_objects
from .validate import SchemaValidator, check_object, default_validator, validate_object

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
