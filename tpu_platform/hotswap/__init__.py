"""tpu-platform hotswap controller: fast, safe recovery of high-priority TPU work on GKE.

``tpu_platform.hotswap.core`` decides (pure); ``tpu_platform.hotswap.adapter`` watches the cluster and
applies the decisions; ``tpu_platform.hotswap.deploy`` holds the data the Pulumi component needs to run it.
"""

__version__ = "0.1.0"
