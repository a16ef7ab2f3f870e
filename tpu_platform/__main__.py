"""``python -m tpu_platform``: the same CLI as the ``tpu-platform`` console script."""

from .cli import console

console()
