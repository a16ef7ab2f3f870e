"""tpu-platform hotswap controller: fast, safe recovery of high-priority TPU work on GKE.

``hotswap.core`` decides (pure); ``hotswap.adapter`` watches the cluster and applies the decisions;
``hotswap.deploy`` holds the data the Pulumi component needs to run it.
"""

__version__ = "0.1.0"
