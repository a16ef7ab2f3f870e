"""Serve the typed components to Pulumi programs in any language (schema inferred from annotations)."""

from pulumi.provider.experimental import component_provider_host
from tpu_platform_provider import PACKAGE, SlicePools, StackPlatform

from tpu_platform import __version__

if __name__ == "__main__":
    component_provider_host(components=[SlicePools, StackPlatform], name=PACKAGE, version=__version__)
