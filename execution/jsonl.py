"""The one JSON Lines reader: every bad line is a DataError naming the file and the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from execution.errors import DataError


def iter_lines(path: str | Path, max_line_chars: int | None = None) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of every line, streamed; a UTF-8 BOM is dropped.

    With `max_line_chars`, a longer line is a DataError after reading at most that many
    characters of it, so a hostile file cannot make the reader hold a huge line in memory.
    """
    try:
        fh = open(path, encoding="utf-8-sig")  # noqa: SIM115 - the generator owns the handle
    except FileNotFoundError:
        raise DataError(path, "file not found") from None
    except OSError as exc:
        raise DataError(path, f"cannot open: {exc}") from None
    limit = -1 if max_line_chars is None else max_line_chars + 2  # room for "\r\n"
    with fh:
        lineno = 0
        while True:
            try:
                line = fh.readline(limit)
            except UnicodeDecodeError as exc:
                raise DataError(path, f"not UTF-8 text: {exc}", row=lineno + 1) from None
            if not line:
                return
            lineno += 1
            if max_line_chars is not None and len(line.rstrip("\r\n")) > max_line_chars:
                raise DataError(
                    path, f"line longer than the maximum of {max_line_chars} characters", row=lineno
                )
            yield lineno, line


def iter_jsonl(
    path: str | Path, max_line_chars: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for every non-blank line; streams, so huge files are fine."""
    for lineno, line in iter_lines(path, max_line_chars):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"invalid JSON: {exc}", row=lineno) from None
        if not isinstance(row, dict):
            raise DataError(path, "expected a JSON object per line", row=lineno)
        yield lineno, row
