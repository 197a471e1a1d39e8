"""The PyPy zygote (`pypy_zygote.c`): built once per source and interpreter into the cache,
linked with the very libpypy the interpreter loads, so that it is the interpreter the cold
command runs with one seam added (the script's first open).

The binary lives alone in a folder named by its content hash, which a sandbox shows as a
`SharedFolder`; the sandbox init executes it with the cold command's argv (see launcher.c, frame
words Z and W, the contract in zygote.c and the differences in pypy_zygote.c).
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

from .seam import build_seam_zygote, seam_library

ZYGOTE_SOURCE = Path(__file__).with_name("pypy_zygote.c")
#: the one function Debian's pypy3 main calls (its whole body), which the zygote calls too
ENTRY = "pypy_main_startup"
_lock = threading.Lock()
_built: dict[str, tuple[Path | None, str]] = {}


def zygote_binary(interpreter: str) -> tuple[Path | None, str]:
    """The zygote of the PyPy at `interpreter` (an absolute path), built once and cached:
    (path, "") or (None, why it cannot be had here, e.g. an interpreter not linked with libpypy)."""
    with _lock:
        if interpreter not in _built:
            _built[interpreter] = _build(interpreter)
        return _built[interpreter]


def _build(interpreter: str) -> tuple[Path | None, str]:
    library, why = seam_library(interpreter, {ENTRY}, "libpypy")
    if library is None:
        return None, why
    try:
        proc = subprocess.run(
            [interpreter, "-S", "-c", "import sys; print(sys.version)"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{interpreter} did not say its version: {exc}"
    if proc.returncode != 0 or "PyPy" not in proc.stdout:
        return None, f"{interpreter} is not PyPy: {proc.stdout[-200:]}{proc.stderr[-200:]}"
    return build_seam_zygote("pypy", ZYGOTE_SOURCE, interpreter, library, proc.stdout)
