"""The one JSON Lines reader: every bad line is a DataError naming the file and the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import DataError


def iter_lines(path: str | Path, max_line_bytes: int | None = None) -> Iterator[tuple[int, str]]:
    """(1-based line number, text) of every line, streamed; a leading UTF-8 BOM is dropped.

    Lines are decoded one by one, so bytes that are not UTF-8 are reported on their own line.
    With `max_line_bytes`, a longer line is a DataError after reading at most that many bytes
    of it, so a hostile file cannot make the reader hold a huge line in memory.
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 - the generator owns the handle
    except FileNotFoundError:
        raise DataError(path, "file not found") from None
    except OSError as exc:
        raise DataError(path, f"cannot open: {exc}") from None
    limit = -1 if max_line_bytes is None else max_line_bytes + 2  # room for "\r\n"
    with fh:
        lineno = 0
        while True:
            raw = fh.readline(limit)
            if not raw:
                return
            lineno += 1
            if max_line_bytes is not None and len(raw.rstrip(b"\r\n")) > max_line_bytes:
                raise DataError(
                    path, f"line longer than the maximum of {max_line_bytes} bytes", row=lineno
                )
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(path, f"not UTF-8 text: {exc}", row=lineno) from None


def iter_jsonl(
    path: str | Path, max_line_bytes: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for every non-blank line; streams, so huge files are fine."""
    for lineno, line in iter_lines(path, max_line_bytes):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:  # JSONDecodeError, or an integer of > 4300 digits
            raise DataError(path, f"invalid JSON: {exc}", row=lineno) from None
        except RecursionError:
            raise DataError(path, "invalid JSON: nested too deeply", row=lineno) from None
        if not isinstance(row, dict):
            raise DataError(path, "expected a JSON object per line", row=lineno)
        yield lineno, row
