"""Entry point: ``python -m hotswap``."""

from hotswap.adapter.main import main

raise SystemExit(main())
