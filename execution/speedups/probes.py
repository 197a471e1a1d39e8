"""Sandboxed probes of a toolchain's own settings, run by the strategies that need them."""

from __future__ import annotations

from collections.abc import Callable

from ..isolation import SandboxError
from ..languages.registry import Runtime
from ..limits import COMPILE_LIMITS, MB, Limits
from ..sandbox.outcome import default_env
from . import Host

#: runs `argv` in a sandbox: its stdout, or None when it failed
Prober = Callable[[list[str]], bytes | None]

#: limits of the one probe of an interpreter's own settings (startup.py)
PROBE_LIMITS = Limits(
    cpu_s=30, wall_s=60, memory_mb=512, output_bytes=1 * MB, processes=16, open_files=256
)


def prober(runtime: Runtime, host: Host, purpose: str) -> Prober:
    """Runs one probe of the toolchain's own settings in a sandbox of `purpose` (with the
    runtime's environment and, for a compile, the compile's limits: a compiler's driver may start
    many threads): its stdout, or None when it failed."""
    extra = runtime.compile_env if purpose == "compile" else runtime.run_env
    limits = COMPILE_LIMITS if purpose == "compile" else PROBE_LIMITS

    def probe(argv: list[str]) -> bytes | None:
        try:
            box = host.backend.open_session(
                files={},
                purposes=(purpose,),
                policy=host.isolation,
                ro_paths=runtime.extra_ro_paths,
            )
        except (SandboxError, OSError):
            return None
        try:
            env = default_env(box.workdir) | extra
            out = box.run(argv, limits=limits, env=env, purpose=purpose)
            return out.stdout if out.ok else None
        except SandboxError:
            return None
        finally:
            box.close()

    return probe
