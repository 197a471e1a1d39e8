"""lm-eval's own task tests, unchanged, on every leaf task of the pack.

`make lm-eval-tests` (part of `make test`) fetches the installed lm-eval version's sdist from PyPI
and extracts its `tests/test_tasks.py`. That file's module level builds lm-eval's default tasks
from the Hub, so only what its `BaseTasks` class needs is executed from it: its imports, its
`limit` fixture (10 documents) and the class itself, unedited (read with `ast`). `TestPackTasks`
runs them over every leaf task (`TaskManager(...).all_subtasks`), offline, each task built once
for the whole module with `--metadata` values pointing at:

- ClozeTest-maxmin: the real inputs in `../shared/data/codexglue_clozetest_maxmin`, predict-only
  (the answers are not public);
- xCodeEval: a complete validation-split folder made from real data
  (`tests/xcodeeval_real_folder.py`);
- infilling: the bundled `requests` rows, each also with its hole widened by one and by two lines
  of its prefix (several holes of one instance, as in the dataset), graded by the local grader
  against the bundled checkout.

Without the extracted file the tests skip with the command to run, and fail under
REQUIRE_TOOLCHAINS=1 (CI).
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, SHARED_DATA, TASKS_DIR, require, serve_hub, write_jsonl
from tests.xcodeeval_real_folder import build_real_folder

LM_EVAL_VERSION = importlib.metadata.version("lm-eval")
LM_EVAL_TESTS = ROOT / ".cache" / "lm-eval-tests" / f"lm_eval-{LM_EVAL_VERSION}"
TEST_TASKS = LM_EVAL_TESTS / "tests" / "test_tasks.py"
#: what is executed from lm-eval's file: (node type, name) of its fixture and class
WANTED = {(ast.FunctionDef, "limit"), (ast.ClassDef, "BaseTasks")}
WIDENINGS = (0, 1, 2)  # lines of the prefix each bundled row's hole is widened by


def lm_eval_base_tasks(path: Path) -> dict[str, Any]:
    """`BaseTasks` and the `limit` fixture of lm-eval's `tests/test_tasks.py`, with its top-level
    absolute imports, executed from the file as it is; nothing else of the module runs."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    keep: list[ast.stmt] = []
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and not node.level):
            keep.append(node)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef) and (type(node), node.name) in WANTED:
            keep.append(node)
            found.add(node.name)
    missing = {name for _, name in WANTED} - found
    if missing:
        raise AssertionError(f"{path} defines no {', '.join(sorted(missing))}: lm-eval changed")
    namespace: dict[str, Any] = {"__name__": "lm_eval_test_tasks", "__file__": str(path)}
    exec(compile(ast.Module(body=keep, type_ignores=[]), str(path), "exec"), namespace)
    return namespace


def leaf_tasks() -> list[str]:
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False)
    return sorted(manager.all_subtasks)


def widened(row: dict[str, Any], lines: int) -> dict[str, Any]:
    """`row` with its hole starting `lines` lines earlier: the same file, another middle."""
    if not lines:
        return dict(row)
    head = row["prefix"].splitlines(keepends=True)
    assert len(head) > lines and row["prefix"].endswith("\n")
    return {
        **row,
        "prefix": "".join(head[:-lines]),
        "middle": "".join(head[-lines:]) + row["middle"],
    }


def infilling_rows(path: Path) -> Path:
    """The bundled rows, then each again with its hole widened (`WIDENINGS`)."""
    from lm_eval_tasks.code_infilling import bundled

    rows = bundled.load_rows()
    return write_jsonl(path, [widened(r, n) for n in WIDENINGS for r in rows])


def metadata(work: Path) -> dict[str, Any]:
    """The `--metadata` values every task of the pack is built with (see the module docstring)."""
    from lm_eval_tasks.code_infilling import bundled

    require(SHARED_DATA.is_dir(), f"shared data folder {SHARED_DATA} is missing")
    bundled.build_checkout(work / "repos")
    return {
        "clozetest_data_dir": str(SHARED_DATA / "codexglue_clozetest_maxmin"),
        "clozetest_predict_only": True,
        "xcodeeval_data_dir": str(build_real_folder(work / "xcodeeval")),
        "xcodeeval_split": "validation",
        "sg_infilling_data": str(infilling_rows(work / "infilling_rows.jsonl")),
        "sg_infilling_format": "qwen",  # the format sg_infilling_custom[_exec] needs
        "sg_infilling_grader": "local",
        "sg_infilling_repos_dir": str(work / "repos"),
    }


def offline(mp: pytest.MonkeyPatch) -> None:
    """No Hub: as HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 would set it, and the pack's own Hub
    download fails if anything reaches it."""
    import datasets
    import huggingface_hub.constants

    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    mp.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    serve_hub(mp, None)


@pytest.fixture(scope="module")
def built_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Every leaf task, built once, or the error its building raised; offline throughout."""
    from lm_eval.tasks import TaskManager

    with pytest.MonkeyPatch.context() as mp:
        offline(mp)
        meta = metadata(tmp_path_factory.mktemp("base_tasks"))
        manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=meta)
        tasks: dict[str, Any] = {}
        for name in TASK_NAMES:
            try:
                tasks[name] = manager.load([name])["tasks"][name]
            except Exception as exc:  # reported by each test of that task
                tasks[name] = exc
        yield tasks


TASK_NAMES = leaf_tasks()

if TEST_TASKS.is_file():
    _upstream = lm_eval_base_tasks(TEST_TASKS)
    limit = _upstream["limit"]
    BaseTasks: Any = _upstream["BaseTasks"]
else:
    BaseTasks = object


@pytest.fixture
def task_class(built_tasks: dict[str, Any], task_name: str) -> Any:
    task = built_tasks[task_name]
    if isinstance(task, Exception):
        raise task
    return task


@pytest.mark.parametrize("task_name", TASK_NAMES)
class TestPackTasks(BaseTasks):
    """lm-eval's `BaseTasks` tests on one leaf task of the pack."""


def test_lm_eval_task_tests_are_here() -> None:
    require(
        TEST_TASKS.is_file(),
        f"lm-eval {LM_EVAL_VERSION}'s tests/test_tasks.py is not in {LM_EVAL_TESTS} "
        "(run `make lm-eval-tests`)",
    )


def test_every_leaf_task_of_the_pack_is_tested() -> None:
    """All three benchmarks' tasks are here, and lm-eval's 13 tests run on each."""
    families = {"clozetest_maxmin": 12, "xcodeeval_": 104, "sg_infilling_": 12}
    assert {f: sum(n.startswith(f) for n in TASK_NAMES) for f in families} == families
    assert len(TASK_NAMES) == sum(families.values())
    require(TEST_TASKS.is_file(), "lm-eval's tests/test_tasks.py is missing")
    tests = [n for n in vars(BaseTasks) if n.startswith("test_")]
    assert len(tests) == 13, tests


def test_the_synthesis_prompt_keeps_the_authors_bytes(built_tasks: dict[str, Any]) -> None:
    """The xCodeEval authors' prompt (their sample script), rebuilt here from the raw problem:
    lm-eval's zero-shot context is exactly it, trailing space included, and the task's
    `target_delimiter` is not whitespace (lm-eval's rule for prompts ending in whitespace)."""
    root = Path(built_tasks["xcodeeval_synth_greedy_cpp"].config.metadata["xcodeeval_data_dir"])
    problems = {
        p["src_uid"]: p
        for p in map(json.loads, (root / "problem_descriptions.jsonl").open(encoding="utf-8"))
    }
    for name, lang in (("xcodeeval_synth_greedy_cpp", "C++"), ("xcodeeval_synth_kotlin", "Kotlin")):
        task = built_tasks[name]
        assert task.config.target_delimiter == ""
        docs = list(task.test_docs())
        assert len(docs) == len(problems) == 106
        for doc in docs:
            p = problems[doc["src_uid"]]
            prompt = (
                f"Write a program in {lang} to solve this programming problem:\n"
                f"Description: {p['description']}\nInput Specification: {p['input_spec']}\n"
                f"Output Specification: {p['output_spec']}\n"
            )
            for given, wanted in zip(p["sample_inputs"], p["sample_outputs"], strict=True):
                prompt += f"\nSample Input:\n{given}\nSample Output:\n{wanted}"
            prompt += (
                f"\nNotes: {p['notes']}\nTake input from {p['input_from']} and output to "
                f"{p['output_to']}\nProvide the {lang} code without any extra description or "
                "tokens. Target code: "
            )
            assert task.doc_to_text(doc) == prompt
            assert task.fewshot_context(doc, num_fewshot=0) == prompt
