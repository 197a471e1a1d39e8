"""The CPython zygote (`cpython_zygote.c`): built once per source and interpreter into the cache, from
the interpreter's own static library, so that it is the very interpreter the cold command runs.

The binary lives alone in a folder named by its content hash, which a sandbox shows as a
`SharedFolder`; the sandbox init executes it with the cold command's argv (see launcher.c, frame
words Z and W, and the contract in cpython_zygote.c). `build_zygote` is the cache build every zygote's
builder ends with (this one, and `seam.py`'s for PyPy and Ruby).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import threading
from pathlib import Path

from ... import config
from ...caches.files import cache_root
from ...sandbox.c_binary import c_compiler, compile_c, is_pie

ZYGOTE_SOURCE = Path(__file__).with_name("cpython_zygote.c")
#: the zygotes' side of init's protocol (included by every zygote) and the seam at a script's
#: open (pypy_zygote.c, ruby_zygote.c): part of every zygote's build hash
PROTOCOL_SOURCE = Path(__file__).with_name("zygote_protocol.h")
SEAM_SOURCE = Path(__file__).with_name("zygote_seam.h")
#: the file name of the binary in its folder
BINARY_NAME = "zygote"

#: what the interpreter says of its own build (read with the interpreter itself)
_SYSCONFIG = (
    "import json, platform, sys, sysconfig as s; "
    "print(json.dumps({'version': platform.python_version(), 'full': sys.version, "
    "**{k: s.get_config_var(k) or '' for k in ('INCLUDEPY', 'LIBPL', 'LIBRARY', "
    "'LINKFORSHARED', 'LIBS', 'SYSLIBS', 'MODLIBS')}}))"
)


def enabled(switches: config.EngineConfig | None = None) -> bool:
    """The switch (`CODE_EVAL_ZYGOTE`, config.py): tests forked from a zygote, else all cold."""
    return config.or_env(switches).zygote


def cpython_enabled(switches: config.EngineConfig | None = None) -> bool:
    """CPython's own switch (`CODE_EVAL_CPYTHON_ZYGOTE`, off by default), within `enabled`: a
    forked CPython test shares its program's string hash seed, which a set's order shows."""
    chosen = config.or_env(switches)
    return chosen.zygote and chosen.cpython_zygote


_lock = threading.Lock()
_built: dict[str, tuple[Path | None, str]] = {}


def zygote_binary(interpreter: str) -> tuple[Path | None, str]:
    """The zygote of the CPython at `interpreter` (an absolute path), built once and cached:
    (path, "") or (None, why it cannot be had here, e.g. no static library)."""
    with _lock:
        if interpreter not in _built:
            _built[interpreter] = _build(interpreter)
        return _built[interpreter]


def _header_version(include: str) -> str:
    for line in Path(include, "patchlevel.h").read_text(errors="replace").splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[:2] == ["#define", "PY_VERSION"]:
            return parts[2].strip('"')
    return ""


def embedding_flags(interpreter: str) -> tuple[list[str], list[str], list[str]] | str:
    """How to build a program embedding the CPython at `interpreter` from its own static
    library: (compiler flags, libraries, what identifies that build), or why it cannot be."""
    try:
        proc = subprocess.run(
            [interpreter, "-S", "-c", _SYSCONFIG], capture_output=True, text=True, timeout=60
        )
        conf = json.loads(proc.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return f"{interpreter} did not describe its build: {exc}"
    library = Path(conf["LIBPL"], conf["LIBRARY"])
    include = conf["INCLUDEPY"]
    if not library.name.endswith(".a") or not library.is_file():
        return f"no static library of {interpreter} ({library}; package libpython3-dev)"
    if not Path(include, "Python.h").is_file():
        return f"no headers of {interpreter} in {include} (package libpython3-dev)"
    if _header_version(include) != conf["version"]:
        return f"headers in {include} are not those of {interpreter} {conf['version']}"
    flags = ["-O2", "-Wall", "-s", f"-I{include}"]
    if not is_pie(interpreter):
        flags.append("-no-pie")  # the static library is built like the interpreter
    libs = [str(library), *conf["LINKFORSHARED"].split()]
    libs += [*conf["LIBS"].split(), *conf["SYSLIBS"].split(), *conf["MODLIBS"].split()]
    stat = library.stat()
    ident = [conf["full"], interpreter, str(stat.st_size), str(stat.st_mtime_ns), *flags, *libs]
    return flags, libs, ident


def _build(interpreter: str) -> tuple[Path | None, str]:
    made = embedding_flags(interpreter)
    if isinstance(made, str):
        return None, made
    flags, libs, ident = made
    return build_zygote("cpython", ZYGOTE_SOURCE, ident, flags, libs)


def build_zygote(
    kind: str, source: Path, ident: list[str], flags: list[str], libs: list[str]
) -> tuple[Path | None, str]:
    """A zygote binary in a cache folder of its own, named by `kind` and the hash of its
    sources and `ident` (what makes it that interpreter's: its build, path, library, flags)."""
    what = "zygote" if kind == "cpython" else f"{kind} zygote"
    cc = c_compiler()
    if cc is None:
        return None, f"no C compiler to build the {what}"
    digest = hashlib.sha256(
        source.read_bytes()
        + PROTOCOL_SOURCE.read_bytes()
        + SEAM_SOURCE.read_bytes()
        + json.dumps(ident).encode()
    )
    folder = cache_root() / "zygote" / f"{kind}-{digest.hexdigest()[:16]}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o755)
    except OSError as exc:
        return None, f"zygote build failed: {exc}"
    return compile_c(cc, flags, source, libs, folder / BINARY_NAME, what=what, timeout_s=300)
