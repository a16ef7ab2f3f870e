"""The offline plan: render a stack under Pulumi's mocks into a committed, diffable file."""

from .document import dump_plan, plan_document
from .harness import RecordedResource, Rendering, render
from .stacks import list_stacks, load_stack_config, parse_stack_config, stack_file

__all__ = [
    "RecordedResource",
    "Rendering",
    "dump_plan",
    "list_stacks",
    "load_stack_config",
    "parse_stack_config",
    "plan_document",
    "render",
    "stack_file",
]
