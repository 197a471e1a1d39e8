"""Strategy: compile with a long-lived compiler of this process first (warm_compiler.py)."""

from __future__ import annotations

from ..languages import Runtime
from ..types import Job
from ..warm_compiler import warm_compile
from . import BuildPlan, Host


class WarmCompiler:
    """Applies to a compiled runtime on a backend whose programs may use this process's warm
    compilers; the warm compiler itself answers None (compile cold) for what it cannot serve."""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        return runtime.compile is not None and host.backend.warm_compilers()

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        return plan.changed("warm_compiler", warm_compile=warm_compile)
