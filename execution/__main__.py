"""`code-exec ...` (see execution.cli)."""

from .cli.main import main

raise SystemExit(main())
