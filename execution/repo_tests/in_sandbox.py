"""The one place where a repository's test command is executed: inside the engine's sandbox.

The command sees the system toolchain directories, the interpreter's installation (read-only)
and the scratch copy of the repository (read-write, as its working directory); nothing else of
the host. Time, memory, process and output limits are the engine's `Limits`.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..limits import MB, Limits
from ..sandbox.command import run_command
from ..sandbox.outcome import CommandOutcome, default_env
from ..sandbox.view import is_system_path

#: Defaults for a repository test run: whole test files of real projects, several interpreters
#: started by plugins, a few hundred MB of imports.
TEST_LIMITS = Limits(
    cpu_s=900.0,
    wall_s=1800.0,
    memory_mb=4096,
    output_bytes=16 * MB,
    processes=256,
    open_files=4096,
    stack_mb=64,
    as_headroom_mb=16384,
)


def interpreter_paths(argv0: str, exe: str | None) -> list[Path]:
    """Directories the command's interpreter needs: its installation prefix and, for Python,
    the running interpreter's prefixes and site directories (a venv's base install included).
    `exe` is `shutil.which(argv0)` (None when it is not on PATH)."""
    paths: list[Path] = []
    if exe:
        real = Path(os.path.realpath(exe))
        for candidate in (Path(exe).parent.parent, real.parent.parent):
            if not is_system_path(candidate) and candidate != Path("/"):
                paths.append(candidate)
    if Path(argv0).name.startswith("python"):
        for prefix in sorted({sys.prefix, sys.base_prefix, sys.exec_prefix}):
            if prefix and not is_system_path(prefix):
                paths.append(Path(prefix))
    unique: list[Path] = []
    for p in paths:
        if p.exists() and p not in unique:
            unique.append(p)
    return unique


def run_tests(
    argv: Sequence[str],
    *,
    cwd: Path,
    limits: Limits = TEST_LIMITS,
    extra_readonly: Sequence[Path] = (),
    extra_writable: Sequence[Path] = (),
    extra_env: Mapping[str, str] | None = None,
) -> CommandOutcome:
    """Run a test command in `cwd` (a scratch copy: the sandbox takes ownership for the run).
    `extra_writable` (scratch folders too) and `extra_env` serve the grader's report plugin."""
    exe = shutil.which(argv[0])
    readonly = [*interpreter_paths(argv[0], exe), *extra_readonly]
    env = default_env(str(cwd))
    if exe:
        env["PATH"] = f"{Path(exe).parent}:{env['PATH']}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["COLUMNS"] = "200"
    env.update(extra_env or {})
    return run_command(
        list(argv),
        cwd=cwd,
        limits=limits,
        readonly_paths=readonly,
        writable_paths=list(extra_writable),
        env=env,
    )
