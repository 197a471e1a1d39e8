"""Build plans and the toolchain speed-ups that change them.

For each (job, runtime, host) `build_plan` makes one frozen `BuildPlan`: the compile argv and its
fallback, the read-only paths to mount, the engine's own files the commands use, the values of
the argv's placeholders, the fingerprint that goes into compile-cache keys and the run argv of
every test. The runner executes plans and knows no toolchain. Each speed-up is a `Strategy`
declared per runtime in `languages.toml` (`strategies = [...]`) and found here by name. Each
speed-up is one module of this folder holding both its machinery and its strategy, under the
switch's name: `pch.py`, `go_direct.py`, `startup.py` (Ruby's prelude, CPython's bytecode),
`warm_compiler.py` (with `java/`, `mono/`), `jvm_cds.py` and `zygotes/`; `probes.py` runs the
sandboxed probes some of them need. A new speed-up is a new module, one line in `STRATEGIES` and a
catalog entry (tests/test_import_graph.py fails until the runner's rules name it).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..config import EngineConfig
from ..languages.registry import Runtime
from ..limits import Limits
from ..types import Job

if TYPE_CHECKING:
    from ..backends.base import SessionBackend
    from ..caches.compiles import CompileCache, PolicyView

#: a warm compile: (runtime, cold argv, source name, source bytes, cold limits) -> a trusted
#: answer (ok, stdout, stderr, cpu_s, wall_s, archive) or None (compile cold)
WarmCompile = Callable[[Runtime, list[str], str, bytes, Limits], Any]


@dataclass(frozen=True)
class Host:
    """Where a plan runs: the session backend, the isolation policy, the compile cache view and
    the engine's switches, which each strategy reads here (never from the environment)."""

    backend: SessionBackend
    isolation: str
    compiled: CompileCache | PolicyView | None
    config: EngineConfig


@dataclass(frozen=True)
class BuildPlan:
    """How one program is built and run (argv are templates, expanded with `values`)."""

    compile_argv: tuple[str, ...] | None
    run_argv: tuple[str, ...]
    values: Mapping[str, str]
    fingerprint: str
    #: tried when `compile_argv` fails for any reason, under fresh limits; it decides
    fallback: tuple[str, ...] | None = None
    ro_paths: tuple[str, ...] = ()
    #: the engine's own files the commands use (a header, tools, a prelude)
    ours: tuple[Path, ...] = ()
    #: a compiler tried before the cold compile (whatever it cannot answer is compiled cold)
    warm_compile: WarmCompile | None = None
    #: a pre-initialising build of the run argv's interpreter, as the sandbox shows it: each
    #: test is forked from one instance of it started with the run argv ("": every test cold)
    warm_start: str = ""
    #: why the program cannot be judged as the catalog says (an INFRA_ERROR), "" when it can
    refusal: str = ""
    #: the strategies that changed the plan, in order
    applied: tuple[str, ...] = field(default=())

    def layout(self) -> dict[str, str]:
        """The values naming the program's file and class (part of compile-cache keys)."""
        return {k: self.values[k] for k in ("source", "class", "main_class")}

    def changed(self, by: str, **changes: Any) -> BuildPlan:
        return dataclasses.replace(self, applied=(*self.applied, by), **changes)


class Strategy(Protocol):
    """One speed-up: whether it applies to a program here, and the plan it makes of it."""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool: ...

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan: ...


#: strategy name (as `languages.toml` declares it) -> "module:Class" of this package
STRATEGIES: dict[str, str] = {
    "pch": ".pch:PrecompiledHeader",
    "go_direct": ".go_direct:DirectGo",
    "ruby_prelude": ".startup:RubyPrelude",
    "python_bytecode": ".startup:PythonBytecode",
    "warm_compiler": ".warm_compiler:WarmCompiler",
    "jvm_cds": ".jvm_cds:JvmClassData",
    "cpython_zygote": ".zygotes.strategy:CPythonZygote",
    "pypy_zygote": ".zygotes.strategy:PyPyZygote",
    "ruby_zygote": ".zygotes.strategy:RubyZygote",
}
_loaded: dict[str, Strategy] = {}


def strategy(name: str) -> Strategy:
    """The strategy registered as `name` (a KeyError names the unknown one)."""
    if name not in _loaded:
        if name not in STRATEGIES:
            raise KeyError(f"unknown build strategy {name!r}; known: {sorted(STRATEGIES)}")
        module, _, attr = STRATEGIES[name].partition(":")
        _loaded[name] = getattr(importlib.import_module(module, __name__), attr)()
    return _loaded[name]


def build_plan(
    runtime: Runtime, job: Job, host: Host, values: Mapping[str, str], fingerprint: str
) -> BuildPlan:
    """The catalog's plan of `job`, changed by each strategy of its runtime that applies."""
    plan = BuildPlan(
        compile_argv=runtime.compile,
        run_argv=runtime.run,
        values=dict(values),
        fingerprint=fingerprint,
        ro_paths=tuple(runtime.extra_ro_paths),
    )
    for name in runtime.strategies:
        step = strategy(name)
        if step.applies(runtime, job, host):
            plan = step.apply(plan, runtime, job, host)
    return plan
