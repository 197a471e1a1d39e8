"""`evaluate` metrics shipped inside the package, loadable offline by path:

    import evaluate
    from ..evaluate_metrics import CODE_EXEC_PATH
    code_exec = evaluate.load(str(CODE_EXEC_PATH))

`code-eval metric-path` prints the path (subcommand `code-eval metric-path`).
"""

from __future__ import annotations

from pathlib import Path

CODE_EXEC_PATH = Path(__file__).resolve().parent / "code_exec"
