"""Shared pieces of the ClozeTest-maxmin tests: answer files written on the fly, the prompt built
independently of the task code, and scripted models (also usable from the lm_eval CLI)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.conftest import TASKS_DIR

LANGUAGES = ("ruby", "javascript", "go", "python", "java", "php")
REAL_COUNTS = {"ruby": 38, "javascript": 272, "go": 152, "python": 1264, "java": 482, "php": 407}
FIXTURE_REMOTE = Path(__file__).resolve().parent / "fixtures" / "clozetest" / "remote"
GITHUB_RAW = "https://raw.githubusercontent.com/"

# OpenCompass's maxmin HUMAN turn, written out here rather than taken from the task YAML.
OPENCOMPASS_PROMPT = (
    'Code:{pl}\nThe aim of the code: {nl}\nQuestion: Please tell me what "<mask>" in the code '
    "should be replaced with and you must response to me only A or B.\nA. max\nB. min\nAnswer:"
)


def prompt_of(item: Mapping[str, Any]) -> str:
    return OPENCOMPASS_PROMPT.format(pl=" ".join(item["pl_tokens"]), nl=" ".join(item["nl_tokens"]))


def made_up_label(language: str, item: Mapping[str, Any]) -> str:
    """A made-up but deterministic label (never a real answer): a function of the prompt text, so
    identical prompts always get the same label, and languages sharing an idx get different ones."""
    digest = hashlib.sha256(f"{language}\0{prompt_of(item)}".encode()).digest()
    return "max" if digest[0] % 2 else "min"


def read_items(data_dir: Path, language: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((data_dir / language / "clozeTest.json").read_text())
    return items


def write_answers(
    answers_dir: Path, data_dir: Path, languages: tuple[str, ...] = LANGUAGES
) -> dict[str, str]:
    """Write `<answers_dir>/<lang>/answers.txt` with `test_label`s; return {prompt: gold letter}."""
    gold: dict[str, str] = {}
    for language in languages:
        lines = []
        for item in read_items(data_dir, language):
            label = made_up_label(language, item)
            lines.append(f"{item['idx']}<CODESPLIT>{label}")
            gold[prompt_of(item)] = "A" if label == "max" else "B"
        (answers_dir / language).mkdir(parents=True, exist_ok=True)
        (answers_dir / language / "answers.txt").write_text("\n".join(lines) + "\n")
    return gold


_CHAT = re.compile(r"^<\|user\|>\n(.*)\n<\|assistant\|>\n$", re.DOTALL)


def user_text(context: str) -> str:
    """The prompt inside `ScriptedLM`'s chat rendering, or the context itself for a base model."""
    match = _CHAT.match(context)
    return match.group(1) if match else context


def task_manager(metadata: dict[str, Any]) -> Any:
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata)


def evaluate(script: Any, tasks: list[str], metadata: dict[str, Any], **kwargs: Any) -> Any:
    """In-process lm-eval run with a `ScriptedLM`; returns (results dict, the model)."""
    import lm_eval

    from tests.lm_fakes import ScriptedLM

    lm = ScriptedLM(script=script)
    out = lm_eval.simple_evaluate(
        model=lm, tasks=tasks, task_manager=task_manager(metadata), **kwargs
    )
    assert out is not None
    return out, lm


# For the CLI test (`--model_args script=tests.clozetest_support:says_the_answer_is_b`).
def says_the_answer_is_b(kind: str, context: str, extra: Any) -> Any:
    return "The answer is B." if kind == "generate" else -1.0
