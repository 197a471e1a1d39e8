"""The builders' side of the seam at a script's open (`zygote_seam.h`), shared by the PyPy and
Ruby zygotes: whether an interpreter is one a seam there sees whole (a main calling only its
entry points, a library opening files only by the functions the seam defines), and the build of
such a zygote, linked with the very library the interpreter loads."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ...sandbox.c_binary import is_pie
from .cpython import build_zygote

#: the C library's functions opening a file by name that zygote_seam.h defines (the seam)...
SEAMS = {"open", "open64", "openat", "openat64", "fopen", "fopen64"}
#: ...and those it does not: a library calling one of these gets no zygote
UNSEEN_OPENS = {"__open_2", "__open64_2", "__openat_2", "__openat64_2", "creat", "creat64"}
#: what else such a main imports (the C runtime's start and its weak hooks)
C_START = {
    "__libc_start_main",
    "__cxa_finalize",
    "__gmon_start__",
    "_ITM_deregisterTMCloneTable",
    "_ITM_registerTMCloneTable",
}


def imports(binary: str) -> tuple[set[str], str]:
    """The functions `binary` takes from shared libraries (as `nm` lists them), or why unknown."""
    nm = shutil.which("nm")
    if nm is None:
        return set(), "no nm (binutils) to read the interpreter's imports"
    try:
        proc = subprocess.run(
            [nm, "-D", "--undefined-only", binary], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return set(), f"nm {binary}: {exc}"
    if proc.returncode != 0:
        return set(), f"nm {binary}: {proc.stderr.strip()[-200:]}"
    return {line.split()[-1].partition("@")[0] for line in proc.stdout.splitlines() if line}, ""


def linked_library(interpreter: str, prefix: str) -> tuple[Path | None, str]:
    """The one library named `prefix...` the dynamic loader gives `interpreter` (as `ldd`
    resolves it)."""
    try:
        proc = subprocess.run(["ldd", interpreter], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"ldd {interpreter}: {exc}"
    found = []
    for line in proc.stdout.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        if arrow and name.startswith(prefix) and rest.split():
            found.append(Path(rest.split()[0]))
    if len(found) != 1 or not found[0].is_file():
        return (
            None,
            f"{interpreter} is not linked with one {prefix} ({found or proc.stdout[-200:]})",
        )
    return found[0], ""


def seam_library(interpreter: str, entries: set[str], prefix: str) -> tuple[Path | None, str]:
    """The interpreter's library (`prefix...`), when a seam at the script's open sees what the
    cold command does: `interpreter` is a main calling `entries` and nothing else (as the zygote
    is), and the library opens files by the functions zygote_seam.h defines only."""
    calls, why = imports(interpreter)
    if calls != entries | (calls & C_START):
        others = sorted(calls - C_START - entries)[:4]
        return None, why or f"{interpreter} is not a main calling {sorted(entries)}: {others}"
    library, why = linked_library(interpreter, prefix)
    if library is None:
        return None, why
    opens, why = imports(str(library))
    if not opens & SEAMS or opens & UNSEEN_OPENS:
        return None, why or f"{library} opens files by {sorted(opens & UNSEEN_OPENS)}"
    return library, ""


def build_seam_zygote(
    kind: str,
    source: Path,
    interpreter: str,
    library: Path,
    described: str,
    extra_flags: Sequence[str] = (),
) -> tuple[Path | None, str]:
    """The zygote `source` linked with `library` (the interpreter's, from `seam_library`) and
    built as the interpreter was; `described` is what the interpreter says of its build, part
    of the binary's hash with its path, the library's size and time, and the flags."""
    # -rdynamic: the library's calls of the open functions bind to the zygote's
    flags = ["-O2", "-Wall", "-s", "-rdynamic", *extra_flags]
    if not is_pie(interpreter):
        flags.append("-no-pie")
    libs = [str(library)]
    stat = library.stat()
    ident = [described, interpreter, str(stat.st_size), str(stat.st_mtime_ns), *flags, *libs]
    return build_zygote(kind, source, ident, flags, libs)
