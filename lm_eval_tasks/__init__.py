"""lm-eval task definitions. Pass this folder to `lm_eval --include_path`.

`python -c "import lm_eval_tasks; print(lm_eval_tasks.PATH)"` prints it after any install.
"""

from pathlib import Path

PATH = Path(__file__).resolve().parent
