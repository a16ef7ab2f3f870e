"""The component package folder; Pulumi runs it as a plugin (``__main__.py``)."""
