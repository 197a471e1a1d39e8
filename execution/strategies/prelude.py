"""Strategies: an interpreter's start-up placeholder (startup.py): Ruby's prelude standing in for
RubyGems, CPython's -OO bytecode of its standard library; without it, the classic command line."""

from __future__ import annotations

from .. import startup
from ..languages import Runtime
from ..sandbox import SharedFolder
from ..types import Job
from . import BuildPlan, Host
from .probes import prober


class _Placeholder:
    """Applies when the run argv uses this strategy's placeholder."""

    placeholder = ""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        return startup.needed(runtime.run) == self.placeholder

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        made = None
        if host.backend.host_files:  # it lives on this host
            made = startup.prepare(runtime, self.placeholder, prober(runtime, host, "run"))
        if made is not None:
            folder = SharedFolder(made.directory)
            return plan.changed(
                self.placeholder,
                values={**plan.values, self.placeholder: folder.inside_of(made.path)},
                ours=(*plan.ours, made.path),
                ro_paths=(*plan.ro_paths, folder),
            )
        classic = runtime.run_classic or ()
        if not classic:
            refusal = f"{runtime.name}: no start-up prelude and no run_classic"
            return plan.changed(self.placeholder, refusal=refusal)
        return plan.changed(self.placeholder, run_argv=classic)


class RubyPrelude(_Placeholder):
    placeholder = startup.PLACEHOLDER


class PythonBytecode(_Placeholder):
    placeholder = startup.BYTECODE
