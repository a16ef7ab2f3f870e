"""The policy pack folder: Pulumi runs it as a directory (``__main__.py``).

The rules themselves live in the package, ``tpu_platform.policy``.
"""
