"""Property tests for the benchmark row parsers: any input gives either the exact document the
row describes, a DataError, or (for values the real files hold in single rows) a row counted as
not scorable; never another exception and never a converted value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from code_eval_taskpack.utils import datafiles
from code_eval_taskpack.utils.errors import DataError
from lm_eval_tasks.clozetest_maxmin import data as cloze
from lm_eval_tasks.code_infilling import data as infill
from lm_eval_tasks.xcodeeval import data as xd
from lm_eval_tasks.xcodeeval import kinds

JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)

GOOD_PROBLEM: dict[str, Any] = {
    "src_uid": "abc123",
    "description": "Add two numbers.",
    "input_spec": "Two integers.",
    "output_spec": "Their sum.",
    "notes": None,
    "sample_inputs": ["1 2\n"],
    "sample_outputs": ["3\n"],
    "input_from": "standard input",
    "output_to": "standard output",
    "time_limit": "2 seconds",
    "memory_limit": "256 megabytes",
    "tags": ["math"],
    "difficulty": 800,
}


@given(st.sampled_from(sorted(GOOD_PROBLEM)), JSON_VALUES)
def test_problem_row_is_exact_or_an_error(field: str, value: Any) -> None:
    row = {**GOOD_PROBLEM, field: value}
    try:
        problem = xd.Problem.from_row(row, "p.jsonl", 7)
    except DataError as exc:  # the row cannot even be named: the file is malformed
        assert exc.row == 7 and exc.path == "p.jsonl" and exc.field == "src_uid" == field
        return
    except xd.UnusableProblem as exc:  # counted per row by the loaders
        assert exc.field in (field, "sample_outputs")
        return
    # accepted: every text field is the row's own value, or null read as its documented default
    for name in ("src_uid", "description", "input_spec", "output_spec", "input_from", "output_to"):
        want = row[name] if row[name] is not None else getattr(problem, name)
        assert getattr(problem, name) == want and isinstance(want, str)
        assert row[name] is not None or name in problem.defaulted
    assert problem.notes == row["notes"]
    assert list(problem.sample_inputs) == (row["sample_inputs"] or [])
    assert list(problem.tags) == (row["tags"] or [])
    assert problem.difficulty == row["difficulty"] or problem.difficulty is None
    for name, parse, got in (
        ("time_limit", xd.parse_time_limit, problem.time_limit_s),
        ("memory_limit", xd.parse_memory_limit, problem.memory_limit_mb),
    ):
        if got is not None:  # read only from a value its parser reads
            assert got == parse(row[name])


GOOD_APR: dict[str, Any] = {
    "src_uid": "abc123",
    "lang": "Python 3",
    "lang_cluster": "Python",
    "bug_source_code": "print(1)\n",
    "bug_exec_outcome": "WRONG_ANSWER",
    "apr_id": "a1",
    "bug_code_uid": "b1",
}


@given(st.sampled_from(sorted(GOOD_APR)), JSON_VALUES | st.text(max_size=5))
def test_execution_row_is_exact_or_an_error(field: str, value: Any) -> None:
    row = {**GOOD_APR, field: value}
    try:
        out = xd.check_kind_row(kinds.APR, row, "Python", "apr.jsonl", 3, {})
    except DataError as exc:
        assert exc.row == 3 and exc.field == field
        return
    if out is None:  # a blank buggy program: counted by the caller, never scored
        assert field == "bug_source_code" and isinstance(value, str) and not value.strip()
        return
    assert out == row
    for name in GOOD_APR:
        assert isinstance(out[name], str) and out[name].strip()


@given(JSON_VALUES)
def test_required_text_never_converts(value: Any) -> None:
    try:
        text = datafiles.required_text({"f": value}, "f", "x", 1)
    except DataError as exc:
        assert exc.field == "f"
        assert not isinstance(value, str) or not value.strip()
        return
    assert text is value


@given(st.dictionaries(st.text(max_size=3), JSON_VALUES, max_size=3))
def test_unit_tests_are_exact_or_an_error(entry: dict[str, Any]) -> None:
    try:
        tests = xd.tests_for({"u": [entry]}, "u")
    except DataError:
        return
    assert tests is not None
    # exact, but for CRLF line ends read as LF (the hidden tests' own)
    assert tests[0]["input"] == xd.crlf_to_lf(entry["input"])
    expected = entry["output"] if isinstance(entry["output"], list) else [entry["output"]]
    assert tests[0]["output"] == [xd.crlf_to_lf(o) for o in expected]


ID_CHARS = st.sampled_from(["maxmin-1", "maxmin-2", "MAXMIN-1", " maxmin-3", "m"])


@given(st.lists(st.tuples(ID_CHARS, st.sampled_from(["max", "min", "MAX", ""])), max_size=5))
def test_answers_file_is_exact_or_an_error(
    tmp_path_factory: Any, lines: list[tuple[str, str]]
) -> None:
    path = Path(tmp_path_factory.mktemp("a")) / "answers.txt"
    path.write_text("".join(f"{i}<CODESPLIT>{lab}\n" for i, lab in lines), encoding="utf-8")
    try:
        answers = cloze.read_answers(path)
    except DataError as exc:
        assert exc.row is not None and 1 <= exc.row <= len(lines)
        return
    assert {k: v[0] for k, v in answers.items()} == {i.strip(): lab for i, lab in lines}
    folded = [i.strip().casefold() for i, _ in lines]
    assert len(set(folded)) == len(folded)


@given(st.binary(max_size=200))
def test_jsonl_reader_on_arbitrary_bytes(tmp_path_factory: Any, content: bytes) -> None:
    path = Path(tmp_path_factory.mktemp("j")) / "rows.jsonl"
    path.write_bytes(content)
    try:
        rows = list(datafiles.jsonl_rows(path))
    except DataError as exc:
        assert exc.row is not None
        return
    for lineno, row in rows:
        assert isinstance(row, dict) and lineno >= 1


@given(st.sampled_from(["version", "created_at", "repo", "prefix", "instance_id"]), JSON_VALUES)
def test_infilling_row_is_exact_or_an_error(field: str, value: Any) -> None:
    source = Path(__file__).parent / "fixtures" / "infilling" / "rows.jsonl"
    row = json.loads(source.read_text(encoding="utf-8").splitlines()[0])
    row[field] = value
    try:
        out = infill.check_row(row, source, 1)
    except DataError as exc:
        assert exc.row == 1
        return
    assert out[field] == ("" if value is None else value)
