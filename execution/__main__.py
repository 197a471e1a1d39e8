"""`code-exec ...` (see execution.cli)."""

from .cli import main

raise SystemExit(main())
