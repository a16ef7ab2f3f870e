"""Thin Kubernetes adapter: watch-fed caches -> core snapshot -> core decision -> API calls.

Talks to the cluster only through :class:`tpu_platform.hotswap.adapter.client.KubeApi`, so tests
substitute a fake that records the exact calls. Importing this package does not import the
``kubernetes`` client; only :mod:`tpu_platform.hotswap.adapter.kube` (the real implementation) does.
One module per idea; the design reasoning behind each is in docs/hotswap-adapter.md.
"""
