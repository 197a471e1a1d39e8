"""Scripted models and fixture access for the xCodeEval tests (importable by the lm_eval CLI)."""

from __future__ import annotations

import collections
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests import lm_fakes
from tests.conftest import TASKS_DIR

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "xcodeeval"
sys.path.insert(0, str(FIXTURES))
import build_fixtures as fx  # noqa: E402

XCE_DIR = TASKS_DIR / "xcodeeval"
DEFAULT_META = {"xcodeeval_data_dir": str(FIXTURES)}


def task_manager(metadata: Mapping[str, Any] | None = None) -> Any:
    """The xCodeEval tasks, reading the fixture data unless `metadata` says otherwise."""
    return lm_fakes.task_manager(XCE_DIR, DEFAULT_META if metadata is None else metadata)


def run_tasks(tasks: list[str], script: Any, **meta: Any) -> dict[str, Any]:
    """An xCodeEval run over the fixture data (overridable by `meta`), samples logged."""
    out, _ = lm_fakes.evaluate(
        script,
        tasks,
        {**DEFAULT_META, **meta},
        include_path=XCE_DIR,
        confirm_run_unsafe_code=True,
        log_samples=True,
    )
    return out


_SYNTH = re.compile(r"^Write a program in (.+?) to solve", re.M)
_TRANSLATE = re.compile(r"^Translate the following .+? program into (.+?)\. ", re.M)
_APR = re.compile(r"^Fix the bug in the following (.+?) program", re.M)
_FENCE_TAG = {
    "C": "c",
    "C#": "csharp",
    "C++": "cpp",
    "Go": "go",
    "Java": "java",
    "Javascript": "js",
    "Kotlin": "kotlin",
    "PHP": "php",
    "Python": "python",
    "Ruby": "ruby",
    "Rust": "rust",
}


def target_language(context: str) -> str:
    for pattern in (_SYNTH, _TRANSLATE, _APR):
        m = pattern.search(context)
        if m:
            return m.group(1)
    raise AssertionError(f"not an xCodeEval generation prompt: {context[:200]!r}")


def problem_of(context: str) -> str:
    for p in fx.PROBLEMS:
        if p["description"] in context:
            return str(p["src_uid"])
    for uid, by_lang in fx.SOLUTIONS.items():
        if any(code in context for code in by_lang.values()):
            return uid
    raise AssertionError("prompt names no fixture problem")


def reference(context: str) -> str:
    """The reference solution, in the prompt's target language (empty if there is none)."""
    return fx.SOLUTIONS.get(problem_of(context), {}).get(target_language(context), "")


def oracle(kind: str, context: str, extra: Any) -> str:
    """Answers every execution prompt with the reference solution in a chat-style fence."""
    lang = target_language(context)
    return f"Here is my solution:\n```{_FENCE_TAG[lang]}\n{reference(context)}```\nIt reads stdin."


def plain_oracle(kind: str, context: str, extra: Any) -> str:
    """The reference solution as bare text, the way a base model continues the prompt."""
    return reference(context)


def wrong(kind: str, context: str, extra: Any) -> str:
    """A program that runs but always prints 0."""
    lang = target_language(context)
    return {
        "Python": "print(0)\n",
        "C": '#include <stdio.h>\nint main(void){puts("0");return 0;}\n',
    }.get(lang, reference(context).replace("a + b", "0 * a").replace('"YES"', '"NO"'))


_calls: collections.Counter[str] = collections.Counter()
MIXED_CORRECT = {fx.SUM: 3, fx.MELON: 12}  # correct samples out of 20, per problem


def mixed(kind: str, context: str, extra: Any) -> str:
    """For each problem, the first MIXED_CORRECT[uid] of its requests get a correct program."""
    uid = problem_of(context)
    _calls[context] += 1
    return (
        plain_oracle(kind, context, extra)
        if _calls[context] <= MIXED_CORRECT.get(uid, 0)
        else wrong(kind, context, extra)
    )


def reset() -> None:
    _calls.clear()
