"""tpu-platform's policy pack: the platform's invariants as pure rules, and their adapters.

``rules.evaluate`` runs every rule over plain ``Resource`` records; ``pack.policies`` wraps
the same rules for pulumi-policy; ``offline.check_rendering`` runs them over an offline plan.
"""

from .resources import UNKNOWN, Resource, Stack, Violation
from .rules import RULES, Rule, evaluate

__all__ = ["RULES", "UNKNOWN", "Resource", "Rule", "Stack", "Violation", "evaluate"]
