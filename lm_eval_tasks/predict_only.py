"""Whether the running lm-eval evaluation only generates (`--predict_only`): then nothing is judged.

A GPU node often has no compilers and must never run the programs it generates. lm-eval 0.4.13
still applies every task's filters with `--predict_only` (only the metrics are replaced, by its
`bypass` metric), and the execution tasks judge in a filter. So each judging filter asks
`generation_only()` first: it finds the lm-eval task applying the filters on the call stack and
checks for `bypass`. The filter then keeps the extracted code (or middle) instead of verdicts, and
`code-eval judge` (`lm_eval_tasks.judge_later`) judges the logged responses on another machine.
A filter called outside lm-eval (no task on the stack) judges as before.

Documents are built before lm-eval sets `bypass`, so the dataset builders ask `predicting()`
instead (the `predict_only` argument of the running `simple_evaluate`): a generating machine
keeps every row whatever runtimes or graders it has, since it judges nothing. `code-eval judge`
rebuilds the documents under `judging_logged()`: the logged rows are judged as they are, and a
row the judging machine cannot judge becomes INFRA_ERROR verdicts, counted and reported, never
a row left out.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
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


def predicting() -> bool:
    """True while the running `lm_eval.simple_evaluate` has `predict_only` set (also while it
    builds the task's documents, before the metrics are replaced)."""
    try:
        import lm_eval
    except ImportError:  # the scoring command line works without lm-eval
        return False
    evaluate = lm_eval.simple_evaluate
    code = getattr(evaluate, "__wrapped__", evaluate).__code__
    frame = inspect.currentframe()
    try:
        while frame is not None:
            if frame.f_code is code:
                return bool(frame.f_locals.get("predict_only"))
            frame = frame.f_back
        return False
    finally:
        del frame


_judging_logged = False


@contextlib.contextmanager
def judging_logged() -> Iterator[None]:
    """While `code-eval judge` evaluates logged responses: every logged row is kept."""
    global _judging_logged
    previous, _judging_logged = _judging_logged, True
    try:
        yield
    finally:
        _judging_logged = previous


def keep_every_row() -> bool:
    """Rows the local machine could not judge are kept: it generates only, or it judges the
    logged responses of a generation run (where every row was generated)."""
    return _judging_logged or predicting()
