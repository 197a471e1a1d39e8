"""Entry points named by the YAML files (`!function utils.<name>`); the logic is imported."""

from lm_eval_tasks.xcodeeval.documents import build_dataset
from lm_eval_tasks.xcodeeval.hooks import (
    compile_macro_f1,
    judge_filter,
    process_compile,
    process_exec,
    process_retrieval,
    process_tag,
    tag_macro_f1,
)

__all__ = [
    "build_dataset",
    "compile_macro_f1",
    "judge_filter",
    "process_compile",
    "process_exec",
    "process_retrieval",
    "process_tag",
    "tag_macro_f1",
]
