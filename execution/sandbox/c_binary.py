"""Building the engine's own small C programs (the sandbox launcher, the zygotes) into the
cache: compiled to a temporary name beside the target and renamed into place, so a reader never
sees a half-written binary and two builders racing both end with a whole one."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path


def c_compiler() -> str | None:
    """The C compiler the engine builds its programs with: gcc, else cc (None when neither)."""
    return shutil.which("gcc") or shutil.which("cc")


def is_pie(path: str) -> bool:
    """An ELF executable of type ET_DYN (position independent): a program linked into an
    interpreter's place must be built as the interpreter was (-no-pie otherwise)."""
    with open(path, "rb") as f:
        head = f.read(18)
    return head[:4] == b"\x7fELF" and int.from_bytes(head[16:18], "little") == 3


def compile_c(
    cc: str,
    flags: Sequence[str],
    source: Path,
    libs: Sequence[str],
    target: Path,
    *,
    what: str,
    timeout_s: float,
) -> tuple[Path | None, str]:
    """`target` built from `source` unless it exists: (target, "") or (None, why `what` could
    not be built: the compiler's last words or the OS error)."""
    if target.is_file():
        return target, ""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}-")
        os.close(fd)
        built = subprocess.run(
            [cc, *flags, "-o", tmp, str(source), *libs],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        if built.returncode != 0:
            os.unlink(tmp)
            return None, f"{what} build failed: {built.stderr.strip()[-400:]}"
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{what} build failed: {exc}"
    return target, ""
