"""tpu-platform: declarative GKE TPU v6e platforms with Kueue, JobSet and hotswap.

One import name for everything: the pure pieces (catalog, stack model, quota layout, planners,
the hotswap decision core) and their I/O layers (``tpu_platform.components``, installed from the
repository's top-level ``components/`` folder; the hotswap adapter; the CLI).
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
