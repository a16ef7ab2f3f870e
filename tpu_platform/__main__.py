"""Entry point of ``python -m tpu_platform``."""

import sys

from .cli import main

sys.exit(main())
