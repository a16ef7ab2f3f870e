"""``KubeObject``: a custom resource registered from a whole object dict.

``k8s.apiextensions.CustomResource`` in the Python SDK only forwards ``apiVersion``,
``kind``, ``metadata`` and ``spec`` (pulumi-kubernetes issue #2363; the Node SDK has
``otherFields``). Kueue's WorkloadPriorityClass keeps ``value`` and ``description`` at the
top level, so this subclass registers every top-level field of the object as an input,
under the same ``kubernetes:<apiVersion>:<kind>`` type the provider already handles.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s


class KubeObject(k8s.apiextensions.CustomResource):
    """A Kubernetes custom resource whose inputs are exactly ``obj`` (all top-level fields)."""

    def __init__(
        self, resource_name: str, obj: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None
    ):
        self._object = dict(obj)
        super().__init__(
            resource_name,
            api_version=str(obj["apiVersion"]),
            kind=str(obj["kind"]),
            metadata=obj.get("metadata"),
            spec=obj.get("spec"),
            opts=opts,
        )

    def _internal_init(  # noqa: PLR0917 - CustomResource's signature
        self,
        resource_name: str,
        api_version: str,
        kind: str,
        opts: pulumi.ResourceOptions | None = None,
        metadata: Any = None,
        spec: Any = None,
        __props__: Any = None,
    ) -> None:
        opts = opts or pulumi.ResourceOptions()
        # Same type token as CustomResource; a plain dict keeps every key (camelCase, untranslated).
        pulumi.CustomResource.__init__(
            self, f"kubernetes:{api_version}:{kind}", resource_name, self._object, opts
        )
