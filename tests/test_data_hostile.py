"""Hostile benchmark files: bytes that are not UTF-8, a byte-order mark, CRLF line ends, a line of
300 MB, ids repeated or differing only in case or whitespace.

Each gets a clear DataError naming the file and line, or is read exactly like the clean file;
never a traceback from deep inside a parser and never a silently different document.
"""

from __future__ import annotations

import json
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.utils import datafiles
from code_eval_taskpack.utils.errors import DataError
from lm_eval_tasks.clozetest_maxmin import data as cloze
from lm_eval_tasks.code_infilling import data as infill
from lm_eval_tasks.xcodeeval import data as xd
from lm_eval_tasks.xcodeeval import documents as xdocs
from tests.xcodeeval_support import FIXTURES

INFILL_ROWS = Path(__file__).parent / "fixtures" / "infilling" / "rows.jsonl"
HUGE = 300 * 1024 * 1024  # the hostile line's length in bytes


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "xce"
    shutil.copytree(FIXTURES, target)
    xd._cached_jsonl.cache_clear()
    xd._problems.cache_clear()
    xd._unittests.cache_clear()
    return target


def cloze_items(n: int = 3) -> list[dict[str, Any]]:
    return [
        {
            "idx": f"maxmin-{i}",
            "nl_tokens": ["pick", "the", "largest"],
            "pl_tokens": ["def", "f", "(", "x", ")", ":", "return", "<mask>", "(", "x", ")"],
        }
        for i in range(1, n + 1)
    ]


def write_cloze(root: Path, content: bytes, answers: bytes | None = None) -> Path:
    folder = root / "python"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "clozeTest.json").write_bytes(content)
    if answers is not None:
        (folder / "answers.txt").write_bytes(answers)
    return folder


ANSWERS = b"maxmin-1<CODESPLIT>max\nmaxmin-2<CODESPLIT>min\nmaxmin-3<CODESPLIT>max\n"


def cloze_docs(root: Path) -> list[dict[str, Any]]:
    return [i.to_doc() for i in cloze.load_items("python", {"clozetest_data_dir": str(root)})]


def sparse_line_file(path: Path, head: bytes, tail: bytes) -> Path:
    """`head`, then NUL bytes up to HUGE, then `tail`: a 300 MB line costing no disk space."""
    with path.open("wb") as fh:
        fh.write(head)
        fh.seek(HUGE)
        fh.write(tail)
    return path


# --------------------------------------------------------------------------- non-UTF-8 bytes


def test_cloze_inputs_with_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    text = json.dumps(cloze_items(), indent=1).encode()
    bad = text.replace(b'"largest"', b'"larg\xffest"', 1)
    folder = write_cloze(tmp_path, bad, ANSWERS)
    line = bad[: bad.index(b"\xff")].count(b"\n") + 1
    with pytest.raises(DataError, match="not UTF-8") as err:
        cloze_docs(tmp_path)
    assert str(err.value).startswith(f"{folder / 'clozeTest.json'}, row {line}")


def test_cloze_answers_with_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    folder = write_cloze(tmp_path, json.dumps(cloze_items()).encode(), ANSWERS + b"\xfe\xff\n")
    with pytest.raises(DataError, match="not UTF-8") as err:
        cloze_docs(tmp_path)
    assert str(err.value).startswith(f"{folder / 'answers.txt'}, row 4")


def test_xcodeeval_jsonl_and_unittests_with_bytes_that_are_not_utf8(copy: Path) -> None:
    path = copy / "tag_classification/validation/C.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"source_code": "', b'"source_code": "\xc3\x28', 1)
    path.write_bytes(b"".join(lines))
    with pytest.raises(DataError, match="not UTF-8") as err:
        xdocs.build_docs("tag", "t", ["C"], "validation", xd.DataSource(copy), {})
    assert str(err.value).startswith(f"{path}, row 2")
    db = copy / "unittest_db.json"
    raw = db.read_bytes()
    db.write_bytes(raw.replace(b'"3"', b'"\x80"', 1))
    with pytest.raises(DataError, match="not UTF-8") as err2:
        xd.load_unittests(xd.DataSource(copy), "t")
    assert str(err2.value).startswith(f"{db}, row ")


def test_infilling_jsonl_with_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(INFILL_ROWS.read_bytes().replace(b'"prefix": "', b'"prefix": "\xff', 1))
    with pytest.raises(DataError, match="not UTF-8") as err:
        infill.load_rows(path)
    assert str(err.value).startswith(f"{path}, row 1")


# --------------------------------------------------------------------------- BOM and CRLF


def test_cloze_bom_and_crlf_read_like_the_clean_files(tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    write_cloze(clean, json.dumps(cloze_items(), indent=1).encode(), ANSWERS)
    hostile = tmp_path / "hostile"
    inputs = json.dumps(cloze_items(), indent=1).encode().replace(b"\n", b"\r\n")
    write_cloze(
        hostile, b"\xef\xbb\xbf" + inputs, b"\xef\xbb\xbf" + ANSWERS.replace(b"\n", b"\r\n")
    )
    assert cloze_docs(hostile) == cloze_docs(clean)
    lines = [i.line for i in cloze.load_items("python", {"clozetest_data_dir": str(hostile)})]
    assert lines == [i.line for i in cloze.load_items("python", {"clozetest_data_dir": str(clean)})]


def _xce_docs(root: Path) -> list[dict[str, Any]]:
    xd._cached_jsonl.cache_clear()
    xd._problems.cache_clear()
    xd._unittests.cache_clear()
    source = xd.DataSource(root)
    tags, _ = xdocs.build_docs("tag_desc", "t", list(xd.CLUSTERS), "validation", source, {})
    tests = xd.load_unittests(source, "t").raw
    return [*tags, tests]


def test_xcodeeval_bom_and_crlf_read_like_the_clean_files(copy: Path, tmp_path: Path) -> None:
    clean = _xce_docs(copy)
    hostile = tmp_path / "hostile"
    shutil.copytree(copy, hostile)
    for path in [*hostile.rglob("*.jsonl"), hostile / "unittest_db.json"]:
        data = path.read_bytes().replace(b"\n", b"\r\n")
        path.write_bytes(b"\xef\xbb\xbf" + data)
    assert _xce_docs(hostile) == clean
    # a bad row keeps its line number with CRLF ends
    path = hostile / "tag_classification/validation/Go.jsonl"
    lines = path.read_bytes().split(b"\r\n")
    lines[1] = b'{"broken": '
    path.write_bytes(b"\r\n".join(lines))
    with pytest.raises(DataError, match="invalid JSON") as err:
        _xce_docs(hostile)
    assert str(err.value).startswith(f"{path}, row 2")


def test_infilling_bom_and_crlf_read_like_the_clean_file(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + INFILL_ROWS.read_bytes().replace(b"\n", b"\r\n"))
    assert infill.load_rows(path) == infill.load_rows(INFILL_ROWS)


def test_bom_in_the_middle_of_a_file_is_an_error(copy: Path) -> None:
    path = copy / "problem_descriptions.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = b"\xef\xbb\xbf" + lines[1]
    path.write_bytes(b"".join(lines))
    with pytest.raises(DataError, match="invalid JSON") as err:
        xd.load_problems(xd.DataSource(copy), "t")
    assert str(err.value).startswith(f"{path}, row 2")


# --------------------------------------------------------------------------- a 300 MB line


def _peak_while(call: Any) -> tuple[Exception, int]:
    tracemalloc.start()
    try:
        call()
    except Exception as exc:  # returned for the test to check
        error = exc
    else:
        raise AssertionError("no error for a 300 MB line")
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return error, peak


def test_a_300_mb_jsonl_line_is_rejected_without_reading_it_all(copy: Path) -> None:
    path = copy / "code_compilation/validation/C.jsonl"
    first = path.read_bytes().splitlines(keepends=True)[0]
    sparse_line_file(path, first + b'{"src_uid": "', b'"}\n')
    error, peak = _peak_while(
        lambda: xdocs.build_docs("compile", "t", ["C"], "validation", xd.DataSource(copy), {})
    )
    assert isinstance(error, DataError)
    assert str(error).startswith(f"{path}, row 2: line longer than the maximum of")
    # at most MAX_LINE_BYTES (64 MiB) of the line was held, never the 300 MB
    assert peak < HUGE / 2, f"peak {peak / 2**20:.0f} MiB"


def test_a_300_mb_answers_line_is_rejected_without_reading_it_all(tmp_path: Path) -> None:
    folder = write_cloze(tmp_path, json.dumps(cloze_items()).encode())
    sparse_line_file(folder / "answers.txt", b"maxmin-1<CODESPLIT>max\nmaxmin-2", b"\n")
    error, peak = _peak_while(lambda: cloze_docs(tmp_path))
    assert isinstance(error, DataError)
    assert str(error).startswith(f"{folder / 'answers.txt'}, row 2: line longer than")
    assert peak < HUGE / 2, f"peak {peak / 2**20:.0f} MiB"


def test_oversized_cloze_inputs_are_rejected_before_reading(tmp_path: Path) -> None:
    folder = write_cloze(tmp_path, b"")
    sparse_line_file(folder / "clozeTest.json", b"[", b"]")
    error, peak = _peak_while(lambda: cloze_docs(tmp_path))
    assert isinstance(error, DataError)
    assert "exceeds the maximum" in str(error)
    assert peak < 2**20


def test_line_cap_applies_to_every_jsonl_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(datafiles, "MAX_LINE_BYTES", 100)
    with pytest.raises(DataError, match="maximum of 100") as err:
        infill.load_rows(INFILL_ROWS)
    assert str(err.value).startswith(f"{INFILL_ROWS}, row 1")
    with pytest.raises(DataError, match="maximum of 100"):
        xd.read_jsonl(FIXTURES / "problem_descriptions.jsonl")


# --------------------------------------------------------------------------- ids


@pytest.mark.parametrize(
    ("ids", "line", "pattern"),
    [
        (["maxmin-1", "maxmin-2", "maxmin-1"], 3, r"duplicate idx 'maxmin-1' \(first at line 1\)"),
        (["maxmin-1", "MaxMin-1", "maxmin-3"], 2, r"'MaxMin-1'.*differs only in case"),
        (["maxmin-1", "maxmin-2 ", "maxmin-3"], 2, r"'maxmin-2 ' has surrounding whitespace"),
        (["maxmin-1", "\tmaxmin-2", "maxmin-3"], 2, r"surrounding whitespace"),
    ],
)
def test_cloze_input_ids(tmp_path: Path, ids: list[str], line: int, pattern: str) -> None:
    items = cloze_items()
    for item, idx in zip(items, ids, strict=True):
        item["idx"] = idx
    folder = write_cloze(tmp_path, ",\n".join(json.dumps(i) for i in items).join("[]").encode())
    folder.joinpath("answers.txt").write_bytes(ANSWERS)
    with pytest.raises(DataError, match=pattern) as err:
        cloze_docs(tmp_path)
    assert str(err.value).startswith(f"{folder / 'clozeTest.json'}, row {line}, field 'idx'")


def test_cloze_answer_ids_equal_up_to_case(tmp_path: Path) -> None:
    folder = write_cloze(
        tmp_path, json.dumps(cloze_items()).encode(), ANSWERS + b"MAXMIN-2<CODESPLIT>max\n"
    )
    with pytest.raises(DataError, match="differs only in case") as err:
        cloze_docs(tmp_path)
    assert str(err.value).startswith(f"{folder / 'answers.txt'}, row 4, field 'idx'")


@pytest.mark.parametrize("uid", [" {uid}", "{uid}\n", "{uid_upper}"])
def test_xcodeeval_row_ids_with_whitespace_or_case_do_not_join_silently(
    copy: Path, uid: str
) -> None:
    """A src_uid that differs from its problem's only in case or whitespace is not a
    "missing problem" counted and skipped: whitespace is an error, and a case-only difference
    with the problem file is reported as such."""
    path = copy / "code_translation/validation/Ruby.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    real = rows[0]["src_uid"]
    rows[0]["src_uid"] = uid.format(uid=real, uid_upper=real.upper())
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if uid == "{uid_upper}":
        # hex ids in upper case are a different id; the join reports it, never drops it silently
        docs, report = xdocs.build_docs(
            "translate",
            "xcodeeval_translate_python",
            ["Python"],
            "validation",
            xd.DataSource(copy),
            {},
        )
        assert docs and all(d["_unscored_rows"] >= 1 for d in docs)
        assert real.upper() in report.missing_problem
        return
    with pytest.raises(DataError, match="surrounding whitespace") as err:
        xdocs.build_docs(
            "translate",
            "xcodeeval_translate_python",
            ["Python"],
            "validation",
            xd.DataSource(copy),
            {},
        )
    assert str(err.value).startswith(f"{path}, row 1, field 'src_uid'")
