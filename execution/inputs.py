"""Bounds on what a job may ask for, fixed so that a job's validity never depends on the host.

A job outside them is refused before anything runs: it is the caller's fault (a usage error,
exit code 2 in the CLI, HTTP 400 in the server, `InvalidJob` from the Python API), except a
source over `InputLimits.source_bytes`, which is the program's own fault and is judged
COMPILATION_ERROR with a detail naming the limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .limits import MB
from .types import Job

#: largest problem time limit (seconds, before the runtime's time factor)
MAX_TIME_LIMIT_S = 600.0
#: largest memory limit (MB); the stack limit follows the memory limit, so it is bounded too
MAX_MEMORY_MB = 16 * 1024


@dataclass(frozen=True)
class InputLimits:
    """Sizes a job may have. Defaults are fixed constants (never derived from the machine)."""

    source_bytes: int = 64 * MB  # UTF-8 size of the source; over it: COMPILATION_ERROR
    tests_bytes: int = 1024 * MB  # UTF-8 size of all inputs + expected outputs of a job
    tests: int = 10_000  # number of tests of a job


DEFAULT_INPUT_LIMITS = InputLimits()


class InvalidJob(ValueError):
    """A job the engine refuses to judge (the caller's fault); `field` names the culprit."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"field {field!r}: {message}")


def is_number(value: Any) -> bool:
    """An int or a finite float (a bool is not a number here)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (isinstance(value, int) or math.isfinite(value))
    )


def positive_number(value: Any) -> bool:
    """A finite number > 0 (a bool is not a number here)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def check_time_limit(value: Any) -> float:
    if not is_number(value) or not 0 < value <= MAX_TIME_LIMIT_S:
        raise InvalidJob(
            "time_limit_s", f"must be a positive number of seconds, at most {MAX_TIME_LIMIT_S:g}"
        )
    return float(value)


def check_memory_limit(value: Any) -> int:
    """A memory limit in MB within 1..MAX_MEMORY_MB (a fraction rounds up)."""
    if not is_number(value) or not 1 <= value <= MAX_MEMORY_MB:
        raise InvalidJob("memory_limit_mb", f"must be a number of MB from 1 to {MAX_MEMORY_MB}")
    return math.ceil(value)


def utf8_size(text: str) -> int:
    """UTF-8 size of `text` without encoding it whole."""
    if text.isascii():
        return len(text)
    piece = 1 << 20
    return sum(
        len(text[i : i + piece].encode("utf-8", "surrogatepass"))
        for i in range(0, len(text), piece)
    )


def check_tests_size(sizes: list[int] | int, count: int, limits: InputLimits) -> None:
    """Raise InvalidJob if `count` tests of total UTF-8 size `sizes` exceed `limits`."""
    if count > limits.tests:
        raise InvalidJob("unittests", f"{count} tests, over the limit of {limits.tests} per job")
    total = sizes if isinstance(sizes, int) else sum(sizes)
    if total > limits.tests_bytes:
        raise InvalidJob(
            "unittests",
            f"tests total {total} bytes (inputs + expected outputs), over the limit of "
            f"{limits.tests_bytes} bytes per job",
        )


def tests_size(job: Job) -> int:
    return sum(utf8_size(t.input) + sum(utf8_size(o) for o in t.output) for t in job.tests)


def validate_job(job: Job, limits: InputLimits = DEFAULT_INPUT_LIMITS) -> None:
    """Raise InvalidJob for numbers out of range or tests over `limits` (not for the source:
    an oversized source is judged, see `source_too_large`)."""
    check_time_limit(job.time_limit_s)
    if not isinstance(job.memory_limit_mb, int) or isinstance(job.memory_limit_mb, bool):
        raise InvalidJob("memory_limit_mb", "must be an integer number of MB")
    check_memory_limit(job.memory_limit_mb)
    if not isinstance(job.stop_on_first_fail, bool):
        raise InvalidJob("stop_on_first_fail", "must be true or false")
    check_tests_size(tests_size(job), len(job.tests), limits)


def source_too_large(source: str, limits: InputLimits = DEFAULT_INPUT_LIMITS) -> str:
    """The COMPILATION_ERROR detail for a source over the limit, or "" when it fits."""
    if len(source) * 4 <= limits.source_bytes:  # cannot be over: skip measuring
        return ""
    size = utf8_size(source)
    if size <= limits.source_bytes:
        return ""
    return (
        f"source code is {size} bytes, over the limit of {limits.source_bytes} bytes "
        f"(InputLimits.source_bytes, {limits.source_bytes // MB} MiB)"
    )
