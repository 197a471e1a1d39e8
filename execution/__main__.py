"""`python -m execution ...` (see execution.cli)."""

from execution.cli import main

raise SystemExit(main())
