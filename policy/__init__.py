"""The policy pack folder; Pulumi runs it as a directory (``__main__.py``), tests import its rules."""
