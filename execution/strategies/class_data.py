"""Strategy: run a Java program with the JVM class-data sharing archive of the common JDK
classes (class_data.py); without it, the catalog's command line."""

from __future__ import annotations

from .. import class_data
from ..languages import Runtime
from ..sandbox import SharedFolder
from ..types import Job
from . import BuildPlan, Host


class JvmClassData:
    """Applies to the catalog's `java` run on a backend whose sandboxes see this host's files
    (the archive lives here), while `CODE_EVAL_JVM_CDS` is on."""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        if not (host.backend.host_files and class_data.enabled()):
            return False
        return class_data.applies(runtime, job.memory_limit_mb)

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        made = class_data.prepare()
        if made is None:
            return plan
        folder = SharedFolder(made.directory)
        java, *rest = plan.run_argv
        return plan.changed(
            class_data.PLACEHOLDER,
            run_argv=(java, class_data.FLAG, *rest),
            values={**plan.values, class_data.PLACEHOLDER: folder.inside_of(made.path)},
            ours=(*plan.ours, made.path),
            ro_paths=(*plan.ro_paths, folder),
        )
