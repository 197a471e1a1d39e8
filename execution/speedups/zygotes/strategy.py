"""Strategies: CPython, PyPy 3 and Ruby tests forked from one pre-initialised interpreter per
program (the zygote, `cpython_zygote.c`, `pypy_zygote.c` and `ruby_zygote.c`, started in the program's own
sandbox by `Session.start_warm`).

What a program can tell of it (README, "CPython zygote" and "PyPy zygote"): /proc/self/exe names
the zygote binary, RLIMIT_NPROC is one higher (the zygote is a process of the uid), /proc lists
the zygote, the tests of a program share one hash seed and address layout; its start-up CPU and
wall are counted into every warm test's. Ruby's are in the README's "Ruby zygote"."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from ...config import EngineConfig
from ...languages.registry import Runtime, catalog_commands
from ...sandbox.host_probe import host_isolation
from ...sandbox.view import SharedFolder
from ...types import Job
from .. import BuildPlan, Host, startup
from . import cpython, pypy, ruby
from .cpython import enabled

log = logging.getLogger(__name__)


class CPythonZygote:
    """Applies with the switches on (`CODE_EVAL_ZYGOTE` and, for CPython, its own), to the registry's own run argv (a client's custom command or
    flags turn it off, as every speed-up), on a backend whose sessions are this host's sandbox,
    on a host with namespaces and cgroups (the sandbox init supervises the forked tests as cold
    ones); without a zygote binary for the runtime's interpreter every test stays cold."""

    #: the strategy's name in the catalog (and in `BuildPlan.applied`)
    name = "cpython_zygote"
    #: the zygote of an interpreter: (binary, "") or (None, why there is none)
    binary: Callable[[str], tuple[Path | None, str]] = staticmethod(cpython.zygote_binary)
    #: whether the switches let it apply (CPython's own is off by default: README)
    switched_on: Callable[[EngineConfig], bool] = staticmethod(cpython.cpython_enabled)

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        if not self.switched_on(host.config) or host.config.classic_build:
            return False
        if not host.backend.warm_starts():
            return False
        if not catalog_commands(runtime):
            return False
        iso = host_isolation()
        return iso.namespaces and iso.cgroups and runtime.binary is not None

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        assert runtime.binary is not None
        made, why = self.binary(runtime.binary)
        if made is None:
            log.info("%s: tests start cold: %s", runtime.name, why)
            return plan
        folder = SharedFolder(str(made.parent))
        return plan.changed(
            self.name,
            warm_start=folder.inside_of(made),
            ours=(*plan.ours, made),
            ro_paths=(*plan.ro_paths, folder),
        )


class PyPyZygote(CPythonZygote):
    """The same for PyPy 3: a zygote that is PyPy's own main with a seam at the script's open."""

    name = "pypy_zygote"
    binary = staticmethod(pypy.zygote_binary)
    switched_on = staticmethod(enabled)


class RubyZygote(CPythonZygote):
    """The same for Ruby: Ruby's own main, whose seam is the last statement of the `-r` prelude
    (startup.py); without the prelude (a classic command) every test stays cold."""

    name = "ruby_zygote"
    binary = staticmethod(ruby.zygote_binary)
    switched_on = staticmethod(enabled)

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        if startup.PLACEHOLDER not in plan.values:  # the classic command: no prelude
            log.info("%s: tests start cold: no prelude to stop at", runtime.name)
            return plan
        return super().apply(plan, runtime, job, host)
