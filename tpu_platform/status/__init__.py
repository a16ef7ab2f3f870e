"""``tpu-platform status``: a read-only picture of a running platform.

``model`` turns fetched objects into a status (pure), ``render`` prints it, ``fetch`` reads the
cluster with the official client (the only module here that does I/O).
"""

from .model import ClusterObjects, PlatformStatus, build_status
from .render import render_json, render_text

__all__ = ["ClusterObjects", "PlatformStatus", "build_status", "render_json", "render_text"]
