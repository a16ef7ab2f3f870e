"""The ``tpu-platform`` subcommands: each module has ``HELP``, ``configure(parser)`` and ``run(args)``.

Modules import only the base dependencies at load time; what an optional extra brings (the
schema checks, the simulator's picture, the policy pack) is imported inside ``run``.
"""
