"""The JVM's class-data sharing (CDS) archive of the JDK classes a typical judged program loads.

A JVM maps pre-parsed classes from a CDS archive instead of reading, parsing and verifying them.
The JDK's default archive (`lib/server/classes.jsa`, used in the sandbox too) holds the classes
of a hello-world start-up; a judged program also loads Scanner's regular expressions, the
collections, formatting, big numbers and streams (about 20 more classes: 2-8 ms of CPU a test).
This archive holds the default class list plus the JDK classes that a neutral warm-up program of
ours (`java/ClassDataWarmup.java`) loads, nothing of a judged program: it is built once per JDK
(the real `java` the sandbox's PATH finds, its version, its `lib/modules` and `libjvm.so`) on
this host by the JDK's own `-Xshare:dump`, in a folder of its own under
`$CODE_EVAL_CACHE/startup/`, complete once renamed into place, and mounted read-only into the
program's sandbox, where the run adds `-XX:SharedArchiveFile=` to the catalog's command line.

The archive is checked (`-Xshare:on -XX:+VerifySharedSpaces`: it maps and its checksums hold)
once per process before its first use: a truncated or damaged archive crashes the JVM
(SIGBUS), so one that fails the check is never used and the catalog's command line runs, as it
does for a heap above `MAX_HEAP_MB`. Classes
are still initialised when the program first uses them, in the same order: sharing changes where
a class's bytes come from, not what the program does. What a program could notice: the flag in
its JVM's input arguments (`RuntimeMXBean.getInputArguments()`, `/proc/self/cmdline`) and a
`/shared/...` mount. `CODE_EVAL_JVM_CDS=0` (or `CODE_EVAL_CLASSIC_BUILD=1`) runs the catalog's
command line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..caches.files import atomic_folder, cache_root
from ..languages.registry import Runtime, catalog_commands
from ..sandbox.outcome import DEFAULT_PATH
from ..sandbox.view import SharedFolder
from ..types import Job
from . import BuildPlan, Host

ARCHIVE = "classes.jsa"
WARMUP = Path(__file__).with_name("java") / "ClassDataWarmup.java"
WARMUP_CLASS = "ClassDataWarmup"
WARMUP_INPUT = b"1 2 3\n4 5\n"
#: the flag the run gets (a placeholder: the archive's path inside the sandbox)
FLAG = "-XX:SharedArchiveFile={jvm_cds}"
PLACEHOLDER = "jvm_cds"
#: a class-list line is kept when it names one of these packages (the JDK's own)
JDK_PACKAGES = ("java/", "javax/", "jdk/", "sun/", "com/sun/")
#: how long one step of the build (compile, class list, dump, check) may take
STEP_TIMEOUT_S = 300
#: the archive is made with the GC the catalog's runs use (it must match theirs)
GC_FLAG = "-XX:+UseSerialGC"
#: the archive holds compressed object pointers, which a JVM uses only for heaps under 32 GB; a
#: larger `-Xmx` could not map it and would lose the JDK's own no-compressed-oops archive too
MAX_HEAP_MB = 31 * 1024


@dataclass(frozen=True)
class Archive:
    path: Path  # the archive file
    directory: Path  # mounted read-only into the sandbox


_lock = threading.Lock()
_checked: dict[tuple[str, str], Archive | None] = {}


def switched_on(switches: config.EngineConfig | None = None) -> bool:
    """`CODE_EVAL_JVM_CDS` of `switches` (None: as the environment sets it now)."""
    return config.or_env(switches).jvm_cds


def enabled(switches: config.EngineConfig | None = None) -> bool:
    """Whether runs may use the archive: the switch is on and the build is not classic."""
    chosen = config.or_env(switches)
    return switched_on(chosen) and not chosen.classic_build


def applies(runtime: Runtime, memory_mb: int = 0) -> bool:
    """Whether the runtime runs the catalog's own `java` command line, with a heap the archive
    can serve."""
    if memory_mb > MAX_HEAP_MB:
        return False
    return catalog_commands(runtime) and runtime.run[:1] == ("java",) and GC_FLAG in runtime.run


def java_binary() -> str | None:
    """The real `java` behind the sandbox's PATH (on this host: the sandbox shows its /usr)."""
    found = shutil.which("java", path=DEFAULT_PATH)
    return os.path.realpath(found) if found else None


def jdk_identity(java: str) -> str | None:
    """What the archive depends on: the binary, its version and the JDK files it is checked
    against (the runtime image and the JVM library), or None when they cannot be read."""
    home = Path(java).resolve().parent.parent
    try:
        version = subprocess.run(
            [java, "-version"], capture_output=True, timeout=60, check=True, env=_env()
        ).stderr.decode("utf-8", "replace")
        files = [home / "lib" / "modules", home / "lib" / "server" / "libjvm.so"]
        stats = [(str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files]
        warmup = hashlib.sha256(WARMUP.read_bytes()).hexdigest()
    except (OSError, subprocess.SubprocessError):
        return None
    return json.dumps([java, version, stats, warmup, GC_FLAG])


def prepare(switches: config.EngineConfig | None = None) -> Archive | None:
    """The checked archive of this host's JDK below the cache of `switches` (made once, checked
    once per process and cache), or None: run the classic command line."""
    java = java_binary()
    if java is None:
        return None
    root = cache_root(switches)
    key = (str(root), java)
    with _lock:
        if key not in _checked:
            _checked[key] = _made(java, root)
        return _checked[key]


def _made(java: str, root: Path) -> Archive | None:
    identity = jdk_identity(java)
    if identity is None:
        return None
    digest = hashlib.sha256(identity.encode()).hexdigest()[:32]
    directory = root / "startup" / f"jvm-cds-{digest}"
    if not (directory / ARCHIVE).is_file():
        try:
            atomic_folder(directory, lambda tmp: _build(java, tmp))
        except (OSError, subprocess.SubprocessError):
            return None
    archive = directory / ARCHIVE
    return Archive(path=archive, directory=directory) if check(java, archive) else None


def _env() -> dict[str, str]:
    """A clean environment (no JAVA_TOOL_OPTIONS, no CLASSPATH) for the JDK's own tools."""
    return {"PATH": DEFAULT_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def _run(argv: list[str], cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        argv, cwd=cwd, input=stdin, capture_output=True, timeout=STEP_TIMEOUT_S, env=_env()
    )
    if done.returncode != 0:
        raise OSError(f"{argv[:3]} failed ({done.returncode}): {done.stderr[-500:]!r}")
    return done


def jdk_lines(class_list: str) -> list[str]:
    """The lines of a `-XX:DumpLoadedClassList` output that name only the JDK's own classes
    (the warm-up's class and the lambdas it defines are left out)."""
    kept = []
    for line in class_list.splitlines():
        words = line.split()
        if not words or line.startswith("#"):
            continue
        if words[0] == "@lambda-form-invoker":
            kept.append(line)
        elif words[0] == "@lambda-proxy":
            if len(words) > 1 and words[1].startswith(JDK_PACKAGES):
                kept.append(line)
        elif words[0].startswith(JDK_PACKAGES) and "source:" not in words:
            kept.append(line)
    return kept


def _build(java: str, tmp: Path) -> None:
    """Compile the warm-up, list the JDK classes it loads, dump them with the default list."""
    javac = Path(java).with_name("javac")
    work = Path(tempfile.mkdtemp(prefix="cds-", dir=tmp.parent))
    try:
        _run([str(javac), "-d", str(work), str(WARMUP)], work)
        listed = work / "loaded.classlist"
        flags = [java, GC_FLAG, "-Xshare:off", f"-XX:DumpLoadedClassList={listed}"]
        _run([*flags, "-cp", str(work), WARMUP_CLASS], work, WARMUP_INPUT)
        default = Path(java).resolve().parent.parent / "lib" / "classlist"
        lines = default.read_text(encoding="utf-8").splitlines()
        lines += jdk_lines(listed.read_text(encoding="utf-8"))
        class_list = tmp / "classlist"
        class_list.write_text("\n".join(dict.fromkeys(lines)) + "\n", encoding="utf-8")
        empty = work / "empty"
        empty.mkdir()  # no app class path: the archive holds the JDK's classes only
        dump = [java, GC_FLAG, "-Xshare:dump", "-XX:+VerifySharedSpaces",
                f"-XX:SharedClassListFile={class_list}", f"-XX:SharedArchiveFile={tmp / ARCHIVE}"]  # fmt: skip
        _run(dump, empty)
        if not check(java, tmp / ARCHIVE, work):
            raise OSError("the new class-data archive does not run the warm-up")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check(java: str, archive: Path, warmup: Path | None = None) -> bool:
    """Whether `archive` maps (`-Xshare:on` fails otherwise) with intact checksums, running
    `java -version`, or the compiled warm-up when `warmup` is its folder."""
    program = ["-cp", str(warmup), WARMUP_CLASS] if warmup is not None else ["-version"]
    argv = [java, GC_FLAG, "-Xshare:on", "-XX:+VerifySharedSpaces",
            f"-XX:SharedArchiveFile={archive}", *program]  # fmt: skip
    try:
        _run(argv, archive.parent, WARMUP_INPUT)
    except (OSError, subprocess.SubprocessError):
        return False
    return True


# -- the strategy ------------------------------------------------------------------------------


class JvmClassData:
    """Applies to the catalog's `java` run on a backend whose sandboxes see this host's files
    (the archive lives here), while `CODE_EVAL_JVM_CDS` is on."""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        if not (host.backend.host_files and enabled(host.config)):
            return False
        return applies(runtime, job.memory_limit_mb)

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        made = prepare(host.config)
        if made is None:
            return plan
        folder = SharedFolder(made.directory)
        java, *rest = plan.run_argv
        return plan.changed(
            PLACEHOLDER,
            run_argv=(java, FLAG, *rest),
            values={**plan.values, PLACEHOLDER: folder.inside_of(made.path)},
            ours=(*plan.ours, made.path),
            ro_paths=(*plan.ro_paths, folder),
        )
