"""Required fields of every benchmark's rows: missing, null, empty or mistyped is an error naming
the file, the line and the field; nothing is ever defaulted into a document."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.utils.errors import DataError
from lm_eval_tasks.code_infilling import data as infill
from lm_eval_tasks.xcodeeval import data as xd
from lm_eval_tasks.xcodeeval import documents as xdocs
from lm_eval_tasks.xcodeeval import score as xcodeeval_score
from tests.xcodeeval_support import FIXTURES

INFILL_ROWS = Path(__file__).parent / "fixtures" / "infilling" / "rows.jsonl"


def edit_jsonl(path: Path, line: int, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply `change` to the row on 1-based `line` of a JSONL file."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[line - 1])
    change(row)
    lines[line - 1] = json.dumps(row) + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def drop(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda row: row.pop(name)


def put(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda row: row.__setitem__(name, value)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "xce"
    shutil.copytree(FIXTURES, target)
    xd._cached_jsonl.cache_clear()
    xd._problems.cache_clear()
    return target


def build(kind: str, task: str, clusters: list[str], source_dir: Path) -> list[dict[str, Any]]:
    return xdocs.build_docs(kind, task, clusters, "validation", xd.DataSource(source_dir), {})


def expect(err: pytest.ExceptionInfo[DataError], path: Path, line: int, field: str) -> None:
    assert str(err.value).startswith(f"{path}, row {line}, field {field!r}"), str(err.value)


# --------------------------------------------------------------------------- APR / translation

APR_CASES = [
    (drop("bug_source_code"), "bug_source_code", "missing required field"),
    (put("bug_source_code", ""), "bug_source_code", "required field is empty"),
    (put("bug_source_code", "   \n"), "bug_source_code", "required field is empty"),
    (put("bug_source_code", None), "bug_source_code", "null"),
    (put("bug_source_code", 42), "bug_source_code", "expected text, got a number"),
    (drop("bug_exec_outcome"), "bug_exec_outcome", "missing"),
    (drop("lang"), "lang", "missing"),
    (drop("apr_id"), "apr_id", "missing"),
    (put("apr_id", " apr-C-1"), "apr_id", "surrounding whitespace"),
    (put("lang_cluster", "C++"), "lang_cluster", "in the file of cluster 'Python'"),
    (put("src_uid", 12345), "src_uid", "expected text"),
]


@pytest.mark.parametrize(("change", "field", "message"), APR_CASES)
def test_apr_row_required_fields(
    copy: Path, change: Callable[[dict[str, Any]], None], field: str, message: str
) -> None:
    path = copy / "apr/validation/Python.jsonl"
    edit_jsonl(path, 2, change)
    with pytest.raises(DataError, match=message) as err:
        build("apr", "xcodeeval_apr_python", ["Python"], copy)
    expect(err, path, 2, field)


TRANSLATION_CASES = [
    (drop("source_code"), "source_code", "missing required field"),
    (put("source_code", ""), "source_code", "required field is empty"),
    (put("source_code", ["int main(){}"]), "source_code", "expected text, got list"),
    (drop("code_uid"), "code_uid", "missing"),
    (drop("lang"), "lang", "missing"),
    (drop("lang_cluster"), "lang_cluster", "missing"),
    (put("lang_cluster", "Go"), "lang_cluster", "in the file of cluster 'Ruby'"),
]


@pytest.mark.parametrize(("change", "field", "message"), TRANSLATION_CASES)
def test_translation_row_required_fields(
    copy: Path, change: Callable[[dict[str, Any]], None], field: str, message: str
) -> None:
    path = copy / "code_translation/validation/Ruby.jsonl"
    edit_jsonl(path, 1, change)
    with pytest.raises(DataError, match=message) as err:
        build("translate", "xcodeeval_translate_python", ["Python"], copy)
    expect(err, path, 1, field)


def test_duplicate_ids_in_an_execution_file(copy: Path) -> None:
    path = copy / "apr/validation/Python.jsonl"
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["apr_id"]
    edit_jsonl(path, 2, put("apr_id", first.upper()))
    with pytest.raises(DataError, match=r"differs only in case.*first at line 1") as err:
        build("apr", "xcodeeval_apr_python", ["Python"], copy)
    expect(err, path, 2, "apr_id")
    edit_jsonl(path, 2, put("apr_id", first))
    with pytest.raises(DataError, match=r"duplicate apr_id .*first at line 1"):
        build("apr", "xcodeeval_apr_python", ["Python"], copy)


# --------------------------------------------------------------------------- problems


PROBLEM_CASES = [
    (drop("input_from"), "input_from", "missing"),
    (drop("output_to"), "output_to", "missing"),
    (drop("input_spec"), "input_spec", "missing"),
    (drop("tags"), "tags", "missing"),
    (put("tags", "dp"), "tags", "expected a list"),
    (put("difficulty", "1500"), "difficulty", "expected an integer"),
    (put("difficulty", True), "difficulty", "expected an integer"),
    (put("sample_inputs", [1]), "sample_inputs", "expected text, got a number"),
    (put("src_uid", 7), "src_uid", "expected text"),
    (put("src_uid", "abc "), "src_uid", "surrounding whitespace"),
    (put("description", ""), "description", "empty"),
    (put("notes", 3), "notes", "expected text"),
    (put("time_limit", 2), "time_limit", "expected text, got a number"),
]


@pytest.mark.parametrize(("change", "field", "message"), PROBLEM_CASES)
def test_problem_row_required_fields(
    copy: Path, change: Callable[[dict[str, Any]], None], field: str, message: str
) -> None:
    path = copy / "problem_descriptions.jsonl"
    edit_jsonl(path, 3, change)
    with pytest.raises(DataError, match=message) as err:
        xd.load_problems(xd.DataSource(copy), "xcodeeval_tag_desc_c")
    expect(err, path, 3, field)


def test_problem_ids_repeated_or_equal_up_to_case(copy: Path) -> None:
    path = copy / "problem_descriptions.jsonl"
    uid = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["src_uid"]
    edit_jsonl(path, 3, put("src_uid", uid))
    with pytest.raises(DataError, match=r"duplicate src_uid .*first at line 1") as err:
        xd.load_problems(xd.DataSource(copy), "x")
    expect(err, path, 3, "src_uid")
    edit_jsonl(path, 3, put("src_uid", uid.upper()))
    with pytest.raises(DataError, match="differs only in case"):
        xd.load_problems(xd.DataSource(copy), "x")


def test_synthesis_file_rows_are_problems_checked_the_same_way(copy: Path) -> None:
    path = copy / xd.SYNTHESIS_FILES["validation"]
    edit_jsonl(path, 1, drop("output_to"))
    with pytest.raises(DataError) as err:
        xd.synthesis_rows(xd.DataSource(copy), "validation", "xcodeeval_synth_c")
    expect(err, path, 1, "output_to")


@pytest.mark.parametrize(
    ("tests", "message"),
    [
        ([{"input": 5, "output": ["5"]}], "'input' must be text"),
        ([{"input": "1", "output": [5]}], "every 'output' must be text"),
        ([{"input": "1", "output": []}], "'output' must be text or a list"),
        ([{"input": "1", "output": {"a": 1}}], "'output' must be text or a list"),
        ({"input": "1"}, "expected a list of tests"),
    ],
)
def test_unit_tests_are_not_converted(tests: Any, message: str) -> None:
    with pytest.raises(DataError, match=message):
        xd.tests_for({"u": tests}, "u")


# --------------------------------------------------------------------------- understanding tasks


@pytest.mark.parametrize(
    ("kind", "folder", "file", "change", "field"),
    [
        ("tag", "tag_classification", "C.jsonl", drop("lang"), "lang"),
        ("tag", "tag_classification", "C.jsonl", put("tags", "dp"), "tags"),
        ("tag", "tag_classification", "C.jsonl", drop("code_uid"), "code_uid"),
        ("compile", "code_compilation", "C.jsonl", drop("src_uid"), "src_uid"),
        (
            "compile",
            "code_compilation",
            "C.jsonl",
            put("compilation_error", "true"),
            "compilation_error",
        ),
        ("compile", "code_compilation", "C.jsonl", put("source_code", ""), "source_code"),
    ],
)
def test_tag_and_compile_rows(
    copy: Path, kind: str, folder: str, file: str, change: Any, field: str
) -> None:
    path = copy / folder / "validation" / file
    edit_jsonl(path, 1, change)
    with pytest.raises(DataError) as err:
        build(kind, f"xcodeeval_{kind}_c", ["C"], copy)
    expect(err, path, 1, field)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (drop("negative_code"), "negative_code", "missing"),
        (put("negative_code", []), "negative_code", "no program"),
        (put("positive_code", [""]), "positive_code", "empty program"),
        (drop("src_uid"), "src_uid", "missing"),
        (put("nl", 3), "nl", "expected text"),
    ],
)
def test_retrieval_rows(copy: Path, change: Any, field: str, message: str) -> None:
    path = copy / "retrieval_nl_code/dev/C_nl_code_dev_file.jsonl"
    edit_jsonl(path, 1, change)
    with pytest.raises(DataError, match=message) as err:
        build("retrieval_nl_code", "xcodeeval_retrieval_nl_code", ["C"], copy)
    expect(err, path, 1, field)


def test_well_formed_fixture_rows_still_build_the_same_documents(copy: Path) -> None:
    docs = build("retrieval_nl_code", "xcodeeval_retrieval_nl_code", ["C"], copy)
    raw = [json.loads(x) for x in (copy / "retrieval_nl_code/dev/C_nl_code_dev_file.jsonl").open()]
    assert [d["query"] for d in docs] == [r["nl"] for r in raw]
    tags = build("tag", "xcodeeval_tag_c", ["C"], copy)
    raw = [json.loads(x) for x in (copy / "tag_classification/validation/C.jsonl").open()]
    assert [(d["lang"], d["gold_tags"]) for d in tags] == [(r["lang"], r["tags"]) for r in raw]


# --------------------------------------------------------------------------- scoring CLI, infilling


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ({"src_uid": 1, "lang_cluster": "C", "source_code": "x"}, "src_uid"),
        ({"src_uid": "u", "lang_cluster": "C", "source_code": 42}, "source_code"),
        ({"src_uid": "u", "lang_cluster": "C"}, "source_code"),
        ({"src_uid": "u", "lang": 3, "source_code": "x"}, "lang"),
    ],
)
def test_score_cli_prediction_lines(tmp_path: Path, line: dict[str, Any], field: str) -> None:
    predictions = tmp_path / "p.jsonl"
    predictions.write_text(json.dumps(line) + "\n", encoding="utf-8")
    args = xcodeeval_score._parse_args([str(predictions), "--data-dir", str(FIXTURES)])
    with pytest.raises(DataError) as err:
        xcodeeval_score.score(args)
    expect(err, predictions, 1, field)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (put("version", 1.1), "version"),
        (put("created_at", 1700000000), "created_at"),
        (put("prefix", 5), "prefix"),
        (drop("middle"), "middle"),
        (put("instance_id", " "), "instance_id"),
    ],
)
def test_infilling_rows(tmp_path: Path, change: Any, field: str) -> None:
    path = tmp_path / "rows.jsonl"
    shutil.copy(INFILL_ROWS, path)
    edit_jsonl(path, 1, change)
    with pytest.raises(DataError) as err:
        infill.load_rows(path)
    expect(err, path, 1, field)
