"""Upstream value formats, each parsed as its upstream parser does, one module per format.

Here rather than in the stack model because the controller reads Go durations too and its image
ships only ``tpu_platform/hotswap/``; the stack model, the policy pack, the simulator and the
status picture import these same parsers, so no two parts of the platform read a value differently.
"""
