"""A consumer project of tpu-platform; Pulumi runs ``__main__.py``."""
