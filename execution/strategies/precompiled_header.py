"""Strategy: compile C++ with a precompiled header of its leading standard includes (pch.py)."""

from __future__ import annotations

from .. import pch
from ..compile_cache import compile_key
from ..languages import Runtime
from ..limits import Limits
from ..sandbox import SandboxError, SharedFolder, default_env
from ..types import Job
from . import BuildPlan, Host


class PrecompiledHeader:
    """Applies to a compile that will really run (not one served from the compile cache) on a
    backend whose sandboxes see this host's files (the header lives here)."""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        if runtime.compile is None or runtime.pch_build is None:
            return False
        return host.backend.host_files and pch.enabled()

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        compiled = host.compiled
        root = compiled.root if compiled is not None else None
        if compiled is not None:
            key = compile_key(
                plan.fingerprint or runtime.fingerprint(), job.source_code, plan.layout()
            )
            if compiled.get(key):
                return plan

        def build(text: str, argv: tuple[str, ...], limits: Limits) -> bytes | None:
            return _build_header(host, runtime, text, argv, limits)

        header = pch.for_source(runtime, job.source_code, pch.store_root(root), build)
        if header is None:
            return plan
        made, argv = header
        return plan.changed(
            "pch",
            compile_argv=argv,
            ours=(*plan.ours, made.header, made.header.with_name(pch.HEADER + ".gch")),
            ro_paths=(*plan.ro_paths, SharedFolder(made.directory)),
        )


def _build_header(
    host: Host, runtime: Runtime, text: str, argv: tuple[str, ...], limits: Limits
) -> bytes | None:
    """Build one precompiled header in a sandbox of its own; its bytes, or None."""
    try:
        box = host.backend.open_session(
            files={pch.HEADER: text.encode()},
            purposes=("compile",),
            policy=host.isolation,
            ro_paths=runtime.extra_ro_paths,
        )
    except (SandboxError, OSError):
        return None
    try:
        env = default_env(box.workdir) | runtime.compile_env
        out = box.run(runtime.expand(argv), limits=limits, env=env, purpose="compile")
        if not out.ok:
            return None
        got = box.run(
            ["cat", pch.HEADER + ".gch"],
            limits=limits,
            env=default_env(box.workdir),
            purpose="compile",
        )
        return got.stdout if got.ok and got.stdout else None
    except SandboxError:
        return None
    finally:
        box.close()
