"""Required fields of every benchmark's rows: a malformed row (a missing column, a mistyped id or
field) is an error naming the file, the line and the field; nothing is ever defaulted into a
document. A well-formed row that cannot be scored (a blank program, a problem row without a
usable description) is skipped and counted by reason, never silently and never by stopping."""

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
    return build_with_report(kind, task, clusters, source_dir)[0]


def build_with_report(
    kind: str, task: str, clusters: list[str], source_dir: Path
) -> tuple[list[dict[str, Any]], xd.JoinReport]:
    return xdocs.build_docs(kind, task, clusters, "validation", xd.DataSource(source_dir), {})


def expect(err: pytest.ExceptionInfo[DataError], path: Path, line: int, field: str) -> None:
    assert str(err.value).startswith(f"{path}, row {line}, field {field!r}"), str(err.value)


# --------------------------------------------------------------------------- APR / translation

APR_CASES = [
    (drop("bug_source_code"), "bug_source_code", "missing required field"),
    (put("bug_source_code", None), "bug_source_code", "null"),
    (put("bug_source_code", 42), "bug_source_code", "expected text, got a number"),
    (drop("bug_exec_outcome"), "bug_exec_outcome", "missing"),
    (drop("lang"), "lang", "missing"),
    (drop("apr_id"), "apr_id", "missing"),
    (drop("bug_code_uid"), "bug_code_uid", "missing"),
    (put("bug_code_uid", " b-C-1"), "bug_code_uid", "surrounding whitespace"),
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
    """`bug_code_uid` names a buggy program and is unique; `apr_id` (the problem) repeats."""
    path = copy / "apr/validation/Python.jsonl"
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["bug_code_uid"]
    edit_jsonl(path, 2, put("bug_code_uid", first.upper()))
    with pytest.raises(DataError, match=r"differs only in case.*first at line 1") as err:
        build("apr", "xcodeeval_apr_python", ["Python"], copy)
    expect(err, path, 2, "bug_code_uid")
    edit_jsonl(path, 2, put("bug_code_uid", first))
    with pytest.raises(DataError, match=r"duplicate bug_code_uid .*first at line 1"):
        build("apr", "xcodeeval_apr_python", ["Python"], copy)


@pytest.mark.parametrize("blank", ["", "   \n", "\t"])
@pytest.mark.parametrize(
    ("kind", "task", "folder", "field", "cluster", "built_from"),
    [
        ("apr", "xcodeeval_apr_python", "apr", "bug_source_code", "Python", "Python"),
        (
            "translate",
            "xcodeeval_translate_python",
            "code_translation",
            "source_code",
            "Ruby",
            "Python",
        ),
        ("tag", "xcodeeval_tag_ruby", "tag_classification", "source_code", "Ruby", "Ruby"),
        ("compile", "xcodeeval_compile_ruby", "code_compilation", "source_code", "Ruby", "Ruby"),
    ],
)
def test_blank_programs_are_counted_not_scored(
    copy: Path, blank: str, kind: str, task: str, folder: str, field: str, cluster: str,
    built_from: str,
) -> None:  # fmt: skip
    """The real APR files hold whitespace-only buggy programs: such a row is its own skip
    reason, the task's other rows are built as before."""
    before, _ = build_with_report(kind, task, [built_from], copy)
    edit_jsonl(copy / folder / "validation" / f"{cluster}.jsonl", 1, put(field, blank))
    docs, report = build_with_report(kind, task, [built_from], copy)
    assert len(docs) == len(before) - 1
    assert report.counts()[xd.BLANK_PROGRAM] == 1 and report.unscored >= 1


# --------------------------------------------------------------------------- problems


PROBLEM_CASES = [
    (drop("input_from"), "input_from", "missing required column"),
    (drop("output_to"), "output_to", "missing required column"),
    (drop("input_spec"), "input_spec", "missing required column"),
    (drop("tags"), "tags", "missing required column"),
    (drop("time_limit"), "time_limit", "missing required column"),
    (put("src_uid", 7), "src_uid", "expected text"),
    (put("src_uid", "abc "), "src_uid", "surrounding whitespace"),
]
#: values a single row of the real file may hold: the row is not usable, the file still is
UNUSABLE_PROBLEM_CASES = [
    (put("tags", "dp"), "tags"),
    (put("sample_inputs", [1]), "sample_inputs"),
    (put("sample_inputs", ["1", "2", "3"]), "sample_outputs"),  # counts differ
    (put("description", ""), "description"),
    (put("description", None), "description"),
    (put("notes", 3), "notes"),
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


@pytest.mark.parametrize(("change", "field"), UNUSABLE_PROBLEM_CASES)
def test_an_odd_problem_row_is_counted_not_a_stop(
    copy: Path, change: Callable[[dict[str, Any]], None], field: str
) -> None:
    path = copy / "problem_descriptions.jsonl"
    uid = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["src_uid"]
    edit_jsonl(path, 1, change)
    problems = xd.load_problem_set(xd.DataSource(copy), "xcodeeval_tag_desc_c")
    assert uid not in problems.usable and len(problems.usable) == 2
    assert problems.unusable[uid].startswith(f"line 1: {field}:")
    docs, report = build_with_report("tag_desc", "xcodeeval_tag_desc_c", ["C"], copy)
    assert report.counts() == {xd.UNUSABLE_PROBLEM: 1} and len(docs) == 1


@pytest.mark.parametrize(
    ("change", "read_as"),
    [
        (put("input_spec", None), ("input_spec", "")),
        (put("output_spec", None), ("output_spec", "")),
        (put("input_from", None), ("input_from", "standard input")),
        (put("output_to", None), ("output_to", "standard output")),
        (put("input_from", "стандартный ввод"), ("input_from", "стандартный ввод")),
        (put("time_limit", None), ("time_limit_s", None)),
        (put("memory_limit", "a lot"), ("memory_limit_mb", None)),
        (put("difficulty", "1500"), ("difficulty", None)),
    ],
)
def test_nullable_problem_values_read_as_public_loaders_read_them(
    copy: Path, change: Callable[[dict[str, Any]], None], read_as: tuple[str, Any]
) -> None:
    path = copy / "problem_descriptions.jsonl"
    uid = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["src_uid"]
    edit_jsonl(path, 1, change)
    problem = xd.load_problems(xd.DataSource(copy), "x")[uid]
    assert getattr(problem, read_as[0]) == read_as[1]


def test_a_problem_without_limits_is_judged_only_with_execevals(copy: Path) -> None:
    """The pack's protocol judges with the problem's own limits: a problem without them is
    skipped, counted; ExecEval's limits ignore the problem's, so its protocol keeps it."""
    path = copy / xd.SYNTHESIS_FILES["validation"]
    uid = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["src_uid"]
    edit_jsonl(path, 1, put("time_limit", None))
    source = xd.DataSource(copy)
    rows, report = xd.synthesis_rows(source, "validation", "xcodeeval_synth_c")
    assert report.counts() == {xd.NO_LIMITS: 1} and uid not in {r.problem.src_uid for r in rows}
    rows, report = xd.synthesis_rows(source, "validation", "x", needs_limits=False)
    assert report.counts() == {} and uid in {r.problem.src_uid for r in rows}


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
    with pytest.raises(DataError, match="missing required column") as err:
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
        ("compile", "code_compilation", "C.jsonl", put("source_code", 7), "source_code"),
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


RETRIEVAL_FILE = "retrieval_nl_code/validation/C_nl_code_dev_file.jsonl"


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (drop("negative_code"), "negative_code", "missing"),
        (put("negative_code", {"source_code": "x"}), "negative_code", "expected a list"),
        (put("positive_code", [{"code": "x"}]), "positive_code", "candidate 0: expected"),
        (put("positive_code", [3]), "positive_code", "candidate 0: expected"),
        (drop("src_uid"), "src_uid", "missing"),
        (put("nl", 3), "nl", "expected an object or a text"),
        (put("nl", {"description": 3}), "nl", "'description' must be text"),
    ],
)
def test_retrieval_rows(copy: Path, change: Any, field: str, message: str) -> None:
    path = copy / RETRIEVAL_FILE
    edit_jsonl(path, 1, change)
    with pytest.raises(DataError, match=message) as err:
        build("retrieval_nl_code", "xcodeeval_retrieval_nl_code", ["C"], copy)
    expect(err, path, 1, field)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (put("negative_code", []), xd.NO_CANDIDATES),
        (put("positive_code", []), xd.NO_CANDIDATES),
        (put("positive_code", [{"source_code": " \n"}]), xd.BLANK_PROGRAM),
        (
            put("nl", {"description": "", "input_spec": None, "output_spec": " "}),
            xd.UNUSABLE_PROBLEM,
        ),
    ],
)
def test_retrieval_rows_that_cannot_be_scored_are_counted(
    copy: Path, change: Any, reason: str
) -> None:
    edit_jsonl(copy / RETRIEVAL_FILE, 1, change)
    docs, report = build_with_report(
        "retrieval_nl_code", "xcodeeval_retrieval_nl_code", ["C"], copy
    )
    assert report.counts() == {reason: 1} and report.total == 2 and len(docs) == 1


def test_retrieval_reads_both_shapes_of_candidates_and_queries(copy: Path) -> None:
    """The Hub's objects and plain strings build the same documents."""
    path = copy / RETRIEVAL_FILE
    objects = build("retrieval_nl_code", "xcodeeval_retrieval_nl_code", ["C"], copy)
    raw = [json.loads(x) for x in path.open()]
    nl = raw[0]["nl"]
    assert objects[0]["query"] == (
        f"{nl['description']}\nInput: {nl['input_spec']}\nOutput: {nl['output_spec']}"
    )
    assert objects[0]["candidates"][0] == raw[0]["positive_code"][0]["source_code"]
    for line, row in enumerate(raw, 1):
        plain = {
            "nl": xdocs.nl_query(row["nl"], path, line),
            "positive_code": [c["source_code"] for c in row["positive_code"]],
            "negative_code": [c["source_code"] for c in row["negative_code"]],
        }
        edit_jsonl(path, line, lambda r, plain=plain: r.update(plain))  # type: ignore[misc]
    xd._cached_jsonl.cache_clear()
    strings = build("retrieval_nl_code", "xcodeeval_retrieval_nl_code", ["C"], copy)
    assert strings == objects


def test_well_formed_fixture_rows_still_build_the_same_documents(copy: Path) -> None:
    docs = build("retrieval_nl_code", "xcodeeval_retrieval_nl_code", ["C"], copy)
    raw = [json.loads(x) for x in (copy / RETRIEVAL_FILE).open()]
    assert [d["query"] for d in docs] == [xdocs.nl_query(r["nl"], "", 0) for r in raw]
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
