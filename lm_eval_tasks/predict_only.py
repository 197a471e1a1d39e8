"""Whether the running lm-eval evaluation only generates (`--predict_only`): then nothing is judged.

A GPU node often has no compilers and must never run the programs it generates. lm-eval 0.4.13
still applies every task's filters with `--predict_only` (only the metrics are replaced, by its
`bypass` metric), and the execution tasks judge in a filter. So each judging filter asks
`generation_only()` first: it finds the lm-eval task applying the filters on the call stack and
checks for `bypass`. The filter then keeps the extracted code (or middle) instead of verdicts, and
`code-eval judge` (`lm_eval_tasks.judge_later`) judges the logged responses on another machine.
A filter called outside lm-eval (no task on the stack) judges as before.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

#: lm-eval's metric name for "no metric" (what `--predict_only` puts in every task)
BYPASS = "bypass"


def calling_task(match: Callable[[Any], bool] = lambda task: True) -> Any | None:
    """The innermost lm-eval `ConfigurableTask` on the call stack that `match` accepts, or None.

    lm-eval hands a task's hooks (dataset builder, filters) only their data, never the task, so
    the task is found as the `self` of a caller's frame."""
    from lm_eval.api.task import ConfigurableTask

    frame = inspect.currentframe()
    try:
        while frame is not None:
            task = frame.f_locals.get("self")
            if isinstance(task, ConfigurableTask) and match(task):
                return task
            frame = frame.f_back
        return None
    finally:
        del frame


def generation_only() -> bool:
    """True inside a `--predict_only` evaluation (the calling task's metrics are `bypass`)."""
    task = calling_task()
    return task is not None and BYPASS in (getattr(task, "_metric_fn_list", None) or {})
