"""Run lm-eval's real command-line entry point with the test models registered.

Usage: python tests/run_lm_eval.py <the usual lm_eval arguments> (e.g. --model scripted ...).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lm_eval.__main__ import cli_evaluate

import tests.lm_fakes  # noqa: F401  (registers the `scripted` model)

if __name__ == "__main__":
    cli_evaluate()
