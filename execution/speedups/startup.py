"""Interpreter start-up: Ruby without RubyGems (its bundled gems still reachable), and CPython's
optimised bytecode for its standard library.

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

CPython runs programs with `-OO`, as ExecEval does, and looks for `*.opt-2.pyc` bytecode, which
Debian does not ship (only the plain `.pyc`): every test compiled each standard module it
imports from source, in a read-only /usr where the result could not be kept (22 ms for an empty
program, 123 ms for one importing `re`, `random` and `typing`). The toolchain's own `compileall`
builds that bytecode once per fingerprint (on the host: the toolchain's interpreter compiling
its own standard library, nothing of a program's) into `$CODE_EVAL_CACHE/startup/`, mounted
read-only; the program runs with `-X pycache_prefix=` that folder, where CPython then reads the
standard library's bytecode (11 and 28 ms). The bytecode is what CPython compiles in memory
otherwise (same compiler, same optimisation level; a module whose source changed since is
compiled again, as before). What a program could notice: `sys.pycache_prefix`, the modules'
`__cached__` paths and `sys._xoptions`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from ..caches.files import atomic_folder, atomic_write, cache_root
from ..languages.registry import Runtime, catalog_commands
from ..sandbox.view import SharedFolder
from ..types import Job
from . import BuildPlan, Host
from .probes import Prober, prober

PLACEHOLDER = "ruby_prelude"
PRELUDE = "prelude.rb"
#: the variable the prelude's last statement looks up (never set): the Ruby zygote's seam
RUBY_SEAM = "RUBY_ZYGOTE_SEAM"
#: the folder CPython reads its standard library's bytecode from (`-X pycache_prefix=`)
BYTECODE = "python_bytecode"
BYTECODE_DIR = "pycache"
#: standard library folders no judged program imports (tests, GUI, installers): not compiled
BYTECODE_SKIP = r"/(test|tests|idlelib|tkinter|turtledemo|lib2to3|ensurepip|pydoc_data)/"
#: how long the one compilation of a standard library may take
BYTECODE_TIMEOUT_S = 600
#: run inside the sandbox with RubyGems: the require folders of the latest installed version of
#: every gem that is not a default gem (default gems live in the standard library's folders)
PROBE = (
    "specs = Gem::Specification.latest_specs(true).reject(&:default_gem?)\n"
    "specs.sort_by(&:name).flat_map(&:full_require_paths).each { |p| puts p if File.directory?(p) }\n"
)


@dataclass(frozen=True)
class Prelude:
    path: Path  # the file `-r` loads (Ruby), the bytecode folder (CPython)
    directory: Path  # mounted read-only into the sandbox


_lock = threading.Lock()
_made: dict[tuple[str, str], Prelude | None] = {}


def needed(argv: tuple[str, ...]) -> str | None:
    """The start-up placeholder `argv` uses (PLACEHOLDER or BYTECODE), if any."""
    for name in (PLACEHOLDER, BYTECODE):
        if any("{" + name + "}" in a for a in argv):
            return name
    return None


def prelude_text(paths: list[str]) -> str:
    return (
        "# RubyGems is off (--disable-gems): what a program could notice of it, kept\n"
        'begin; require "error_highlight"; rescue LoadError; end\n'
        'begin; require "did_you_mean"; rescue LoadError; end\n'
        f"$LOAD_PATH.concat({json.dumps(paths)})\n"
        f"# the end of Ruby's start: where the Ruby zygote forks a test (ruby_zygote.c)\n"
        f'ENV.fetch("{RUBY_SEAM}", nil)\n'
    )


def parse_paths(stdout: bytes) -> list[str] | None:
    """The probe's folders, or None when its output is not a list of plain absolute paths."""
    try:
        lines = stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None
    ok = all(p.startswith("/") and '"' not in p and "\\" not in p and "#" not in p for p in lines)
    return lines if ok else None


def prepare(runtime: Runtime, name: str, probe: Prober) -> Prelude | None:
    """What the placeholder `name` of `runtime` stands for (made once per fingerprint and
    process), or None: run the classic command line."""
    if not catalog_commands(runtime):
        return None  # a custom command line: only the catalog's is known to take the prelude
    key = (runtime.fingerprint(), name)
    with _lock:
        if key not in _made:
            _made[key] = _make(runtime, probe) if name == PLACEHOLDER else _bytecode(runtime)
        return _made[key]


def _bytecode(runtime: Runtime) -> Prelude | None:
    """The standard library of `runtime` compiled at optimisation level 2 under a folder of its
    own (kept across processes: its folder is complete once it has been renamed into place)."""
    binary = runtime.binary
    if binary is None:
        return None
    digest = hashlib.sha256(json.dumps([runtime.fingerprint(), BYTECODE_SKIP]).encode())
    directory = cache_root() / "startup" / f"bytecode-{digest.hexdigest()[:32]}"
    if (directory / BYTECODE_DIR).is_dir():
        return Prelude(path=directory / BYTECODE_DIR, directory=directory)
    try:
        found = subprocess.run(
            [binary, "-I", "-S", "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
            capture_output=True,
            timeout=60,
            check=True,
        )
        stdlib = found.stdout.decode().strip()
        if not stdlib.startswith("/") or "\n" in stdlib or not os.path.isdir(stdlib):
            return None
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
        return None

    def build(tmp: Path) -> None:
        prefix = tmp / BYTECODE_DIR
        done = subprocess.run(
            [binary, "-I", "-S", "-X", f"pycache_prefix={prefix}", "-m", "compileall",
             "-q", "-o", "2", "-x", BYTECODE_SKIP, stdlib],
            capture_output=True,
            timeout=BYTECODE_TIMEOUT_S,
        )  # fmt: skip
        # compileall says 1 when a file does not compile (such files are compiled, and fail,
        # in the program's sandbox as before); anything else, or no bytecode at all, is a failure
        if done.returncode not in (0, 1) or not any(prefix.rglob("*.opt-2.pyc")):
            raise OSError(f"compileall of {stdlib} failed: {done.stderr[-500:]!r}")

    try:
        atomic_folder(directory, build)
    except (OSError, subprocess.SubprocessError):
        return None
    if not (directory / BYTECODE_DIR).is_dir():
        return None
    return Prelude(path=directory / BYTECODE_DIR, directory=directory)


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


# -- the strategy ------------------------------------------------------------------------------


class _Placeholder:
    """Applies when the run argv uses this strategy's placeholder."""

    placeholder = ""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        return needed(runtime.run) == self.placeholder

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        made = None
        if host.backend.host_files:  # it lives on this host
            made = prepare(runtime, self.placeholder, prober(runtime, host, "run"))
        if made is not None:
            folder = SharedFolder(made.directory)
            return plan.changed(
                self.placeholder,
                values={**plan.values, self.placeholder: folder.inside_of(made.path)},
                ours=(*plan.ours, made.path),
                ro_paths=(*plan.ro_paths, folder),
            )
        classic = runtime.run_classic or ()
        if not classic:
            refusal = f"{runtime.name}: no start-up prelude and no run_classic"
            return plan.changed(self.placeholder, refusal=refusal)
        return plan.changed(self.placeholder, run_argv=classic)


class RubyPrelude(_Placeholder):
    placeholder = PLACEHOLDER


class PythonBytecode(_Placeholder):
    placeholder = BYTECODE
