"""Entry point Pulumi runs for ``pulumi preview --policy-pack policy``: serve the policies."""

from pulumi_policy import EnforcementLevel, PolicyPack

from tpu_platform.policy.pack import PACK_NAME, policies

PolicyPack(name=PACK_NAME, policies=policies(), enforcement_level=EnforcementLevel.MANDATORY)
