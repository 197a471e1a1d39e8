"""The one JSON Lines reader: every bad line is a DataError naming the file and the line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from execution.errors import DataError


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line number, object) for every non-blank line; streams, so huge files are fine."""
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 - the generator owns the handle
    except FileNotFoundError:
        raise DataError(path, "file not found") from None
    except OSError as exc:
        raise DataError(path, f"cannot open: {exc}") from None
    with fh:
        lineno = 0
        while True:
            try:
                line = fh.readline()
            except UnicodeDecodeError as exc:
                raise DataError(path, f"not UTF-8 text: {exc}", row=lineno + 1) from None
            if not line:
                return
            lineno += 1
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
