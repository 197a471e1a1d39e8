"""Shared pieces of the ClozeTest-maxmin tests: answer files written on the fly, the prompt built
independently of the task code, and scripted models (also usable from the lm_eval CLI)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED_DATA, require

LANGUAGES = ("ruby", "javascript", "go", "python", "java", "php")
GEN_TASKS = [f"clozetest_maxmin_{lang}" for lang in LANGUAGES]
REAL_COUNTS = {"ruby": 38, "javascript": 272, "go": 152, "python": 1264, "java": 482, "php": 407}
FIXTURE_REMOTE = Path(__file__).resolve().parent / "fixtures" / "clozetest" / "remote"
GITHUB_RAW = "https://raw.githubusercontent.com/"

# OpenCompass's maxmin HUMAN turn, written out here rather than taken from the task YAML.
OPENCOMPASS_PROMPT = (
    'Code:{pl}\nThe aim of the code: {nl}\nQuestion: Please tell me what "<mask>" in the code '
    "should be replaced with and you must response to me only A or B.\nA. max\nB. min\nAnswer:"
)


@pytest.fixture(scope="module")
def real_dir() -> Path:
    """The real ClozeTest-maxmin inputs (required: skipped on a laptop, a failure in CI)."""
    path = SHARED_DATA / "codexglue_clozetest_maxmin"
    require(path.is_dir(), f"real ClozeTest-maxmin inputs missing at {path}")
    return path


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


# For the CLI test (`--model_args script=tests.clozetest_support:says_the_answer_is_b`).
def says_the_answer_is_b(kind: str, context: str, extra: Any) -> Any:
    return "The answer is B." if kind == "generate" else -1.0
