"""Run the pack's `code-eval` command with the test models registered.

Usage: python tests/run_code_eval.py <code-eval arguments> (e.g. run --model scripted ...).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tests.lm_fakes  # noqa: F401  (registers the `scripted` model)
from lm_eval_tasks.cli import main

if __name__ == "__main__":
    sys.exit(main())
