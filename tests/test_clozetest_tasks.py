"""ClozeTest-maxmin task definitions: they load in lm-eval and render OpenCompass's prompt byte for
byte on the real CodeXGLUE inputs (that the generated YAML is current: test_task_yaml.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lm_eval_tasks.clozetest_maxmin import _generate_configs
from tests import clozetest_support
from tests.clozetest_support import (
    GEN_TASKS,
    LANGUAGES,
    REAL_COUNTS,
    prompt_of,
    read_items,
)
from tests.conftest import TASKS_DIR
from tests.lm_fakes import task_manager

real_dir = clozetest_support.real_dir  # the shared fixture, visible to this module

TASK_DIR = Path(_generate_configs.__file__).resolve().parent
LL_TASKS = [f"clozetest_maxmin_ll_{lang}" for lang in LANGUAGES]
GROUPS = {
    "clozetest_maxmin": GEN_TASKS,
    "clozetest_maxmin_macro": GEN_TASKS,
    "clozetest_maxmin_ll": LL_TASKS,
}


def test_every_task_and_group_is_indexed() -> None:
    tm = task_manager(TASKS_DIR, {})
    names = set(tm.all_tasks)
    assert set(GEN_TASKS + LL_TASKS) <= names
    for group in GROUPS:
        assert group in tm.all_groups, f"{group} is not an lm-eval group"
    assert not set(tm.all_tags) & set(GROUPS), "groups must not be tags"


def test_every_task_and_group_loads(real_dir: Path) -> None:
    tm = task_manager(
        TASKS_DIR, {"clozetest_data_dir": str(real_dir), "clozetest_predict_only": True}
    )
    # lm-eval refuses one task in two groups of the same run, so each group loads on its own.
    tasks: dict[str, Any] = {}
    groups: dict[str, Any] = {}
    for name, members in GROUPS.items():
        loaded = tm.load([name])
        assert sorted(loaded["tasks"]) == sorted(members)
        assert sorted(t.task_name for t in loaded["groups"][name].get_all_tasks()) == sorted(
            members
        )
        tasks |= loaded["tasks"]
        groups[name] = loaded["groups"][name]
    weights = {
        name: {agg.weight_by_size for agg in groups[name].aggregate_metric_list or []}
        for name in GROUPS
    }
    assert weights == {
        "clozetest_maxmin": {True},
        "clozetest_maxmin_macro": {False},
        "clozetest_maxmin_ll": {True},
    }
    for lang in LANGUAGES:
        for name in (f"clozetest_maxmin_{lang}", f"clozetest_maxmin_ll_{lang}"):
            docs = list(tasks[name].test_docs())
            assert len(docs) == REAL_COUNTS[lang], name
            assert {d["language"] for d in docs} == {lang}


def test_real_inputs_counts_and_one_mask_each(real_dir: Path) -> None:
    for lang in LANGUAGES:
        items = read_items(real_dir, lang)
        assert len(items) == REAL_COUNTS[lang], lang
        assert all(item["pl_tokens"].count("<mask>") == 1 for item in items), lang
    assert sum(REAL_COUNTS.values()) == 2615


# Written out literally: any change to the prompt, the joining or the field mapping shows here.
PYTHON_51 = (
    "Code:def chebyshev_distance_numpy ( object1 , object2 ) : return numpy . <mask> ( numpy . "
    "absolute ( object1 - object2 ) , axis = 1 ) . T\n"
    "The aim of the code: !\n"
    'Question: Please tell me what "<mask>" in the code should be replaced with and you must '
    "response to me only A or B.\n"
    "A. max\n"
    "B. min\n"
    "Answer:"
)
GO_73 = (
    "Code:func GenerateRandomInt ( <mask> , max int ) int { return int ( GenerateRandomInt64 ( "
    "int64 ( min ) , int64 ( max ) ) ) \n }\n"
    "The aim of the code: Generate random number in [ 0 n )\n"
    'Question: Please tell me what "<mask>" in the code should be replaced with and you must '
    "response to me only A or B.\n"
    "A. max\n"
    "B. min\n"
    "Answer:"
)


@pytest.mark.parametrize(
    ("lang", "idx", "expected"), [("python", "maxmin-51", PYTHON_51), ("go", "maxmin-73", GO_73)]
)
def test_rendered_prompt_is_opencompass_text(
    real_dir: Path, lang: str, idx: str, expected: str
) -> None:
    tm = task_manager(
        TASKS_DIR, {"clozetest_data_dir": str(real_dir), "clozetest_predict_only": True}
    )
    task = tm.load([f"clozetest_maxmin_{lang}"])["tasks"][f"clozetest_maxmin_{lang}"]
    doc = next(d for d in task.test_docs() if d["idx"] == idx)
    assert task.doc_to_text(doc) == expected
    assert task.fewshot_context(doc, num_fewshot=0) == expected  # what a base model receives
    item = next(i for i in read_items(real_dir, lang) if i["idx"] == idx)
    assert prompt_of(item) == expected
