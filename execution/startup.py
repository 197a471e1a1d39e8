"""Interpreter start-up: Ruby without RubyGems, its bundled gems still reachable.

Loading RubyGems is most of a Ruby test's cost (about 35 ms of 40 on the development machine).
Ruby runs with `--disable-gems` and a prelude (`-r`) that does what the program could notice of
RubyGems: it loads `error_highlight` and `did_you_mean` (error messages stay the same) and appends
the bundled gems' folders (`prime`, `matrix`...) to the end of `$LOAD_PATH`, so `require "prime"`
finds what RubyGems would activate, and the standard library still comes first.

The folders are those the toolchain itself reports, asked once per toolchain fingerprint inside
a sandbox (what the program's sandbox sees, not the host's user gems). The prelude lives under
`$CODE_EVAL_CACHE/startup/` and is mounted read-only into the program's sandbox. When it cannot
be made (another backend, a failed probe) the program runs with the classic command line
(`run_classic`), RubyGems and all. `CODE_EVAL_CLASSIC_BUILD=1` always uses the classic one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .cache import atomic_write, cache_root
from .languages import Runtime

PLACEHOLDER = "ruby_prelude"
PRELUDE = "prelude.rb"
#: run inside the sandbox with RubyGems: the require folders of the latest installed version of
#: every gem that is not a default gem (default gems live in the standard library's folders)
PROBE = (
    "specs = Gem::Specification.latest_specs(true).reject(&:default_gem?)\n"
    "specs.sort_by(&:name).flat_map(&:full_require_paths).each { |p| puts p if File.directory?(p) }\n"
)


@dataclass(frozen=True)
class Prelude:
    path: Path  # the file `-r` loads
    directory: Path  # mounted read-only into the sandbox


#: runs `argv` in a sandbox: its stdout, or None when it failed
Prober = Callable[[list[str]], bytes | None]

_lock = threading.Lock()
_made: dict[str, Prelude | None] = {}


def needs_prelude(argv: tuple[str, ...]) -> bool:
    return any("{" + PLACEHOLDER + "}" in a for a in argv)


def prelude_text(paths: list[str]) -> str:
    return (
        "# RubyGems is off (--disable-gems): what a program could notice of it, kept\n"
        'begin; require "error_highlight"; rescue LoadError; end\n'
        'begin; require "did_you_mean"; rescue LoadError; end\n'
        f"$LOAD_PATH.concat({json.dumps(paths)})\n"
    )


def parse_paths(stdout: bytes) -> list[str] | None:
    """The probe's folders, or None when its output is not a list of plain absolute paths."""
    try:
        lines = stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None
    ok = all(p.startswith("/") and '"' not in p and "\\" not in p and "#" not in p for p in lines)
    return lines if ok else None


def ruby_prelude(runtime: Runtime, probe: Prober) -> Prelude | None:
    """The prelude of `runtime` (made once per fingerprint and process), or None."""
    fp = runtime.fingerprint()
    with _lock:
        if fp in _made:
            return _made[fp]
        made = _make(runtime, probe)
        _made[fp] = made
        return made


def _make(runtime: Runtime, probe: Prober) -> Prelude | None:
    if runtime.binary is None:
        return None
    out = probe([runtime.binary, "-e", PROBE])
    paths = parse_paths(out) if out is not None else None
    if paths is None:
        return None
    directory = publish(runtime, {PRELUDE: prelude_text(paths)})
    return Prelude(path=directory / PRELUDE, directory=directory) if directory else None


def publish(runtime: Runtime, files: dict[str, str]) -> Path | None:
    """`files` (name -> text) in a folder of their own under `$CODE_EVAL_CACHE/startup/`, keyed
    by the toolchain's fingerprint and the texts, readable by the sandbox's uid (which mounts the
    folder read-only): the folder, or None when they cannot be written as given."""
    listing = json.dumps([runtime.fingerprint(), sorted(files.items())])
    directory = cache_root() / "startup" / hashlib.sha256(listing.encode()).hexdigest()[:32]
    for name, text in files.items():
        path = directory / name
        with contextlib.suppress(OSError):
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                directory.mkdir(parents=True, exist_ok=True)
                os.chmod(directory, 0o755)  # read by the sandbox's own uid
                atomic_write(path, text.encode())
                os.chmod(path, 0o644)
        try:
            if path.read_text(encoding="utf-8") != text:
                return None
        except OSError:
            return None
    return directory
