"""Entry point: ``python -m tpu_platform.hotswap``."""

from tpu_platform.hotswap.adapter.main import main

raise SystemExit(main())
