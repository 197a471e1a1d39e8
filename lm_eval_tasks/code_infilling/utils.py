"""lm-eval hooks of the multi-line infilling tasks (logic lives in `lm_eval_tasks.code_infilling`)."""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from code_eval_taskpack.utils.metrics import edit_similarity, exact_match
from lm_eval_tasks import protocol
from lm_eval_tasks.code_infilling import documents, fim, grading
from lm_eval_tasks.predict_only import calling_task, generation_only


def load(**kwargs: Any) -> dict[str, Any]:
    """custom_dataset: rows with packed prompts (and, for _exec tasks, checked grading).

    For `sg_infilling_custom[_exec]` the format, hence its stop strings, is known only now, so
    they are also put into the calling task's `generation_kwargs.until` (lm-eval builds the
    requests from it after this hook returns): the model stops at them as with the built-in
    formats, whose stops the generated YAML carries. The rows' source, the format, the prompt
    budget and the grader are recorded in the task's protocol (`lm_eval_tasks.protocol`).
    """
    protocol.check_settings(kwargs)
    dataset = documents.build_dataset(**kwargs)
    variant = str(kwargs.get("sg_infilling_variant") or fim.CUSTOM_VARIANT)
    if variant == fim.CUSTOM_VARIANT:
        _send_stops_to_generation(list(documents.format_from(kwargs).stop))
    protocol.record(protocol.task_metadata(kwargs), "sg_infilling", _protocol(dataset["test"]))
    return dataset


def _protocol(rows: Any) -> dict[str, Any]:
    """How the task's rows are prompted and graded, from what every document carries."""
    first = rows[0] if len(rows) else {}
    info = json.loads(first["prompt_info"]) if first else {}
    return {
        "benchmark": "sg_infilling",
        "data": first.get("data_source"),
        "rows": len(rows),
        "format": json.loads(first["fim_format"])["name"] if first else None,
        "prompt_budget": {"limit": info.get("budget"), "unit": info.get("unit")},
        "grading": json.loads(first["grading"]) if first and first["grading"] else None,
    }


def _send_stops_to_generation(stops: list[str]) -> None:
    """Set `until` of the lm-eval task whose dataset this `load` call builds.

    lm-eval passes `custom_dataset` only the metadata, so the task is found on the call stack:
    the `ConfigurableTask` whose `custom_dataset` is this function. Not finding it is an error,
    never a run whose model ignores the format's stops.
    """
    task = calling_task(
        lambda t: (
            getattr(getattr(t.config, "custom_dataset", None), "__code__", None) is load.__code__
        )
    )
    if task is not None:
        gen_kwargs = task.config.generation_kwargs
        if not isinstance(gen_kwargs, dict):
            gen_kwargs = task.config.generation_kwargs = {}
        gen_kwargs["until"] = stops
        return
    raise RuntimeError(
        "sg_infilling_custom: the lm-eval task building this dataset was not found, so the "
        "format's stop strings cannot be sent to the model (unsupported lm-eval version?)"
    )


@functools.lru_cache(maxsize=16)
def _format(fmt_json: str) -> fim.FimFormat:
    """A document's format, parsed once per distinct JSON (every document of a task shares it)."""
    return fim.FimFormat.from_dict("task", json.loads(fmt_json))


def _middle(resp: Any, doc: dict[str, Any]) -> str:
    text = resp[0] if isinstance(resp, list | tuple) else resp
    fmt = _format(doc["fim_format"])
    return fim.clean_generation(
        fmt, str(text), prefix=doc["prefix"], suffix=doc["suffix"], file_path=doc["file_path"]
    )


def extract_middles(resps: list[Any], docs: list[dict[str, Any]]) -> list[str]:
    """Filter: the generated middle of each document (stop strings cut, chat code extracted)."""
    return [_middle(r, d) for r, d in zip(resps, docs, strict=True)]


def grade_middles(resps: list[Any], docs: list[dict[str, Any]]) -> list[str]:
    """Filter: stitch and grade the whole task's middles in one parallel batch.

    Each document's outcome (patch applied, tests run, per-test status, resolved, the middle and
    the model patch) becomes its filtered response as a JSON string, so logged samples carry it
    in a form `json.loads` reads back. A `--predict_only` run grades nothing: it keeps the
    middles, for `code-eval judge` to grade elsewhere (`lm_eval_tasks.predict_only`).
    """
    if generation_only():
        return extract_middles(resps, docs)
    return [json.dumps(o) for o in grading.grade(docs, extract_middles(resps, docs))]


def _cheap(doc: dict[str, Any], middle: str) -> dict[str, float]:
    return {
        "exact_match": float(exact_match(middle, doc["middle"])),
        "edit_similarity": edit_similarity(middle, doc["middle"]),
    }


def score(doc: dict[str, Any], results: list[Any]) -> dict[str, float]:
    return _cheap(doc, str(results[0]))


def score_exec(doc: dict[str, Any], results: list[Any]) -> dict[str, Any]:
    outcome = json.loads(results[0])
    failed_to_grade = bool(outcome["error"])
    return {
        **_cheap(doc, outcome["middle"]),
        "pass@1": None if failed_to_grade else float(outcome["resolved"]),
        "grading_error": float(failed_to_grade),
    }


def mean_of_graded(items: list[float | None]) -> float:
    """pass@1 over the rows that could be graded (grading errors are reported apart)."""
    graded = [x for x in items if x is not None]
    return sum(graded) / len(graded) if graded else math.nan
