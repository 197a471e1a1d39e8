"""One error type for bad input files (a job file, a results file, a request's rows), so every
message names the file, the row and the field."""

from __future__ import annotations

from pathlib import Path


class DataError(ValueError):
    """Bad or missing input: a file the engine was asked to read, or a part of one.

    The message always starts with the file (and, when known, the 1-based row/line and the
    field) so that a user can open the file at the right place without reading a traceback.
    """

    def __init__(
        self,
        path: str | Path,
        message: str,
        *,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path)
        self.row = row
        self.field = field
        self.message = message
        where = self.path
        if row is not None:
            where += f", row {row}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")
