"""Pulumi entry point: ``pulumi up -s <stack>`` reads ``stacks/Pulumi.<stack>.yaml``."""

import pulumi
from tpu_platform.components.program import stack_program

from tpu_platform.config import StackConfigError

try:
    stack_program()
except StackConfigError as err:
    raise pulumi.RunError(str(err)) from None
