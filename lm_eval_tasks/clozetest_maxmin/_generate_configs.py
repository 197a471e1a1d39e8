"""Write the per-language task YAMLs and the group YAMLs of clozetest_maxmin.

Run `python -m lm_eval_tasks.clozetest_maxmin._generate_configs` after changing the language list
or the group layout (`--check` changes nothing and fails if a file is out of date; a test runs
it). Prompts and metric wiring live in the hand-written `_template_gen.yaml` / `_template_ll.yaml`;
a task file holds only its name and language.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lm_eval_tasks import _yamlgen
from lm_eval_tasks.clozetest_maxmin.data import LANGUAGES

FOLDER = Path(__file__).resolve().parent
COMMAND = "python -m lm_eval_tasks.clozetest_maxmin._generate_configs"


def _task(name: str, template: str, language: str) -> dict[str, Any]:
    return {"include": template, "task": name, "dataset_kwargs": {"clozetest_language": language}}


def documents() -> dict[str, dict[str, Any]]:
    """File name -> content of every generated file."""
    docs: dict[str, dict[str, Any]] = {}
    gen = [f"clozetest_maxmin_{lang}" for lang in LANGUAGES]
    ll = [f"clozetest_maxmin_ll_{lang}" for lang in LANGUAGES]
    for lang, gen_name, ll_name in zip(LANGUAGES, gen, ll, strict=True):
        docs[f"{gen_name}.yaml"] = _task(gen_name, "_template_gen.yaml", lang)
        docs[f"{ll_name}.yaml"] = _task(ll_name, "_template_ll.yaml", lang)
    gen_metrics = ["exact_match", "gold_max_share"]
    filters = ["first_capital", "letter"]
    for name, micro in (("clozetest_maxmin", True), ("clozetest_maxmin_macro", False)):
        docs[f"_{name}.yaml"] = _yamlgen.group(
            name, gen, gen_metrics, filters=filters, weight_by_size=micro
        )
    docs["_clozetest_maxmin_ll.yaml"] = _yamlgen.group(
        "clozetest_maxmin_ll", ll, ["acc", "gold_max_share"], filters=["none"], weight_by_size=True
    )
    return docs


def main(argv: Sequence[str] | None = None) -> int:
    return _yamlgen.main(FOLDER, COMMAND, documents(), argv)


if __name__ == "__main__":
    sys.exit(main())
