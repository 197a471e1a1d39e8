"""Sandboxed, parallel, cached judge of stdin/stdout programs in 11 languages.

Public API: `Engine` (judge / judge_many), the data model (`Job`, `TestCase`, `Result`,
`Verdict`), `resolve` (language name -> runtime) and `ENGINE_VERSION`. `toolchains` lists the
Debian packages the runtimes need (also in `toolchains.txt`, used by `make toolchains`).
"""

from __future__ import annotations

from pathlib import Path

from execution.engine import Engine
from execution.languages import Runtime, UnknownLanguageError, resolve, runtimes
from execution.types import CompileResult, Job, Result, TestCase, TestResult, Verdict
from execution.version import ENGINE_VERSION


def _read_toolchains() -> list[str]:
    try:
        text = Path(__file__).with_name("toolchains.txt").read_text()
    except OSError:  # an install without package data: the engine still works
        return []
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


toolchains: list[str] = _read_toolchains()

__all__ = [
    "ENGINE_VERSION",
    "CompileResult",
    "Engine",
    "Job",
    "Result",
    "Runtime",
    "TestCase",
    "TestResult",
    "UnknownLanguageError",
    "Verdict",
    "resolve",
    "runtimes",
    "toolchains",
]
