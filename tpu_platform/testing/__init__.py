"""Test and simulation helpers that are not part of any runtime path (nothing in the controller
image or the Pulumi program imports them)."""
