"""Warm compilers: long-lived compiler processes (one per language and process), fed programs in
turn.

A cold `javac` pays about 0.5 s and `kotlinc` about 5 s of JVM start-up, class loading and
JIT warm-up per program, and a cold `mcs` about 0.2 s of Mono start-up and JIT. Here a compile
server (`java/CompileServer.java` for javac and kotlinc, `mono/CompileServer.cs` for mcs) runs
the same compiler in-process for many programs, inside a sandbox of its own (same launcher,
namespaces, read-only toolchain, no network, unprivileged uid, seccomp, one cgroup and limits for
the server as a whole), with the cold compile's own arguments in a work dir wiped before and after every
program (with the sandbox's /tmp and /dev/shm). Only the registry's own compile line is served
(`languages.catalog_commands`), and the server refuses any option that could load a client's
code or widen the class path; javac's class path is the work dir, as a cold javac's. Only two answers are trusted: "compiled" (the output files, laid out exactly as a cold
compile leaves them) and "compile error" (the compiler's own error status and text). Anything
else (a timeout, the server's heap cap, a compiler crash, an output past the cap, the server or
its sandbox dying, a protocol error) returns None and the caller compiles the program cold, with
today's limits, so its verdict is exactly a cold compile's.

Limits are stricter than a cold compile's so that a warm success implies a cold one: a wall
timeout of a quarter of the cold CPU limit, the cold heap cap (-Xmx; for Mono, the cold
compile's memory limit as its GC's max-heap-size) shared with the warm compiler's caches, and a
compile thread stack a quarter of the cold one (JIT-compiled frames are smaller than a cold
compiler's interpreted ones).

A warm compile has no cgroup of its own: its CPU time is the compile thread's (JVM: JIT and GC
threads are not counted; Mono: the server process's, all threads) and its wall time is recorded
next to it. Switch: the environment variable CODE_EVAL_WARM_COMPILERS=0 turns the warm path off
(every compile cold).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import io
import logging
import os
import shlex
import shutil
import struct
import subprocess
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..caches.files import atomic_folder, cache_root
from ..isolation import SandboxError
from ..languages.registry import Runtime, catalog_commands
from ..limits import MB, Limits
from ..sandbox.command import Sandbox, SpawnedProcess
from ..sandbox.outcome import default_env
from ..sandbox.view import SharedFolder
from ..types import Job
from . import BuildPlan, Host

log = logging.getLogger(__name__)

ENV_SWITCH = config.BY_FIELD["warm_compilers"].env
#: the server program of each mode: its source and the file its compilation leaves
SERVER_SOURCES = {
    "javac": (Path(__file__).with_name("java") / "CompileServer.java", "CompileServer.class"),
    "kotlinc": (Path(__file__).with_name("java") / "CompileServer.java", "CompileServer.class"),
    "mcs": (Path(__file__).with_name("mono") / "CompileServer.cs", "CompileServer.exe"),
}
MAGIC = 0x57434F31
STATUS_OK, STATUS_ERROR, STATUS_RETRY = 0, 1, 2
#: a server is replaced after this many programs (bounds what any cache inside it can grow to)
PROGRAMS_PER_SERVER = 200
#: the server's start-up (JVM and compiler class loading) must finish within this
START_TIMEOUT_S = 60.0
#: the engine's own deadline beyond the server's timeout (the server answers a timeout itself)
REPLY_GRACE_S = 10.0
#: the whole server's limits: its lifetime budgets and its sandbox's memory cap
SERVER_CPU_S = 1800.0
SERVER_WALL_S = 3600.0
#: a warm compile's wall timeout as a share of the cold compile's CPU limit
TIMEOUT_SHARE = 0.25
#: starts that fail in a row before a language's warm compiler is given up for the process
MAX_START_FAILURES = 3


def enabled(switches: config.EngineConfig | None = None) -> bool:
    """False when CODE_EVAL_WARM_COMPILERS is 0/false/no/off."""
    return config.or_env(switches).warm_compilers


@dataclass(frozen=True)
class WarmReply:
    """A trusted answer of a warm compiler."""

    ok: bool
    stdout: bytes
    stderr: bytes
    wall_s: float
    cpu_s: float  # the compile thread's CPU time (no cgroup: JIT and GC threads not counted)
    archive: bytes  # tar of the output files (ok only), restored into the program's work dir


@dataclass(frozen=True)
class ServerSpec:
    """How to start one language's compile server and what to pass per program."""

    mode: str  # "javac" | "kotlinc" | "mcs"
    vm: str  # the virtual machine running the server: java, or mono
    vm_flags: tuple[str, ...]
    compiler: tuple[str, ...]  # what the server loads: kotlinc's jars, mcs.exe (javac: the JDK's)
    ro_paths: tuple[str, ...]
    stack_kb: int
    memory_mb: int
    timeout_s: float
    env: tuple[tuple[str, str], ...] = ()  # the server's extra environment (Mono's heap cap)
    builder: str = ""  # the compiler of the server's own source (javac, mcs), trusted

    @property
    def key(self) -> str:
        return hashlib.sha256(repr(self).encode()).hexdigest()[:16]


def _jvm_option(flag: str) -> bool:
    """The cold compiler's JVM flags the server keeps: all but the thread stack (the server sets
    its compile thread's own). The tiering cap (`-XX:TieredStopAtLevel=1`, C1 only) stays: a
    server lives for at most PROGRAMS_PER_SERVER programs, too few for C2's compile work to pay
    back (measured on the 106 Kotlin programs of the judge-speed bench at 2 workers: C2 spent
    26 s of CPU in JIT threads to save 3 s of compile time; Java 6 s to save nothing)."""
    return not flag.startswith("-Xss")


def _stack_kb(flags: list[str], default_kb: int) -> int:
    """A quarter of the cold compiler's thread stack (-Xss, else the JVM default)."""
    kb = default_kb
    for f in flags:
        if f.startswith("-Xss"):
            kb = _size_kb(f[4:], default_kb)
    return max(64, kb // 4)


def _size_kb(text: str, default_kb: int) -> int:
    units = {"k": 1, "m": 1024, "g": 1024 * 1024}
    t = text.strip().lower()
    try:
        if t and t[-1] in units:
            return int(t[:-1]) * units[t[-1]]
        return int(t) // 1024
    except ValueError:
        return default_kb


def server_spec(
    runtime: Runtime, argv: list[str], limits: Limits
) -> tuple[ServerSpec, tuple[str, ...]] | None:
    """The warm compiler of `runtime` for the cold compile `argv` and the arguments to give it
    (the cold ones without the binary and JVM options), or None when it has none."""
    if not catalog_commands(runtime):
        return None  # a custom command or flags: only a cold compile runs them
    mode = runtime.warm_compiler
    binary = runtime.binary
    if mode not in SERVER_SOURCES or binary is None or not argv:
        return None
    real = Path(os.path.realpath(binary))
    timeout = limits.cpu_s * TIMEOUT_SHARE
    if mode == "mcs":
        return _mcs_spec(real, argv, limits, runtime, timeout)
    if mode == "javac":
        java = real.parent / "java"
        if not os.access(java, os.X_OK):
            return None
        cold_jvm = [a[2:] for a in argv[1:] if a.startswith("-J")]
        args = [a for a in argv[1:] if not a.startswith("-J")]
        # no annotation processing: a lone source file cannot bring a processor (the cold
        # compile's class path is its own work dir), and the warm one must not find any
        spec = ServerSpec(
            mode=mode,
            vm=str(java),
            vm_flags=tuple(f for f in cold_jvm if _jvm_option(f)),
            compiler=(),
            ro_paths=tuple(runtime.extra_ro_paths),
            stack_kb=_stack_kb(cold_jvm, 1024),
            memory_mb=limits.memory_mb,
            timeout_s=timeout,
            builder=str(real.parent / "javac"),
        )
        return spec, ("-proc:none", *args)
    home = real.parent.parent  # <kotlin home>/bin/kotlinc
    jar = home / "lib" / "kotlin-compiler.jar"
    java_bin = shutil.which("java", path=default_env()["PATH"])
    if not jar.is_file() or java_bin is None:
        return None
    cold_jvm = shlex.split(runtime.compile_env.get("JAVA_OPTS", ""))
    # the compiler's application environment (its own classes and jar indexes) is kept between
    # compiles, as kotlinc's daemon does; each compile still gets a fresh project of its own
    keep = "-Dkotlin.environment.keepalive=true"
    jvm = os.path.realpath(java_bin)
    spec = ServerSpec(
        mode=mode,
        vm=jvm,
        vm_flags=(
            *(f for f in cold_jvm if _jvm_option(f)),
            keep,
        ),
        compiler=(str(jar),),
        ro_paths=(str(home),) if not str(home).startswith("/usr/") else (),
        stack_kb=_stack_kb(cold_jvm, 1024),
        memory_mb=limits.memory_mb,
        timeout_s=timeout,
        builder=str(Path(jvm).parent / "javac"),
    )
    return spec, tuple(argv[1:])


def _mcs_exe(real: Path) -> Path | None:
    """mcs.exe behind the `mcs` command: the file itself, or the assembly its wrapper script
    hands to mono (Debian's /usr/bin/mcs: `exec /usr/bin/mono $MONO_OPTIONS .../mcs.exe "$@"`)."""
    if real.suffix == ".exe":
        return real
    try:
        if real.stat().st_size > 4096:
            return None
        words = real.read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return None
    found = [Path(w) for w in words if w.endswith("/mcs.exe") and w.startswith("/")]
    return found[0] if len(found) == 1 and found[0].is_file() else None


def _mcs_spec(
    real: Path, argv: list[str], limits: Limits, runtime: Runtime, timeout: float
) -> tuple[ServerSpec, tuple[str, ...]] | None:
    """mcs in a Mono server: the cold compile's arguments as they are (mcs resolves the source
    and `-out:` against the work dir, the server's working directory)."""
    exe = _mcs_exe(real)
    mono = shutil.which("mono", path=default_env()["PATH"])
    if exe is None or mono is None:
        return None
    # a cold mcs runs on the main thread, whose stack is the compile's RLIMIT_STACK
    spec = ServerSpec(
        mode="mcs",
        vm=os.path.realpath(mono),
        vm_flags=(),
        compiler=(str(exe),),
        ro_paths=tuple(runtime.extra_ro_paths),
        stack_kb=max(64, limits.stack_bytes // 1024 // 4),
        memory_mb=limits.memory_mb,
        timeout_s=timeout,
        env=(("MONO_GC_PARAMS", f"max-heap-size={limits.memory_mb}m"),),
        builder=str(real),
    )
    return spec, tuple(argv[1:])


# -- the server's own classes -------------------------------------------------------------------

_classes_lock = threading.Lock()
_classes: dict[str, Path] = {}


def server_classes(spec: ServerSpec) -> Path:
    """The server program of `spec.mode` compiled by `spec.builder` into
    `<cache>/warm-compiler/<key>/`, keyed by the server's source and the toolchain (compiled
    once; trusted code, so on the host)."""
    source, product = SERVER_SOURCES[spec.mode]
    fp = hashlib.sha256(source.read_bytes())
    fp.update(spec.builder.encode())
    for dep in (Path(spec.builder), Path(spec.vm), *map(Path, spec.compiler)):
        st = dep.stat()
        fp.update(f"{dep}:{st.st_size}:{st.st_mtime_ns}".encode())
    release = Path(spec.vm).parent.parent / "release"  # the JDK's version file
    if release.is_file():
        fp.update(release.read_bytes())
    key = fp.hexdigest()[:16]
    with _classes_lock:
        if key in _classes:
            return _classes[key]
        out = cache_root() / "warm-compiler" / key
        if not (out / product).is_file():

            def build(tmp: Path) -> None:
                if spec.mode == "mcs":
                    argv = [spec.builder, "-nologo", "-optimize+", f"-out:{tmp / product}"]
                else:
                    argv = [spec.builder, "-nowarn", "-d", str(tmp)]
                subprocess.run([*argv, str(source)], check=True, capture_output=True, timeout=120)

            atomic_folder(out, build)
        _classes[key] = out
        return out


def server_argv(spec: ServerSpec, classes: Path) -> list[str]:
    """The command line of a server of `spec` whose program is in `classes` (as its sandbox
    shows the folder)."""
    if spec.mode == "mcs":
        program = [str(classes / "CompileServer.exe")]
    else:
        program = ["-XX:+ExitOnOutOfMemoryError", "-XX:-UsePerfData", "-cp", str(classes)]
        program.append("CompileServer")
    return [spec.vm, *spec.vm_flags, *program, spec.mode, str(spec.stack_kb), *spec.compiler]


# -- one server ---------------------------------------------------------------------------------


class ServerGone(Exception):
    """The server cannot answer (ended, timed out, protocol error): compile cold."""


def _blob(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


class WarmServer:
    """One compile server in its own sandbox; `compile` is called by one thread at a time."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.programs = 0
        classes = SharedFolder(server_classes(spec))
        self._box = Sandbox(
            ro_paths=[classes, *spec.ro_paths],
            purposes=("compile",),
            isolation="required",
        )
        #: the server's uid and cgroup dirs: long-lived by design, so host scans that look for
        #: a program's leftovers can tell them apart
        self.uid = self._box.uid
        self.cgroup_dirs = [d for cs in self._box._cgroups.values() for d in cs.dirs]
        try:
            limits = Limits(
                cpu_s=SERVER_CPU_S,
                wall_s=SERVER_WALL_S,
                memory_mb=spec.memory_mb,
                output_bytes=8 * MB,
                processes=256,
                open_files=1024,
                stack_mb=64,
                as_headroom_mb=16384,
            )
            env = default_env(self._box.workdir) | dict(spec.env)
            self._proc: SpawnedProcess = self._box.spawn(
                server_argv(spec, Path(classes.inside)), limits=limits, env=env, purpose="compile"
            )
            deadline = time.monotonic() + START_TIMEOUT_S
            magic = self._int(deadline)
            mode = self._bytes(deadline).decode()
            if magic != MAGIC or mode != spec.mode:
                raise ServerGone(f"unexpected hello {magic:#x} {mode!r}")
        except BaseException:
            self.close()
            raise

    def _int(self, deadline: float) -> int:
        return int(struct.unpack(">i", self._read(4, deadline))[0])

    def _long(self, deadline: float) -> int:
        return int(struct.unpack(">q", self._read(8, deadline))[0])

    def _bytes(self, deadline: float) -> bytes:
        n = self._int(deadline)
        if n < 0 or n > 512 * MB:
            raise ServerGone(f"bad length {n}")
        return self._read(n, deadline)

    def _read(self, n: int, deadline: float) -> bytes:
        try:
            return self._proc.read(n, deadline)
        except (EOFError, TimeoutError, OSError) as exc:
            raise ServerGone(str(exc)) from exc

    def compile(
        self, args: tuple[str, ...], source_name: str, source: bytes, cap: int
    ) -> tuple[int, WarmReply | str]:
        """(status, reply) for one program; status RETRY comes with the reason (a str)."""
        spec = self.spec
        self.programs += 1
        req = struct.pack(">i", len(args))
        req += b"".join(_blob(a.encode()) for a in args)
        req += _blob(source_name.encode()) + _blob(source)
        req += struct.pack(">qq", int(spec.timeout_s * 1000), cap)
        deadline = time.monotonic() + spec.timeout_s + REPLY_GRACE_S
        try:
            self._proc.write(req, deadline)
        except (EOFError, TimeoutError, OSError) as exc:
            raise ServerGone(str(exc)) from exc
        status = self._int(deadline)
        reason = self._bytes(deadline).decode(errors="replace")
        stdout = self._bytes(deadline)
        stderr = self._bytes(deadline)
        wall_ns = self._long(deadline)
        cpu_ns = self._long(deadline)
        count = self._int(deadline)
        files = []
        for _ in range(count):
            name = self._bytes(deadline).decode()
            files.append((name, self._bytes(deadline)))
        if status == STATUS_RETRY or status not in (STATUS_OK, STATUS_ERROR):
            return STATUS_RETRY, reason or f"status {status}"
        archive = _tar(files) if status == STATUS_OK else b""
        reply = WarmReply(
            ok=status == STATUS_OK,
            stdout=stdout,
            stderr=stderr,
            wall_s=wall_ns / 1e9,
            cpu_s=max(0.0, cpu_ns / 1e9),
            archive=archive,
        )
        return status, reply

    def close(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and not proc.wait(time.monotonic() + 2.0):
            self._box.kill()
        self._box.close()


def _tar(files: list[tuple[str, bytes]]) -> bytes:
    """A tar of the compiled files (relative paths, checked), as `tar -xf -` restores them."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in files:
            parts = name.split("/")
            if name.startswith("/") or any(p in ("", ".", "..") for p in parts):
                raise ServerGone(f"bad output path {name!r}")
            info = tarfile.TarInfo("./" + name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# -- the per-process pool ----------------------------------------------------------------------


class WarmPool:
    """Idle servers per spec; a compile takes an idle one, or starts one while fewer than
    `per_spec` live, or else waits for one; it gives the server back unless it must be
    replaced. One server per language by default: a warm compile is short next to a program's
    test runs, so one server keeps up with the workers, and its JIT warms up on every program
    (measured at 2 workers, Kotlin: one server 1.4x faster than one per worker)."""

    def __init__(self, per_spec: int | None = None) -> None:
        self._cond = threading.Condition()
        self._idle: dict[str, list[WarmServer]] = {}
        self._failures: dict[str, int] = {}
        self._count: dict[str, int] = {}
        self._live: set[WarmServer] = set()
        self.per_spec = per_spec  # None: the switches' warm_servers, given with each compile
        self.started = 0

    def _limit(self, switches: config.EngineConfig | None = None) -> int:
        """Servers per spec: the pool's own number, else the switch's (None: the environment's)."""
        return self.per_spec if self.per_spec is not None else config.or_env(switches).warm_servers

    def servers(self) -> list[WarmServer]:
        """The servers alive now (idle or compiling)."""
        with self._cond:
            return list(self._live)

    def _take(self, key: str, limit: int) -> tuple[bool, WarmServer | None]:
        """(usable, server): an idle server, or (True, None) for "start one", or (False, None)
        when this spec's servers keep failing to start."""
        with self._cond:
            while True:
                if self._failures.get(key, 0) >= MAX_START_FAILURES:
                    return False, None
                idle = self._idle.get(key)
                if idle:
                    return True, idle.pop()
                if self._count.get(key, 0) < limit:
                    self._count[key] = self._count.get(key, 0) + 1
                    return True, None
                self._cond.wait()

    def compile(
        self,
        spec: ServerSpec,
        args: tuple[str, ...],
        source_name: str,
        source: bytes,
        cap: int,
        switches: config.EngineConfig | None = None,
    ) -> WarmReply | None:
        """A trusted warm answer, or None: compile cold."""
        usable, server = self._take(spec.key, self._limit(switches))
        if not usable:
            return None
        if server is None:
            try:
                server = WarmServer(spec)
            except (SandboxError, ServerGone, OSError, subprocess.SubprocessError) as exc:
                log.warning("warm %s compiler did not start: %s", spec.mode, exc)
                with self._cond:
                    self._failures[spec.key] = self._failures.get(spec.key, 0) + 1
                    self._count[spec.key] -= 1
                    self._cond.notify_all()
                return None
            with self._cond:
                self._failures[spec.key] = 0
                self.started += 1
                self._live.add(server)
        try:
            status, reply = server.compile(args, source_name, source, cap)
        except (ServerGone, SandboxError, OSError) as exc:
            log.info("warm %s compiler gone (%s): compiling cold", spec.mode, exc)
            self._retire(server)
            return None
        if status == STATUS_RETRY or server.programs >= PROGRAMS_PER_SERVER:
            # after a timeout, a limit or a crash the server has exited (or must)
            self._retire(server)
        else:
            with self._cond:
                self._idle.setdefault(spec.key, []).append(server)
                self._cond.notify_all()
        return reply if isinstance(reply, WarmReply) else None

    def _retire(self, server: WarmServer) -> None:
        server.close()
        with self._cond:
            if server in self._live:
                self._live.discard(server)
                self._count[server.spec.key] -= 1
            self._cond.notify_all()

    def close(self) -> None:
        """End every idle server (a compiling one ends when its compile returns)."""
        with self._cond:
            servers = [s for group in self._idle.values() for s in group]
            self._idle.clear()
        for s in servers:
            self._retire(s)


POOL = WarmPool()
atexit.register(POOL.close)


def warm_compile(
    runtime: Runtime,
    argv: list[str],
    source_name: str,
    source: bytes,
    limits: Limits,
    switches: config.EngineConfig | None = None,
) -> WarmReply | None:
    """Compile `source` with the runtime's warm compiler if it has one and `switches` allow:
    a trusted answer, or None (compile cold). `argv` and `limits` are the cold compile's."""
    if not enabled(switches):
        return None
    found = server_spec(runtime, argv, limits)
    if found is None:
        return None
    spec, args = found
    return POOL.compile(spec, args, source_name, source, limits.output_bytes, switches)


# -- the strategy ------------------------------------------------------------------------------


class WarmCompiler:
    """Applies to a compiled runtime on a backend whose programs may use this process's warm
    compilers; the warm compiler itself answers None (compile cold) for what it cannot serve."""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        return runtime.compile is not None and host.backend.warm_compilers()

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        return plan.changed(
            "warm_compiler", warm_compile=functools.partial(warm_compile, switches=host.config)
        )
