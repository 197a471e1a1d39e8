"""What the callers of a sandbox share with it, without its machinery: the outcome of one
command (`CommandOutcome`), the environment every command starts from, and the forked test the
memory cgroup killed. Backends, the runner and the speed-ups import these from here, so none of
them depends on how a sandbox is built (`command.py`); the errors are `isolation.py`'s."""

from __future__ import annotations

import signal as _signal
from dataclasses import dataclass, field
from typing import Any, BinaryIO

#: the only directories a sandboxed command finds programs in
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: why a program was judged again cold (`ForkedTestMemoryKill`), in its result's notes
WARM_OOM_NOTE = (
    "a forked test was killed by the memory cgroup: the program was judged again, cold from its "
    "first test in a fresh sandbox, and that judgement decides"
)


class ForkedTestMemoryKill(Exception):
    """A forked test the memory cgroup killed (`Sandbox.run`): never a verdict, as a forked test
    reaches the memory limit before the cold command (the zygote's pages are charged in the run
    set, and the test's writes to them again), and never run again in this sandbox, whose files
    it may have changed (a cold judge runs each test once). The caller judges the program again,
    cold, in a fresh sandbox. Not a SandboxError: nothing failed, no INFRA_ERROR follows."""


def default_env(home: str = "/box") -> dict[str, str]:
    """The allow-listed environment every sandboxed command starts from."""
    return {
        "PATH": DEFAULT_PATH,
        "HOME": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp",
    }


@dataclass
class CommandOutcome:
    """What one sandboxed command did. `signal` is a name such as "SIGSEGV"."""

    exit_code: int | None
    signal: str | None
    stdout: bytes
    stderr: bytes
    cpu_s: float
    wall_s: float
    peak_memory_mb: float  # peak RSS of the largest process of the command
    timed_out: bool
    memory_exceeded: bool
    output_exceeded: bool
    isolation: dict[str, Any] = field(default_factory=dict)
    timeout_kind: str | None = None  # "cpu" or "wall" when timed_out
    # the command could not be started (an engine problem unless runner.no_runnable_program says
    # the compiled artefact is missing): message, the launcher stage that failed ("chdir",
    # "setgid", "capabilities", "setuid", "seccomp", "exec", ...) and its errno
    error: str = ""
    error_stage: str = ""
    error_errno: int = 0
    # with `Sandbox.run(output_head=N)`: stdout's whole capture, open for reading (its name is
    # already unlinked), while `stdout` holds only its first N bytes; the caller closes it
    stdout_file: BinaryIO | None = None

    @property
    def ok(self) -> bool:
        return (
            not self.error
            and self.exit_code == 0
            and not (self.timed_out or self.memory_exceeded or self.output_exceeded)
        )


def signal_name(num: int) -> str:
    try:
        return _signal.Signals(num).name
    except ValueError:
        return f"SIG{num}"
