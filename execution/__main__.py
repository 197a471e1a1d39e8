"""`python -m execution ...` (see execution.cli)."""

from .cli import main

raise SystemExit(main())
