"""Hooks named by the YAML files (`!function utils.x`); the logic lives in `data` and `scoring`."""

from __future__ import annotations

from typing import Any

from lm_eval_tasks import protocol
from lm_eval_tasks.clozetest_maxmin import data, scoring

first_capital_filter = scoring.first_capital_filter
letter_filter = scoring.letter_filter
ll_context = scoring.ll_context
ll_choices = scoring.ll_choices


def load(clozetest_language: str, **kwargs: Any) -> dict[str, Any]:
    """`custom_dataset`: lm-eval passes the metadata (and model_args keys) as kwargs. Where the
    inputs and answers came from is recorded in the task's protocol (`lm_eval_tasks.protocol`)."""
    protocol.check_settings(kwargs)
    dataset = data.load_dataset_dict(clozetest_language, kwargs)
    predict_only = data.predict_only(kwargs)
    root = data.data_dir(kwargs)
    fields = {
        "benchmark": "clozetest_maxmin",
        "language": clozetest_language,
        "inputs": str(root) if root else f"{data.REMOTE_BASE}/{clozetest_language}",
        "answers": None if predict_only else data.answers_location(clozetest_language, kwargs),
        "predict_only": predict_only,
        "items": len(dataset["test"]),
    }
    protocol.record(
        protocol.task_metadata(kwargs), f"clozetest_maxmin ({clozetest_language})", fields
    )
    return dataset


def process_results(doc: dict[str, Any], results: list[Any], **kwargs: Any) -> dict[str, float]:
    return scoring.generation_scores(doc, results)


def process_results_ll(doc: dict[str, Any], results: list[Any], **kwargs: Any) -> dict[str, float]:
    return scoring.ll_scores(doc, results)
