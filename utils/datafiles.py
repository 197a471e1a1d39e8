"""Reading benchmark files that may be hostile: bounded, UTF-8 only, and strict about fields.

Every loader of the three benchmarks reads through here, so they share one set of rules:

* JSON Lines and text files are streamed line by line; a line longer than `MAX_LINE_BYTES` is
  an error found after reading at most that much of it (no benchmark row comes near it: the longest are retrieval rows
  holding a few dozen programs).
* Whole-file JSON (`clozeTest.json`, `unittest_db.json`) must be UTF-8; `clozeTest.json` is
  capped at `MAX_SMALL_JSON_BYTES`, checked before reading.
* A UTF-8 byte-order mark is dropped; CRLF line ends are read like LF.
* A required field that is missing, null, of the wrong type or (for text) empty is an error
  naming the file, the row (line) and the field; nothing is defaulted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.judge.jsonl import iter_jsonl, iter_lines

from .errors import DataError

MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_SMALL_JSON_BYTES = 64 * 1024 * 1024


def jsonl_rows(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, object) of a benchmark JSONL file, with the line-length cap."""
    return iter_jsonl(path, MAX_LINE_BYTES)


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line, text without its line end) of a benchmark text file, with the line-length cap."""
    for lineno, line in iter_lines(path, MAX_LINE_BYTES):
        yield lineno, line.rstrip("\r\n")


def read_json(path: str | Path, max_bytes: int | None = None) -> tuple[Any, str]:
    """(parsed value, text) of a whole-file JSON document; bad bytes or JSON name the line."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if max_bytes is not None and size > max_bytes:
            raise DataError(path, f"file of {size} bytes exceeds the maximum of {max_bytes}")
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(path, f"cannot read: {exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(path, f"not UTF-8 text: {exc}", row=line) from None
    del raw
    try:
        return json.loads(text), text
    except json.JSONDecodeError as exc:
        raise DataError(path, f"invalid JSON: {exc.msg}", row=exc.lineno) from None
    except RecursionError:
        raise DataError(path, "invalid JSON: nested too deeply") from None


def _present(row: Mapping[str, Any], name: str, path: str | Path, row_no: int | None) -> Any:
    if name not in row:
        raise DataError(path, "missing required field", row=row_no, field=name)
    value = row[name]
    if value is None:
        raise DataError(path, "required field is null", row=row_no, field=name)
    return value


def _kind(value: Any) -> str:
    return "a number" if isinstance(value, int | float) else type(value).__name__


def required_text(
    row: Mapping[str, Any],
    name: str,
    path: str | Path,
    row_no: int | None,
    *,
    allow_empty: bool = False,
) -> str:
    """A required string field; a number, list or blank text is an error (never converted)."""
    value = _present(row, name, path, row_no)
    if not isinstance(value, str):
        raise DataError(
            path, f"expected text, got {_kind(value)} {value!r:.60}", row=row_no, field=name
        )
    if not allow_empty and not value.strip():
        raise DataError(path, "required field is empty", row=row_no, field=name)
    return value


def required_id(row: Mapping[str, Any], name: str, path: str | Path, row_no: int | None) -> str:
    """A required identifier: non-empty text with no leading or trailing whitespace."""
    value = required_text(row, name, path, row_no)
    if value != value.strip():
        raise DataError(
            path, f"identifier {value!r} has surrounding whitespace", row=row_no, field=name
        )
    return value


def optional_text(row: Mapping[str, Any], name: str, path: str | Path, row_no: int | None) -> str:
    """An optional string field: absent or null is "", any other non-string is an error."""
    value = row.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DataError(
            path, f"expected text, got {_kind(value)} {value!r:.60}", row=row_no, field=name
        )
    return value


def text_list(row: Mapping[str, Any], name: str, path: str | Path, row_no: int | None) -> list[str]:
    """A required list of strings (a bare string is not a list of its characters)."""
    value = _present(row, name, path, row_no)
    if not isinstance(value, list):
        raise DataError(path, f"expected a list, got {_kind(value)}", row=row_no, field=name)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise DataError(
                path, f"item {i}: expected text, got {_kind(item)}", row=row_no, field=name
            )
    return list(value)


class IdRegistry:
    """Ids seen in one file: a repeat, or two ids equal up to case, is an error naming both rows."""

    def __init__(self, path: str | Path, field: str) -> None:
        self.path = path
        self.field = field
        self._seen: dict[str, tuple[str, int | None]] = {}

    def add(self, value: str, row_no: int | None) -> None:
        key = value.casefold()
        if key in self._seen:
            first, first_row = self._seen[key]
            how = (
                f"duplicate {self.field} {value!r}"
                if first == value
                else f"{self.field} {value!r} differs only in case from {first!r}"
            )
            raise DataError(
                self.path,
                f"{how} (first at line {first_row})",
                row=row_no,
                field=self.field,
            )
        self._seen[key] = (value, row_no)
