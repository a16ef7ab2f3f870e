"""tpu-platform: declarative GKE TPU v6e platforms with Kueue, JobSet and hotswap.

The pure pieces (catalog, stack model, planners) live here; the Pulumi components that
turn them into resources live in the top-level ``components`` package.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
