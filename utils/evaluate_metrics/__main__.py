"""Print the folder to pass to `evaluate.load` for the execution pass@k metric."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..evaluate_metrics import CODE_EXEC_PATH


def main(argv: Sequence[str] | None = None) -> int:
    """Subcommand `code-eval metric-path`."""
    argparse.ArgumentParser(
        prog="code-eval metric-path",
        description="Print the path of the `code_exec` evaluate metric "
        "(use: evaluate.load(PATH); needs HF_ALLOW_CODE_EVAL=1 to run code).",
    ).parse_args(argv)
    print(CODE_EXEC_PATH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
