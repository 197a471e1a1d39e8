"""Deprecated: `python -m lm_eval_tasks.xcodeeval.score` (this module goes in the next release)."""

import sys
import warnings

from lm_eval_tasks.xcodeeval.score import main

if __name__ == "__main__":
    warnings.warn(
        "python -m utils.xcodeeval_score is deprecated; use python -m lm_eval_tasks.xcodeeval.score",
        DeprecationWarning,
        stacklevel=1,
    )
    sys.exit(main())
