"""The sandbox launcher (`launcher.c`): compiled once per source hash into the cache, started
under a neutral argv with its configuration on stdin, and its `key=value` answers parsed."""

from __future__ import annotations

import hashlib
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from ..caches.files import cache_root
from .c_binary import c_compiler, compile_c
from .outcome import DEFAULT_PATH

LAUNCHER_SOURCE = Path(__file__).with_name("launcher.c")
#: the sandbox init's argv[0], all that /proc/1/cmdline shows inside (its configuration comes
#: through its stdin)
INIT_NAME = "sandbox-init"
#: the PATH of the launcher and of every sandboxed command (`default_env`)


def cache_dir() -> Path:
    """Where the compiled launcher lives: `<cache_root>/launcher` (next to the result cache)."""
    return cache_root() / "launcher"


_build_lock = threading.Lock()
_launchers: dict[bool, tuple[Path | None, str]] = {}


def seccomp_available() -> bool:
    return Path("/usr/include/seccomp.h").exists()


def launcher_binary(test_hooks: bool = False) -> tuple[Path | None, str]:
    """Compile the launcher once (cached by source hash); (path, "") or (None, reason).
    `test_hooks` selects the tests' build (-DTEST_HOOKS), never used to judge programs."""
    with _build_lock:
        if test_hooks not in _launchers:
            _launchers[test_hooks] = _build_launcher(test_hooks)
        return _launchers[test_hooks]


def _build_launcher(test_hooks: bool) -> tuple[Path | None, str]:
    cc = c_compiler()
    if cc is None:
        return None, "no C compiler to build the sandbox launcher"
    src = LAUNCHER_SOURCE.read_bytes()
    flags = ["-O2", "-Wall"] + (["-DTEST_HOOKS"] if test_hooks else [])
    libs: list[str] = []
    if seccomp_available():
        flags.append("-DHAVE_SECCOMP")
        libs.append("-lseccomp")
    digest = hashlib.sha256(src + " ".join(flags + libs).encode()).hexdigest()[:16]
    target = cache_dir() / f"launcher-{'test-' if test_hooks else ''}{digest}"
    return compile_c(cc, flags, LAUNCHER_SOURCE, libs, target, what="launcher", timeout_s=120)


def launcher_config(words: Sequence[str]) -> bytes:
    payload = b"".join(w.encode() + b"\0" for w in words)
    return str(len(payload)).encode() + b"\n" + payload


def popen_launcher(launcher: Path, err: BinaryIO) -> subprocess.Popen[bytes]:
    """The launcher under its neutral argv (`/proc/1/cmdline` inside shows no host path), with
    nothing of the engine's environment, not even for its init; configuration goes to stdin."""
    return subprocess.Popen(
        [INIT_NAME],
        executable=str(launcher),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=err,
        close_fds=True,
        start_new_session=True,
        env={"PATH": DEFAULT_PATH, "LANG": "C.UTF-8"},
    )


def parse_kv(line: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in line.decode(errors="replace").split():
        k, _, v = part.partition("=")
        out[k] = v
    return out
