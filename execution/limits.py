"""Resource limits of one sandboxed command, all explicit.

Every limit below is enforced by a named mechanism (see `execution/README.md`):

- `cpu_s`: CPU time (user + system) of ALL processes and threads of the command, measured on the
  sandbox's cgroup CPU counter and enforced by the sandbox's init (plus RLIMIT_CPU per process as
  a safety net). Without cgroups (rootless), the sandbox's init samples every process of its pid
  namespace instead (see README, "Rootless accounting"). For a judged test this is the
  problem's limit times the runtime's time factor.
- `wall_s`: wall-clock limit for programs that sleep or block; a few times `cpu_s`.
- `memory_mb`: memory cgroup limit (resident memory incl. tmpfs and page cache of the command);
  exceeding it OOM-kills the program -> MEMORY_LIMIT_EXCEEDED. Without cgroups, the sandbox's
  init samples the resident memory of every process of its pid namespace and kills them all past
  the limit, and RLIMIT_AS of `memory_mb + as_headroom_mb` backs it up per process.
- `output_bytes`: cap on stdout and stderr (bytes kept); also RLIMIT_FSIZE, the largest file the
  command may write anywhere (a bigger write raises SIGXFSZ).
- `processes`: pids cgroup cap (and RLIMIT_NPROC, per sandbox uid) on processes + threads.
- `nproc_rlimit`: when set, RLIMIT_NPROC alone (the pids cgroup keeps `processes`): ExecEval's
  `nproc`, which counts the processes and threads of the program's uid.
- `open_files`: RLIMIT_NOFILE.
- `stack_mb`: RLIMIT_STACK (the main thread's stack; recursion past it is a SIGSEGV).
- Core dumps are always off (RLIMIT_CORE = 0).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

MB = 1024 * 1024


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's total)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Limits:
    cpu_s: float = 2.0
    wall_s: float | None = None  # None: derived from cpu_s, see `wall`
    memory_mb: int = 256
    output_bytes: int = 64 * MB
    processes: int = 128
    open_files: int = 256
    stack_mb: int | None = None  # None: the memory limit (Codeforces-style big stack)
    as_headroom_mb: int = 0  # extra address space when RLIMIT_AS is the memory fallback
    nproc_rlimit: int | None = None  # None: RLIMIT_NPROC = processes

    @property
    def wall(self) -> float:
        """Wall-clock limit: explicit, or 3x the CPU limit + 1 s (start-up, noisy neighbours)."""
        return self.wall_s if self.wall_s is not None else 3.0 * self.cpu_s + 1.0

    @property
    def stack_bytes(self) -> int:
        return (self.stack_mb if self.stack_mb is not None else self.memory_mb) * MB

    def scaled(self, **changes: object) -> Limits:
        return replace(self, **changes)  # type: ignore[arg-type]


#: Limits of a compilation (compilers are big JVM/Go/Rust processes; a compile that exceeds
#: these is a COMPILATION_ERROR, e.g. `#include "/dev/urandom"`).
COMPILE_LIMITS = Limits(
    cpu_s=60.0,
    wall_s=120.0,
    memory_mb=1024,  # JVM-based compilers get more via `compile_memory_mb` in the registry
    output_bytes=8 * MB,
    processes=256,
    open_files=1024,
    stack_mb=64,
    as_headroom_mb=16384,
)


@dataclass(frozen=True)
class RunOverrides:
    """Per-job replacements of a test's limits, for requests that carry ExecEval's resource
    limits (`execution/execeval/compat.py`); None keeps the engine's own value."""

    cpu_s: float | None = None  # CPU limit of a test instead of time limit x time factor
    wall_s: float | None = None
    open_files: int | None = None  # RLIMIT_NOFILE
    nproc_rlimit: int | None = None  # RLIMIT_NPROC only
    stack_mb: int | None = None  # RLIMIT_STACK

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
            "open_files": self.open_files,
            "nproc_rlimit": self.nproc_rlimit,
            "stack_mb": self.stack_mb,
        }


def run_limits(
    time_limit_s: float,
    memory_mb: int,
    time_factor: float,
    as_headroom_mb: int = 0,
    overrides: RunOverrides | None = None,
) -> Limits:
    """Limits of one judged test: the problem's limits scaled by the runtime's time factor,
    then the job's overrides, if any."""
    cpu = max(0.05, float(time_limit_s) * float(time_factor))
    limits = Limits(cpu_s=cpu, memory_mb=int(memory_mb), as_headroom_mb=as_headroom_mb)
    if overrides is None:
        return limits
    changes = {
        "cpu_s": overrides.cpu_s,
        "wall_s": overrides.wall_s,
        "open_files": overrides.open_files,
        "nproc_rlimit": overrides.nproc_rlimit,
        "stack_mb": overrides.stack_mb,
    }
    return limits.scaled(**{k: v for k, v in changes.items() if v is not None})
