"""Reading jobs and tests from user files, with errors that name the file, line and field.

A batch line is `{"id", "language", "source_code", "unittests": [{"input", "output"}],
"time_limit_s"?, "memory_limit_mb"?, "stop_on_first_fail"?, "comparator"?}`. Everything is
checked before any program runs, including that the language is known: a typo must stop the
batch with a clear message, never turn into a COMPILATION_ERROR for every sample.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import DataError
from ..inputs import (
    DEFAULT_INPUT_LIMITS,
    InputLimits,
    InvalidJob,
    check_memory_limit,
    check_tests_size,
    check_time_limit,
    utf8_size,
)
from ..languages.registry import UnknownLanguageError, resolve
from ..run.compare import MODES
from ..types import Job, TestCase
from .jsonl import iter_jsonl


def parse_tests(
    raw: Any,
    path: str | Path,
    row: int | None = None,
    field: str = "unittests",
    limits: InputLimits = DEFAULT_INPUT_LIMITS,
) -> tuple[TestCase, ...]:
    """Validate a list of `{"input": str, "output": [str, ...]}` (a bare string output is
    accepted), within `limits` (count and total size)."""
    if not isinstance(raw, list):
        raise DataError(
            path, f"expected a list of tests, got {type(raw).__name__}", row=row, field=field
        )
    if not raw:
        raise DataError(path, "at least one test is required", row=row, field=field)
    if len(raw) > limits.tests:
        raise DataError(
            path,
            f"{len(raw)} tests, over the limit of {limits.tests} per job",
            row=row,
            field=field,
        )
    tests = []
    size = 0
    for i, test in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(test, dict):
            raise DataError(
                path, f"a test must be an object, got {type(test).__name__}", row=row, field=where
            )
        if not isinstance(test.get("input"), str):
            raise DataError(path, "missing or non-string 'input'", row=row, field=f"{where}.input")
        out = test.get("output")
        if isinstance(out, str):
            out = [out]
        if not isinstance(out, list) or not out or not all(isinstance(o, str) for o in out):
            raise DataError(
                path,
                "'output' must be a non-empty list of strings (any of them is accepted)",
                row=row,
                field=f"{where}.output",
            )
        tests.append(TestCase(input=test["input"], output=tuple(out)))
        size += utf8_size(test["input"]) + sum(utf8_size(o) for o in out)
    try:
        check_tests_size(size, len(tests), limits)
    except InvalidJob as exc:
        raise DataError(path, exc.message, row=row, field=field) from None
    return tuple(tests)


def read_tests_file(path: str | Path) -> tuple[TestCase, ...]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, "file not found") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(path, f"not a readable JSON file: {exc}") from None
    except RecursionError:
        raise DataError(path, "not a readable JSON file: nested too deeply") from None
    return parse_tests(raw, path, field="tests")


def job_from_record(
    raw: Any, path: str | Path, row: int | None, comparator: str = "default"
) -> Job:
    """One batch record -> Job; `comparator` applies when the record names none."""
    if not isinstance(raw, dict):
        raise DataError(path, f"a line must be a JSON object, got {type(raw).__name__}", row=row)
    job_id = raw.get("id")
    if isinstance(job_id, bool) or not isinstance(job_id, str | int) or job_id == "":
        raise DataError(path, "missing id (a non-empty string or an integer)", row=row, field="id")
    lang_field = "language" if "language" in raw or "lang" not in raw else "lang"
    language = raw.get(lang_field)
    if not isinstance(language, str) or not language.strip():
        raise DataError(
            path, f"{lang_field!r} is required (a non-empty string)", row=row, field=lang_field
        )
    try:
        resolve(language)
    except UnknownLanguageError as exc:
        raise DataError(path, str(exc), row=row, field=lang_field) from None
    source = raw.get("source_code")
    if not isinstance(source, str):
        raise DataError(path, "missing or non-string source_code", row=row, field="source_code")
    tests = parse_tests(raw.get("unittests"), path, row=row, field="unittests")
    kwargs: dict[str, Any] = {}
    for name, check in (
        ("time_limit_s", check_time_limit),
        ("memory_limit_mb", check_memory_limit),
    ):
        value = raw.get(name)
        if value is not None:
            try:
                kwargs[name] = check(value)
            except InvalidJob as exc:
                raise DataError(path, exc.message, row=row, field=name) from None
    stop = raw.get("stop_on_first_fail")
    if stop is not None:
        if not isinstance(stop, bool):
            raise DataError(path, "must be true or false", row=row, field="stop_on_first_fail")
        kwargs["stop_on_first_fail"] = stop
    mode = raw.get("comparator", comparator)
    if mode not in MODES:
        raise DataError(
            path,
            f"unknown comparator {mode!r}; use one of {', '.join(MODES)}",
            row=row,
            field="comparator",
        )
    return Job(
        language=language,
        source_code=source,
        tests=tests,
        id=str(job_id),
        comparator=mode,
        **kwargs,
    )


def read_jobs(path: str | Path, comparator: str = "default") -> Iterator[tuple[int, Job]]:
    """(line number, Job) for every non-blank line of a JSONL file; raises DataError."""
    for lineno, raw in iter_jsonl(path):
        yield lineno, job_from_record(raw, path, lineno, comparator)
