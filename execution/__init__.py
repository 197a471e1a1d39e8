"""Sandboxed, parallel, cached judge of stdin/stdout programs in 11 languages.

Public API: `Engine` (judge / judge_many), the data model (`Job`, `TestCase`, `Result`,
`Verdict`), `resolve` (language name -> runtime) and `ENGINE_VERSION`. The names are loaded on
first use, so importing a light submodule (e.g. `execution.errors`) does not load the engine.
The Debian packages the runtimes need are listed in `toolchains.txt` (used by `make toolchains`,
generated from `languages.toml` by `python -m code_eval_taskpack.execution.languages.toolchains`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .judge.engine import Engine
    from .languages.registry import Runtime, UnknownLanguageError, resolve, runtimes
    from .types import CompileResult, Job, Result, TestCase, TestResult, Verdict
    from .version import ENGINE_VERSION

#: public name -> the submodule that defines it
_EXPORTS: dict[str, str] = {
    "ENGINE_VERSION": ".version",
    "CompileResult": ".types",
    "Engine": ".judge.engine",
    "Job": ".types",
    "Result": ".types",
    "Runtime": ".languages.registry",
    "TestCase": ".types",
    "TestResult": ".types",
    "UnknownLanguageError": ".languages.registry",
    "Verdict": ".types",
    "resolve": ".languages.registry",
    "runtimes": ".languages.registry",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'execution' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
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
