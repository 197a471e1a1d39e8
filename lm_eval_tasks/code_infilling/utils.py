"""lm-eval hooks of the multi-line infilling tasks (logic lives in `lm_eval_tasks.code_infilling`)."""

from __future__ import annotations

import functools
import json
import math
from typing import Any

from lm_eval_tasks.code_infilling import docs as _docs
from lm_eval_tasks.code_infilling import fim, grading
from utils.text_similarity import edit_similarity, exact_match


def load(**kwargs: Any) -> dict[str, Any]:
    """custom_dataset: rows with packed prompts (and, for _exec tasks, checked grading)."""
    return _docs.build_dataset(**kwargs)


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
    in a form `json.loads` reads back.
    """
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
