"""Sandboxed, parallel, cached judge of stdin/stdout programs in 11 languages.

Public API: `Engine` (judge / judge_many), the data model (`Job`, `TestCase`, `Result`,
`Verdict`), `resolve` (language name -> runtime) and `ENGINE_VERSION`. The names are loaded on
first use, so importing a light submodule (e.g. `execution.errors`) does not load the engine.
The Debian packages the runtimes need are listed in `toolchains.txt` (used by `make toolchains`,
generated from `languages.toml` by `python -m execution.toolchains`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from execution.engine import Engine
    from execution.languages import Runtime, UnknownLanguageError, resolve, runtimes
    from execution.types import CompileResult, Job, Result, TestCase, TestResult, Verdict
    from execution.version import ENGINE_VERSION

#: public name -> the submodule that defines it
_EXPORTS: dict[str, str] = {
    "ENGINE_VERSION": "execution.version",
    "CompileResult": "execution.types",
    "Engine": "execution.engine",
    "Job": "execution.types",
    "Result": "execution.types",
    "Runtime": "execution.languages",
    "TestCase": "execution.types",
    "TestResult": "execution.types",
    "UnknownLanguageError": "execution.languages",
    "Verdict": "execution.types",
    "resolve": "execution.languages",
    "runtimes": "execution.languages",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'execution' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


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
]
