"""The local sandbox: one isolated environment per program, a fresh process per command.

Layers (each recorded in every result's `isolation` dict, so a degraded run is never silent):

====================  ==========================================================================
private_workdir       a fresh work dir per program: a size-limited tmpfs at /box owned by the
                      sandbox uid (or, for `run_command`, the caller's directory bound at its path)
env_allowlist         the program's environment is built from scratch (PATH, HOME, LANG, ...)
new_session           setsid() per command: no controlling terminal, own process group
rlimits               CPU (safety net), FSIZE, NOFILE, NPROC, STACK, CORE=0, MEMLOCK=0
pid/net/mount/ipc/    Linux namespaces (root, or an unprivileged user namespace); pid 1 of the
uts namespaces        namespace is the launcher, which SIGKILLs every process of the program after
                      each command, so daemons do not survive; the net namespace has no interface
                      but a downed loopback, so nothing is reachable
fs_view               pivot_root into a tmpfs that holds read-only binds of the toolchain
                      directories, the work dir, private /tmp, /dev and /proc; host /tmp, /root
                      and /home are absent; /etc/shadow & co. are masked with /dev/null
unprivileged_uid      commands run as a per-sandbox uid (>= 200000) with no groups
seccomp               libseccomp filter: EPERM for sockets other than AF_UNIX, ptrace,
                      process_vm_*, mount family, bpf, keyctl, unshare/setns, clone with namespace
                      flags, perf_event_open, module/kexec/swap/reboot...; ENOSYS for io_uring
                      and clone3 (so runtimes fall back to plain clone); foreign ABIs killed
cgroup                one memory+pids+cpuacct cgroup set per program and purpose (compile, run)
                      below the engine's own cgroup: memory limit, peak, OOM kills, pids cap, CPU
                      time of all threads and children
====================  ==========================================================================

The launcher (`launcher.c`) is compiled with gcc on first use into a cache directory. Without gcc
(or without root/user namespaces) the engine degrades to a plain subprocess with rlimits and a
private directory, and says so in `isolation`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import random
import shutil
import signal as _signal
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from execution import cgroups
from execution.cache import cache_root
from execution.limits import MB, Limits, cpu_count

LAUNCHER_SOURCE = Path(__file__).with_name("launcher.c")
#: tests only: (launcher stage, purpose), e.g. ("setuid", "run"): every command of that purpose
#: fails at that stage with EAGAIN, as a real setuid/exec failure would
TEST_FAIL_STAGE: tuple[str, str] | None = None

#: directories a toolchain may need, bound read-only (absent ones are skipped)
SYSTEM_RO_PATHS: tuple[str, ...] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
)


def is_system_path(path: str | os.PathLike[str]) -> bool:
    """True for a path inside (or equal to) one of SYSTEM_RO_PATHS, which every sandbox sees
    anyway; compared by whole path components, so `/library` is not under `/lib`."""
    p = os.fspath(path)
    return any(p == d or p.startswith(d + "/") for d in SYSTEM_RO_PATHS)


#: secrets masked inside the view even though the uid could not read most of them anyway
MASKED_PATHS: tuple[str, ...] = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
)
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
LAYERS: tuple[str, ...] = (
    "private_workdir",
    "env_allowlist",
    "new_session",
    "rlimits",
    "pid_namespace",
    "net_namespace",
    "mount_namespace",
    "ipc_namespace",
    "uts_namespace",
    "fs_view",
    "unprivileged_uid",
    "seccomp",
    "cgroup",
)


class SandboxError(RuntimeError):
    """The sandbox itself failed (an engine failure: INFRA_ERROR, never the program's fault)."""


def default_env(home: str = "/box") -> dict[str, str]:
    """The allow-listed environment every sandboxed command starts from."""
    return {
        "PATH": DEFAULT_PATH,
        "HOME": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp",
    }


def cache_dir() -> Path:
    """Where the compiled launcher lives: `<cache_root>/launcher` (next to the result cache)."""
    return cache_root() / "launcher"


# --------------------------------------------------------------------------------------------
# launcher build


_build_lock = threading.Lock()
_launcher: tuple[Path | None, str] | None = None


def _seccomp_available() -> bool:
    return Path("/usr/include/seccomp.h").exists()


def launcher_binary() -> tuple[Path | None, str]:
    """Compile the launcher once (cached by source hash); (path, "") or (None, reason)."""
    global _launcher
    with _build_lock:
        if _launcher is not None:
            return _launcher
        _launcher = _build_launcher()
        return _launcher


def _build_launcher() -> tuple[Path | None, str]:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None, "no C compiler to build the sandbox launcher"
    src = LAUNCHER_SOURCE.read_bytes()
    flags = ["-O2", "-Wall"]
    libs: list[str] = []
    if _seccomp_available():
        flags.append("-DHAVE_SECCOMP")
        libs.append("-lseccomp")
    digest = hashlib.sha256(src + " ".join(flags + libs).encode()).hexdigest()[:16]
    out_dir = cache_dir()
    target = out_dir / f"launcher-{digest}"
    if target.exists():
        return target, ""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".launcher-")
        os.close(fd)
        proc = subprocess.run(
            [cc, *flags, "-o", tmp, str(LAUNCHER_SOURCE), *libs],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if proc.returncode != 0:
            os.unlink(tmp)
            return None, f"launcher build failed: {proc.stderr.strip()[-400:]}"
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"launcher build failed: {exc}"
    return target, ""


# --------------------------------------------------------------------------------------------
# results


@dataclass
class CommandOutcome:
    """What one sandboxed command did. `signal` is a name such as "SIGSEGV"."""

    exit_code: int | None
    signal: str | None
    stdout: bytes
    stderr: bytes
    cpu_s: float
    wall_s: float
    peak_memory_mb: float  # peak RSS of the largest process of the command
    timed_out: bool
    memory_exceeded: bool
    output_exceeded: bool
    isolation: dict[str, Any] = field(default_factory=dict)
    timeout_kind: str | None = None  # "cpu" or "wall" when timed_out
    # the command could not be started (an engine problem unless runner.no_runnable_program says
    # the compiled artefact is missing): message, the launcher stage that failed ("chdir",
    # "setgid", "capabilities", "setuid", "seccomp", "exec", ...) and its errno
    error: str = ""
    error_stage: str = ""
    error_errno: int = 0
    # with `Sandbox.run(output_head=N)`: stdout's whole capture, open for reading (its name is
    # already unlinked), while `stdout` holds only its first N bytes; the caller closes it
    stdout_file: BinaryIO | None = None

    @property
    def ok(self) -> bool:
        return (
            not self.error
            and self.exit_code == 0
            and not (self.timed_out or self.memory_exceeded or self.output_exceeded)
        )


def signal_name(num: int) -> str:
    try:
        return _signal.Signals(num).name
    except ValueError:
        return f"SIG{num}"


# --------------------------------------------------------------------------------------------
# the sandbox


def _isolation_template() -> dict[str, Any]:
    return {name: False for name in LAYERS} | {
        "backend": "local",
        "cgroup_version": "",
        "memory_enforcement": "none",
        "user_namespace": False,
        "notes": [],
    }


def inactive_layers(isolation: Mapping[str, Any]) -> list[str]:
    """Names of the isolation layers that were not active for a result."""
    return [name for name in LAYERS if not isolation.get(name)]


_uid_lock = threading.Lock()
_uid_rng = random.Random()


def _allocate_uid() -> int:
    with _uid_lock:
        return 200000 + _uid_rng.randrange(0, 1_000_000)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_cleaned = False


def _cleanup_stale_once() -> None:
    """Remove work dirs and cgroups left behind by engines that were killed (SIGKILL)."""
    global _cleaned
    with _uid_lock:
        if _cleaned:
            return
        _cleaned = True
    for d in Path(tempfile.gettempdir()).glob("code-exec-*-*"):
        pid = d.name.split("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
    cgroups.cleanup_stale(_pid_alive)


class Sandbox:
    """One isolated environment; `run()` executes one command in a fresh process inside it.

    `purposes` names the cgroup sets (e.g. ("compile", "run")) so that memory charged while
    compiling (e.g. files left in the tmpfs work dir) never counts against the program's run.
    """

    def __init__(
        self,
        *,
        ro_paths: Sequence[str | Path] = (),
        rw_paths: Sequence[str | Path] = (),
        files: Mapping[str, bytes] | None = None,
        box: bool = True,
        box_mb: int = 512,
        purposes: Sequence[str] = ("run",),
    ) -> None:
        self.isolation = _isolation_template()
        self._purposes = list(purposes)
        self._cgroups: dict[str, cgroups.CgroupSet] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        _cleanup_stale_once()
        self._tmp = Path(tempfile.mkdtemp(prefix=f"code-exec-{os.getpid()}-"))
        self._io = self._tmp / "io"
        self._io.mkdir()
        self._stderr_path = self._tmp / "launcher.err"
        self.workdir = "/box" if box else ""
        self._seq = 0
        self._closed = False
        try:
            self._start(ro_paths, rw_paths, files or {}, box, box_mb)
        except BaseException:
            self.close()
            raise

    # -- setup --------------------------------------------------------------------------------

    def _start(
        self,
        ro_paths: Sequence[str | Path],
        rw_paths: Sequence[str | Path],
        files: Mapping[str, bytes],
        box: bool,
        box_mb: int,
    ) -> None:
        iso = self.isolation
        iso["new_session"] = True
        iso["rlimits"] = True
        iso["env_allowlist"] = True
        launcher, reason = launcher_binary()
        if launcher is None:
            raise SandboxError(reason)
        is_root = os.geteuid() == 0
        for purpose in self._purposes:
            try:
                self._cgroups[purpose] = cgroups.CgroupSet.create(purpose)
            except OSError as exc:
                iso["notes"].append(f"cgroup unavailable: {exc}")
                for cs in self._cgroups.values():
                    cs.destroy()
                self._cgroups.clear()
                break
        if any(not cs.swap_control for cs in self._cgroups.values()):
            iso["notes"].append("swap could not be disabled for the program's cgroup")
        if self._cgroups:
            iso["cgroup"] = True
            iso["cgroup_version"] = next(iter(self._cgroups.values())).version
            iso["memory_enforcement"] = "cgroup"
        else:
            iso["memory_enforcement"] = "rlimit_as"
        self.uid = _allocate_uid() if is_root else os.geteuid()
        args = [str(launcher), "--io", str(self._io), "--ncpu", str(cpu_count())]
        if _seccomp_available():
            args.append("--seccomp")
        if TEST_FAIL_STAGE is not None and TEST_FAIL_STAGE[1] in self._purposes:
            stage, purpose = TEST_FAIL_STAGE
            args += ["--test-fail-stage", f"{stage}:{self._purposes.index(purpose)}"]
        for i, purpose in enumerate(self._purposes):
            cset = self._cgroups.get(purpose)
            if cset is None:
                continue
            for pf in cset.procs_files:
                args += ["--cg", f"{i}:{pf}"]
            if cset.cpu_file is not None:
                args += ["--cgcpu2" if cset.cpu_is_v2 else "--cgcpu", f"{i}:{cset.cpu_file}"]
        for cset in self._cgroups.values():
            for d in cset.dirs:
                args += ["--cleanup-cgroup", str(d)]
        args += ["--cleanup-tree", str(self._tmp)]
        base = list(args)
        root = self._tmp / "root"
        root.mkdir()
        args += ["--ns", "--root", str(root)]
        if not is_root:
            args.append("--userns")
        else:
            args += ["--uid", str(self.uid), "--gid", str(self.uid)]
        if box:
            args += ["--box", "--box-mb", str(box_mb)]
        seen: set[str] = set()
        for p in [*SYSTEM_RO_PATHS, *map(str, ro_paths)]:
            if p not in seen and os.path.lexists(p):
                seen.add(p)
                args += ["--ro", p]
        for p in map(str, rw_paths):
            args += ["--rw", p]
        for p in MASKED_PATHS:
            args += ["--mask", p]
        for name, data in files.items():
            if "/" in name or name in ("", ".", ".."):
                raise ValueError(f"sandbox file name must be a plain name: {name!r}")
            host = self._tmp / f"copy-{len(args)}"
            host.write_bytes(data)
            args += ["--copy", f"{host}:{name}"]
        info = self._spawn(args)
        if info is None:
            # no namespaces here (not root, user namespaces disabled): degrade, visibly
            iso["notes"].append(f"namespaces unavailable: {self._launcher_stderr()}")
            if is_root:
                base += ["--uid", str(self.uid), "--gid", str(self.uid)]
            if box:
                work = self._tmp / "box"
                work.mkdir(mode=0o700)
                for name, data in files.items():
                    (work / name).write_bytes(data)
                if is_root:
                    os.chmod(self._tmp, 0o711)
                    _chown_tree(work, self.uid, self.uid)
                self.workdir = str(work)
            info = self._spawn(base)
            if info is None:
                raise SandboxError(f"sandbox did not start: {self._launcher_stderr()}")
        pid1 = info.get("pid1") == "1"
        for ns in ("pid", "net", "mount", "ipc", "uts"):
            iso[f"{ns}_namespace"] = pid1
        iso["fs_view"] = pid1
        iso["private_workdir"] = True
        iso["user_namespace"] = pid1 and not is_root
        iso["unprivileged_uid"] = is_root
        if pid1 and not is_root:
            iso["notes"].append("not root: one uid mapped, no uid switch")
        iso["seccomp"] = info.get("seccomp") == "1"

    def _spawn(self, args: list[str]) -> dict[str, str] | None:
        """Start the launcher; its ready line, or None when it could not start."""
        if self._proc is not None:
            with contextlib.suppress(OSError):
                if self._proc.stdin is not None:
                    self._proc.stdin.close()
            self._proc.wait()
            self._proc = None
        with open(self._stderr_path, "wb") as err:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                close_fds=True,
                start_new_session=True,
                # nothing of the engine's environment reaches the sandbox, not even its init
                env={"PATH": DEFAULT_PATH, "LANG": "C.UTF-8"},
            )
        line = self._readline()
        if not line.startswith(b"ready=1"):
            return None
        return _parse_kv(line)

    def _launcher_stderr(self) -> str:
        with contextlib.suppress(OSError):
            return self._stderr_path.read_text(errors="replace").strip()[-2000:]
        return ""

    def _readline(self) -> bytes:
        assert self._proc is not None and self._proc.stdout is not None
        return self._proc.stdout.readline()

    # -- commands -----------------------------------------------------------------------------

    def run(
        self,
        argv: Sequence[str],
        *,
        limits: Limits,
        stdin: bytes = b"",
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        purpose: str | None = None,
        output_head: int | None = None,
    ) -> CommandOutcome:
        """Run one command in a fresh process; every process it started is gone on return.

        With `output_head`, only that many bytes of stdout and stderr are read into memory and
        stdout's whole capture comes back as `stdout_file`, so a big output is never held by
        the engine."""
        if self._closed or self._proc is None:
            raise SandboxError("sandbox is closed")
        purpose = purpose or self._purposes[0]
        set_index = self._purposes.index(purpose)
        cs = self._cgroups.get(purpose)
        self._seq += 1
        # fresh names per command: truncating and rewriting a file makes ext4 flush it on close
        # (auto_da_alloc), which costs milliseconds per test
        in_name, out_name, err_name = (f"{k}-{self._seq}" for k in ("in", "out", "err"))
        (self._io / in_name).write_bytes(stdin)
        cap = limits.output_bytes
        if cs is not None:
            cs.set_memory(limits.memory_mb)
            cs.set_pids(limits.processes)
            oom_before = cs.oom_kills()
        envmap = dict(env) if env is not None else default_env(self.workdir or "/tmp")
        toks = [b"A" + a.encode() for a in argv]
        toks += [b"E" + f"{k}={v}".encode() for k, v in envmap.items()]
        toks += [
            b"C" + (cwd or self.workdir or "/").encode(),
            b"I" + in_name.encode(),
            b"O" + out_name.encode(),
            b"R" + err_name.encode(),
            b"G" + str(set_index).encode(),
            f"Lcpu={limits.cpu_s:.3f}".encode(),
            f"Lwall={limits.wall:.3f}".encode(),
            # one byte more than the cap: reaching it proves the program wanted to write more
            f"Lfsize={cap + 1}".encode(),
            f"Lnofile={limits.open_files}".encode(),
            f"Lnproc={limits.processes}".encode(),
            f"Lstack={limits.stack_bytes}".encode(),
        ]
        if cs is None:
            toks.append(f"Las={(limits.memory_mb + limits.as_headroom_mb) * MB}".encode())
        payload = b"\0".join(toks) + b"\0"
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(str(len(payload)).encode() + b"\n" + payload)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise SandboxError(f"sandbox died: {exc}; {self._launcher_stderr()}") from exc
        line = self._readline()
        if not line:
            raise SandboxError(f"sandbox died: {self._launcher_stderr()}")
        info = _parse_kv(line)
        if "exited" not in info:
            raise SandboxError(f"sandbox error: {info.get('error', line.decode(errors='replace'))}")
        stdout_file = None
        if output_head is None:
            stdout, out_full = _read_capped(self._io / out_name, cap)
        else:
            stdout, out_full, stdout_file = _open_capture(self._io / out_name, cap, output_head)
        if output_head is None:
            stderr, err_full = _read_capped(self._io / err_name, cap)
        else:
            stderr, err_full, err_file = _open_capture(self._io / err_name, cap, output_head)
            err_file.close()
        for name in (in_name, out_name, err_name):
            with contextlib.suppress(OSError):
                os.unlink(self._io / name)
        sig = int(info["signal"])
        exited = info["exited"] == "1"
        cg_cpu = float(info["cgcpu"])
        cpu = cg_cpu if cg_cpu >= 0 else float(info["cpu"])
        # reported peak: resident set of the largest process (what judges report); the cgroup's
        # own peak also counts the page cache of the captured output, so it only decides MLE
        peak_mb = int(info["maxrss_kb"]) / 1024.0
        mem_exceeded = False
        if cs is not None:
            mem_exceeded = cs.oom_kills() > oom_before
        elif peak_mb >= limits.memory_mb:
            mem_exceeded = True
        killed = info.get("killed", "none")
        timed_out = killed in ("cpu", "wall") or sig == _signal.SIGXCPU or cpu > limits.cpu_s
        error = info.get("error", "")
        return CommandOutcome(
            exit_code=int(info["code"]) if exited else None,
            signal=signal_name(sig) if sig else None,
            stdout=stdout,
            stderr=stderr,
            cpu_s=cpu,
            wall_s=float(info["wall"]),
            peak_memory_mb=round(peak_mb, 3),
            timed_out=timed_out,
            memory_exceeded=mem_exceeded,
            output_exceeded=out_full or err_full,
            isolation=self.isolation_snapshot(),
            timeout_kind=(killed if killed in ("cpu", "wall") else ("cpu" if timed_out else None)),
            error=error,
            error_stage=info.get("error_stage", "") if error else "",
            error_errno=int(info.get("error_errno") or 0) if error else 0,
            stdout_file=stdout_file,
        )

    def isolation_snapshot(self) -> dict[str, Any]:
        snap = dict(self.isolation)
        snap["notes"] = list(self.isolation["notes"])
        return snap

    # -- teardown -----------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        if proc is not None:
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, _signal.SIGKILL)
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        for cs in self._cgroups.values():
            cs.destroy()
        shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _parse_kv(line: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in line.decode(errors="replace").split():
        k, _, v = part.partition("=")
        out[k] = v
    return out


def _read_capped(path: Path, cap: int) -> tuple[bytes, bool]:
    """The first `cap` bytes of a file and whether the program tried to write past `cap`."""
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
    except FileNotFoundError:
        return b"", False
    return data[:cap], len(data) > cap


def _open_capture(path: Path, cap: int, head: int) -> tuple[bytes, bool, BinaryIO]:
    """(first `head` bytes, whether the program wrote past `cap`, the capture opened for
    reading). Bytes past `cap` (at most one) are never part of the output."""
    try:
        fh: BinaryIO = open(path, "rb")  # noqa: SIM115 - handed to the caller
    except FileNotFoundError:
        return b"", False, io.BytesIO(b"")
    size = os.fstat(fh.fileno()).st_size
    data = fh.read(min(head, cap))
    if size > cap:  # an OLE: the output is never compared
        fh.close()
        return data, True, io.BytesIO(b"")
    return data, False, fh


# --------------------------------------------------------------------------------------------
# generic command API


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.lchown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            with contextlib.suppress(FileNotFoundError):
                os.lchown(os.path.join(dirpath, name), uid, gid)


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    stdin: bytes = b"",
    limits: Limits,
    readonly_paths: Sequence[Path] = (),
    writable_paths: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
) -> CommandOutcome:
    """Run one command in a fresh sandbox (all layers above) and return what it did.

    The command sees the toolchain directories and `readonly_paths` read-only, `cwd` and
    `writable_paths` read-write (at their host paths), a private /tmp, and nothing else of the
    host. As root, `cwd` and `writable_paths` are handed to the sandbox uid for the run and given
    back to their previous owner afterwards, so pass scratch copies. `env` replaces the default
    allow-listed environment (PATH is added when missing). Raises SandboxError only when the
    sandbox cannot be built; everything the command does is reported in the outcome.

    Example::

        from pathlib import Path
        from execution.limits import Limits
        from execution.sandbox import run_command

        out = run_command(
            ["python3", "-m", "pytest", "-q", "tests/test_x.py"],
            cwd=Path("/tmp/repo-copy"),
            limits=Limits(cpu_s=60, wall_s=120, memory_mb=1024, processes=64),
            readonly_paths=[Path("/opt/venv")],
        )
        passed = out.ok  # exit 0, no timeout / MLE / output overflow, sandbox fine
        print(out.exit_code, out.stdout.decode()[-500:], out.isolation)
    """
    cwd = Path(cwd).resolve()
    writable = [cwd, *(Path(p).resolve() for p in writable_paths)]
    envmap = default_env(str(cwd))
    if env is not None:
        envmap = {"PATH": DEFAULT_PATH, **env}
    owners: list[tuple[Path, int, int]] = []
    sandbox = Sandbox(
        ro_paths=[str(Path(p).resolve()) for p in readonly_paths],
        rw_paths=[str(p) for p in writable],
        box=False,
    )
    try:
        if os.geteuid() == 0:
            for p in writable:
                st = p.stat()
                owners.append((p, st.st_uid, st.st_gid))
                _chown_tree(p, sandbox.uid, sandbox.uid)
        return sandbox.run(argv, limits=limits, stdin=stdin, env=envmap, cwd=str(cwd))
    finally:
        sandbox.close()
        for p, uid, gid in owners:
            with contextlib.suppress(OSError):
                _chown_tree(p, uid, gid)


def probe_isolation() -> dict[str, Any]:
    """Which layers a sandbox gets on this machine (for `doctor` and tests)."""
    try:
        with Sandbox(purposes=("run",)) as sb:
            out = sb.run(["/bin/true"], limits=Limits(cpu_s=2, wall_s=10))
            iso = out.isolation
            if out.error or out.exit_code != 0:
                iso["notes"].append(f"probe command failed: {out.error or out.exit_code}")
            return iso
    except SandboxError as exc:
        iso = _isolation_template()
        iso["notes"].append(str(exc))
        return iso


__all__ = [
    "LAYERS",
    "CommandOutcome",
    "Limits",
    "Sandbox",
    "SandboxError",
    "default_env",
    "inactive_layers",
    "is_system_path",
    "probe_isolation",
    "run_command",
]
