"""Strategy: build a one-file Go program with the toolchain's own compile and link (go_direct.py),
`go build` when that fails."""

from __future__ import annotations

from .. import go_direct
from ..languages import Runtime
from ..sandbox import SharedFolder
from ..types import Job
from . import BuildPlan, Host
from .probes import prober


class DirectGo:
    """Applies to a runtime with `compile_direct`, on a backend whose sandboxes see this host's
    files (the import configuration lives here), for a source without build constraints."""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        if runtime.compile_direct is None or not host.backend.host_files:
            return False
        return go_direct.applies(job.source_code)

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        direct = go_direct.tools(runtime, prober(runtime, host, "compile"))
        if direct is None:
            return plan
        return plan.changed(
            "go_direct",
            values={**plan.values, **direct.values},
            ours=(*plan.ours, direct.directory),
            ro_paths=(*plan.ro_paths, SharedFolder(direct.directory)),
            fallback=runtime.compile,
            compile_argv=runtime.compile_direct,
            # its binaries differ from go build's (no module information): cached apart
            fingerprint=f"{plan.fingerprint or runtime.fingerprint()}|{go_direct.KEY}",
        )
