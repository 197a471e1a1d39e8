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
                      and /home are absent; /etc/shadow & co. are masked with /dev/null; the
                      engine's own folders show at /shared/<name> (SharedFolder) and no mount
                      line names a host folder (ro_mount_words: views where a bind would)
unprivileged_uid      commands run as a per-sandbox uid (>= 200000) with no groups
seccomp               libseccomp filter: EPERM for sockets other than AF_UNIX, ptrace,
                      process_vm_*, mount family, bpf, keyctl, unshare/setns, clone with namespace
                      flags, perf_event_open, module/kexec/swap/reboot...; ENOSYS for io_uring
                      and clone3 (so runtimes fall back to plain clone); foreign ABIs killed
cgroup                one memory+pids+cpuacct cgroup set per program and purpose (compile, run)
                      below the engine's own cgroup: memory limit, peak, OOM kills, pids cap, CPU
                      time of all threads and children (rootless without a delegated cgroup:
                      the init samples CPU and memory of its whole pid namespace instead;
                      `cpu_enforcement`, `memory_enforcement` and `unenforced` say which)
====================  ==========================================================================

The launcher (`launcher.c`) is compiled with gcc on first use into a cache directory (without gcc
every job is an INFRA_ERROR). Which layers the host can give is probed once per process
(`host_probe.host_isolation`); nothing else lowers them. Under the `required` policy (the
default) a host without namespaces or seccomp refuses to judge; only under `best-effort` does it
run a plain subprocess with rlimits and a private directory, and `isolation` lists what is
missing.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import select
import signal as _signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from ..isolation import (
    ISOLATION_POLICIES,
    LAYERS,
    REQUIRED_LAYERS,
    IsolationRefused,
    SandboxError,
    check_policy,
    inactive_layers,
    policy_refusal,
)
from ..limits import MB, Limits, cpu_count
from . import cgroups, cleanup, uids
from .fstree import chown_tree, remove_tree
from .host_probe import host_isolation, host_refusal
from .launcher import launcher_binary, launcher_config, parse_kv, popen_launcher
from .outcome import (
    DEFAULT_PATH,
    WARM_OOM_NOTE,
    CommandOutcome,
    ForkedTestMemoryKill,
    default_env,
    signal_name,
)
from .view import (
    MASKED_PATHS,
    SHARED_ROOT,
    SYSTEM_RO_PATHS,
    SharedFolder,
    _mount_table,
    is_system_path,
    ro_mount_words,
)

log = logging.getLogger(__name__)

#: rootless accounting: how often the sandbox init samples its pid namespace (NS_SAMPLE_S in
#: launcher.c)
NS_SAMPLE_MS = 10
#: rootless accounting: the least address space above the memory limit a process gets
#: (RLIMIT_AS backstop). Generous so the sampled total decides MEMORY_LIMIT_EXCEEDED, as the
#: cgroup does as root, instead of a runtime failing its own allocation first (a MemoryError or
#: an abort would be a RUNTIME_ERROR rootless and an OOM kill with cgroups: the same program,
#: two verdicts). Pages must be touched to count, and touching is bounded by memory bandwidth
#: between two samples, so the overshoot stays what the README's accuracy note says.
SAMPLED_AS_HEADROOM_MB = 4096


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """`proc.wait(timeout)` that wakes the moment the process exits: Popen's own timed wait
    polls with growing sleeps, which left each sandbox's teardown idle for about 3 ms after its
    launcher had already gone. A pidfd is readable once the process has exited."""
    if proc.poll() is not None:
        return
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        proc.wait(timeout=timeout)
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(timeout * 1000):
            raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    proc.wait()


# --------------------------------------------------------------------------------------------
# the sandbox


def _isolation_template(policy: str = "required") -> dict[str, Any]:
    return {name: False for name in LAYERS} | {
        "backend": "local",
        "policy": policy,
        "missing": list(LAYERS),
        "cgroup_version": "",
        "memory_enforcement": "none",
        "cpu_enforcement": "none",
        # limits that no mechanism of this sandbox enforces over ALL processes of a command
        # ("cpu_time", "memory"): `--isolation required` refuses such a sandbox
        "unenforced": ["cpu_time", "memory"],
        "user_namespace": False,
        "notes": [],
    }


class Sandbox:
    """One isolated environment; `run()` executes one command in a fresh process inside it.

    `purposes` names the cgroup sets (e.g. ("compile", "run")) so that memory charged while
    compiling (e.g. files left in the tmpfs work dir) never counts against the program's run.
    `isolation` is the policy: "required" raises IsolationRefused unless every layer of
    REQUIRED_LAYERS is active; "best-effort" runs with fewer layers and lists the missing ones.
    `test_fail_stage` is for tests only: (launcher stage, purpose), e.g. ("setuid", "run"):
    every command of that purpose fails at that stage with EAGAIN, as a real setuid/exec
    failure would; ("unshare", purpose) makes the sandbox's start fail. Given, it selects the
    launcher built with -DTEST_HOOKS (the production launcher refuses the flag).
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
        isolation: str = "required",
        test_fail_stage: tuple[str, str] | None = None,
    ) -> None:
        self.policy = check_policy(isolation)
        self._test_fail_stage = test_fail_stage
        self.isolation = _isolation_template(self.policy)
        self._purposes = list(purposes)
        self._cgroups: dict[str, cgroups.CgroupSet] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        cleanup.cleanup_stale_once()
        self._tmp = Path(tempfile.mkdtemp(prefix=f"code-exec-{os.getpid()}-"))
        self._io = self._tmp / "io"
        self._io.mkdir()
        self._stderr_path = self._tmp / "launcher.err"
        self.workdir = "/box" if box else ""
        self._seq = 0
        self._closed = False
        #: the zygote's command (argv, env, cwd, purpose) while one serves warm runs
        self._zygote: tuple[object, ...] | None = None
        #: why the last zygote ended or never started ("" while none was asked for)
        self.zygote_note = ""
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
        fail_stage = self._test_fail_stage
        launcher, reason = launcher_binary(test_hooks=fail_stage is not None)
        if launcher is None:
            raise SandboxError(reason)
        for name, _ in files.items():
            if "/" in name or name in ("", ".", ".."):
                raise ValueError(f"sandbox file name must be a plain name: {name!r}")
        refusal = host_refusal(self.policy)
        if refusal:
            raise IsolationRefused(refusal)
        host = host_isolation()
        is_root = os.geteuid() == 0
        if host.cgroups:
            for purpose in self._purposes:
                try:
                    self._cgroups[purpose] = cgroups.CgroupSet.create(purpose)
                except OSError as exc:
                    # the probe made one: failing now is this job's error, not a reason to
                    # judge it with an address-space limit instead
                    raise SandboxError(
                        f"cgroup for {purpose!r} could not be created: {exc}"
                    ) from exc
        else:
            iso["notes"].append(f"cgroup unavailable: {host.cgroup_detail}")
        if any(not cs.swap_control for cs in self._cgroups.values()):
            iso["notes"].append("swap could not be disabled for the program's cgroup")
        if self._cgroups:
            iso["cgroup"] = True
            iso["cgroup_version"] = next(iter(self._cgroups.values())).version
        self.uid = uids.allocate_uid() if is_root else os.geteuid()
        args = ["--io", str(self._io), "--ncpu", str(cpu_count())]
        if host.seccomp:
            args.append("--seccomp")
        if fail_stage is not None and fail_stage[1] in self._purposes:
            stage, purpose = fail_stage
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
        if is_root:
            args += ["--uid", str(self.uid), "--gid", str(self.uid)]
        if host.namespaces:
            self._start_namespaces(launcher, args, ro_paths, rw_paths, files, box, box_mb)
        else:
            # best-effort on a host without namespaces (decided by the probe, never by a
            # failure): a plain subprocess with rlimits and a private directory, visibly
            iso["notes"].append(f"namespaces unavailable: {host.detail}")
            self._start_plain(launcher, args, files, box, is_root)
        missing = inactive_layers(iso)
        iso["missing"] = missing
        refusal = policy_refusal(self.policy, REQUIRED_LAYERS, iso)
        if refusal:
            raise IsolationRefused(refusal)

    def _start_namespaces(
        self,
        launcher: Path,
        args: list[str],
        ro_paths: Sequence[str | Path],
        rw_paths: Sequence[str | Path],
        files: Mapping[str, bytes],
        box: bool,
        box_mb: int,
    ) -> None:
        """The full sandbox; any failure to start it is this job's SandboxError."""
        iso = self.isolation
        is_root = os.geteuid() == 0
        root = self._tmp / "root"
        root.mkdir()
        args = [*args, "--ns", "--root", str(root)]
        if not is_root:
            args.append("--userns")
        if box:
            args += ["--box", "--box-mb", str(box_mb)]
        mounts = _mount_table()
        seen: set[str] = set()
        shared: dict[str, str] = {}
        for p in [*SYSTEM_RO_PATHS, *ro_paths]:
            if isinstance(p, SharedFolder):
                if shared.setdefault(p.inside, str(p)) != str(p):
                    raise SandboxError(f"two shared folders at {p.inside}: {shared[p.inside]}, {p}")
                continue
            p = str(p)
            if p not in seen and os.path.lexists(p):
                seen.add(p)
                args += ro_mount_words(p, mounts, rootless=not is_root)
        for inside, folder in shared.items():
            args += ["--view", folder, inside]
        for p in map(str, rw_paths):
            args += ["--rw", p]
        for p in MASKED_PATHS:
            args += ["--mask", p]
        for n, (name, data) in enumerate(files.items()):
            host = self._tmp / f"copy-{n}"
            host.write_bytes(data)
            args += ["--copy", f"{host}:{name}"]
        info = self._spawn(launcher, args)
        if info is None or info.get("pid1") != "1":
            raise SandboxError(f"sandbox did not start: {self._launcher_stderr() or 'no answer'}")
        for ns in ("pid", "net", "mount", "ipc", "uts"):
            iso[f"{ns}_namespace"] = True
        iso["fs_view"] = True
        iso["private_workdir"] = True
        iso["user_namespace"] = not is_root
        iso["unprivileged_uid"] = is_root
        if not is_root:
            iso["notes"].append("not root: one uid mapped, no uid switch")
        iso["seccomp"] = info.get("seccomp") == "1"
        self._set_enforcement(pid1=True)

    def _set_enforcement(self, pid1: bool) -> None:
        """Record how CPU time and memory are counted: the cgroup (all processes), the sandbox
        init sampling its whole pid namespace (rootless), or per process only (unenforced)."""
        iso = self.isolation
        sets = list(self._cgroups.values())
        if sets and all(cs.cpu_file is not None for cs in sets):
            iso["cpu_enforcement"] = "cgroup"
        else:
            iso["cpu_enforcement"] = "pid_namespace_sampling" if pid1 else "main_process"
        if sets:
            iso["memory_enforcement"] = "cgroup"
        else:
            iso["memory_enforcement"] = "pid_namespace_sampling" if pid1 else "rlimit_as"
        unenforced = []
        if iso["cpu_enforcement"] == "main_process":
            unenforced.append("cpu_time")
        if iso["memory_enforcement"] == "rlimit_as":
            unenforced.append("memory")
        iso["unenforced"] = unenforced
        if "pid_namespace_sampling" in (iso["cpu_enforcement"], iso["memory_enforcement"]):
            iso["notes"].append(
                "no cgroup: CPU time and memory of every process sampled by the sandbox init "
                f"every {NS_SAMPLE_MS} ms (see README, rootless accounting)"
            )

    def _start_plain(
        self, launcher: Path, args: list[str], files: Mapping[str, bytes], box: bool, is_root: bool
    ) -> None:
        """Best-effort only: no namespaces, a private directory on the host."""
        iso = self.isolation
        if box:
            work = self._tmp / "box"
            work.mkdir(mode=0o700)
            for name, data in files.items():
                (work / name).write_bytes(data)
            if is_root:
                os.chmod(self._tmp, 0o711)
                chown_tree(work, self.uid, self.uid)
            self.workdir = str(work)
        info = self._spawn(launcher, args)
        if info is None:
            raise SandboxError(f"sandbox did not start: {self._launcher_stderr() or 'no answer'}")
        iso["private_workdir"] = True
        iso["unprivileged_uid"] = is_root
        iso["seccomp"] = info.get("seccomp") == "1"
        self._set_enforcement(pid1=False)

    def _spawn(self, launcher: Path, config: list[str]) -> dict[str, str] | None:
        """Start the launcher under a neutral argv, its configuration on its stdin (so that
        /proc/1/cmdline inside shows no host path); its ready line, or None."""
        with open(self._stderr_path, "wb") as err:
            self._proc = popen_launcher(launcher, err)
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(launcher_config(config))
            self._proc.stdin.flush()
        except OSError:
            return None
        line = self._readline()
        if not line.startswith(b"ready=1"):
            return None
        return parse_kv(line)

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
        warm: bool = False,
    ) -> CommandOutcome:
        """Run one command in a fresh process; every process it started is gone on return.

        With `output_head`, only that many bytes of stdout and stderr are read into memory and
        stdout's whole capture comes back as `stdout_file`, so a big output is never held by
        the engine. With `warm`, a command equal to the one `start_warm` started runs as a fresh
        process forked by that zygote; whenever it cannot (no zygote, another command, the
        zygote gone or misbehaving) nothing of the program ran and the command runs cold. A
        forked process the memory cgroup killed raises `ForkedTestMemoryKill` (and the sandbox
        forks no further test): its outcome is no verdict, and what it left in the sandbox is not the
        state a cold test would leave, so nothing runs again here."""
        out, forked = self._run_once(argv, limits, stdin, env, cwd, purpose, output_head, warm)
        if forked and out.memory_exceeded:
            if out.stdout_file is not None:
                out.stdout_file.close()
            self._zygote = None  # the next command, cold, ends it (launcher.c)
            self.zygote_note = WARM_OOM_NOTE
            raise ForkedTestMemoryKill(WARM_OOM_NOTE)
        return out

    def _run_once(
        self,
        argv: Sequence[str],
        limits: Limits,
        stdin: bytes,
        env: Mapping[str, str] | None,
        cwd: str | None,
        purpose: str | None,
        output_head: int | None,
        warm: bool,
    ) -> tuple[CommandOutcome, bool]:
        """`run`'s one attempt: its outcome, and whether a process forked by the zygote ran."""
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
        names = (in_name, out_name, err_name)
        warm = warm and self._zygote == (tuple(argv), _env_key(env), cwd, purpose)
        if cs is not None:
            cs.set_memory(limits.memory_mb)
            # the zygote is one more process of the run set while a warm test runs
            cs.set_pids(limits.processes + (1 if warm else 0))
            oom_before = cs.oom_kills()
        payload = self._command_frame(argv, limits, env, cwd, set_index, names, cs is None)
        if not warm:
            self._zygote = None  # init ends it before any cold command
        self._send(payload + (b"W\0" if warm else b""))
        line = self._readline()
        if warm and line.startswith(b"zygote=0"):
            # nothing of the program ran: the zygote is gone, the test runs cold
            self._zygote = None
            self.zygote_note = parse_kv(line).get("why", "unknown")
            warm = False
            if cs is not None:
                cs.set_pids(limits.processes)
            self._send(payload)
            line = self._readline()
        if not line:
            raise SandboxError(f"sandbox died: {self._launcher_stderr()}")
        info = parse_kv(line)
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
        cg_cpu, ns_cpu = float(info["cgcpu"]), float(info.get("nscpu", -1))
        cpu = cg_cpu if cg_cpu >= 0 else ns_cpu if ns_cpu >= 0 else float(info["cpu"])
        # reported peak: resident set of the largest process (what judges report); the cgroup's
        # own peak also counts the page cache of the captured output, so it only decides MLE.
        # Rootless, the sampled total of all processes counts when it is larger.
        peak_mb = max(int(info["maxrss_kb"]), int(info.get("nsmem_kb", -1))) / 1024.0
        killed = info.get("killed", "none")
        mem_exceeded = killed == "mem"
        if cs is not None:
            mem_exceeded = cs.oom_kills() > oom_before
        elif peak_mb >= limits.memory_mb:
            mem_exceeded = True
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
        ), warm

    @property
    def warm_ready(self) -> bool:
        """True while a zygote started by `start_warm` serves `run(warm=True)`."""
        return self._zygote is not None

    def start_warm(
        self,
        argv: Sequence[str],
        *,
        executable: str,
        limits: Limits,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        purpose: str | None = None,
    ) -> bool:
        """Start a zygote for `argv`: `executable` (a pre-initialising build of the interpreter
        argv names, e.g. the CPython zygote, given as the sandbox sees it) runs with exactly this
        argv, env, cwd and limits, in the cgroup set of `purpose`; `run(warm=True)` of the same
        command is then forked from it. False (and `zygote_note` says why) when none started:
        every run is then cold. Needs the namespaces and a cgroup CPU counter."""
        if self._closed or self._proc is None:
            raise SandboxError("sandbox is closed")
        self._zygote = None
        purpose = purpose or self._purposes[0]
        cs = self._cgroups.get(purpose)
        if cs is None or not self.isolation.get("pid_namespace"):
            self.zygote_note = "no pid namespace or cgroup here"
            return False
        self._seq += 1
        names = (f"zin-{self._seq}", f"zout-{self._seq}", f"zerr-{self._seq}")
        (self._io / names[0]).write_bytes(b"")
        cs.set_memory(limits.memory_mb)
        cs.set_pids(limits.processes + 1)
        frame = self._command_frame(
            argv, limits, env, cwd, self._purposes.index(purpose), names, False
        )
        self._send(frame + b"Z\0X" + executable.encode() + b"\0")
        line = self._readline()
        if not line:
            raise SandboxError(f"sandbox died: {self._launcher_stderr()}")
        info = parse_kv(line)
        if info.get("zygote") != "1":
            err = (self._io / names[2]).read_bytes()[-300:].decode(errors="replace").strip()
            self.zygote_note = " ".join(filter(None, [info.get("why", "unknown"), err]))
            return False
        self._zygote = (tuple(argv), _env_key(env), cwd, purpose)
        self.zygote_note = ""
        return True

    def _command_frame(
        self,
        argv: Sequence[str],
        limits: Limits,
        env: Mapping[str, str] | None,
        cwd: str | None,
        set_index: int,
        names: tuple[str, str, str],
        sampled: bool,
    ) -> bytes:
        """One command's frame for the launcher (see the contract in launcher.c)."""
        in_name, out_name, err_name = names
        cap = limits.output_bytes
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
            f"Lnproc={limits.processes if limits.nproc_rlimit is None else limits.nproc_rlimit}".encode(),
            f"Lstack={limits.stack_bytes}".encode(),
        ]
        if sampled:
            # per process (a backstop), and over the whole pid namespace (sampled by init)
            headroom = max(limits.as_headroom_mb, SAMPLED_AS_HEADROOM_MB)
            toks.append(f"Las={(limits.memory_mb + headroom) * MB}".encode())
            toks.append(f"Lnsmem={limits.memory_mb * MB}".encode())
        return b"\0".join(toks) + b"\0"

    def _send(self, payload: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(str(len(payload)).encode() + b"\n" + payload)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise SandboxError(f"sandbox died: {exc}; {self._launcher_stderr()}") from exc

    def spawn(
        self,
        argv: Sequence[str],
        *,
        limits: Limits,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        purpose: str | None = None,
    ) -> SpawnedProcess:
        """Start one long-lived command that the engine talks to through its stdin and stdout
        (FIFOs in the io dir), e.g. a compile server. It goes through the launcher exactly as a
        `run()` command does (same namespaces, uid, seccomp, rlimits, cgroup and its CPU, wall
        and memory limits, now for its whole life); the sandbox runs nothing else until it ends.
        """
        if self._closed or self._proc is None:
            raise SandboxError("sandbox is closed")
        purpose = purpose or self._purposes[0]
        set_index = self._purposes.index(purpose)
        cs = self._cgroups.get(purpose)
        self._seq += 1
        names = (f"in-{self._seq}", f"out-{self._seq}", f"err-{self._seq}")
        for name in names[:2]:
            os.mkfifo(self._io / name, 0o600)
        # our own spare ends keep both FIFOs open until the command has its ends (a reader
        # must see no EOF, a writer no EPIPE, before init opened them); dropped on first reply
        spare_in = os.open(self._io / names[0], os.O_RDWR | os.O_CLOEXEC)
        to_proc = os.open(self._io / names[0], os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        from_proc = os.open(self._io / names[1], os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        spare_out = os.open(self._io / names[1], os.O_WRONLY | os.O_CLOEXEC)
        if cs is not None:
            cs.set_memory(limits.memory_mb)
            cs.set_pids(limits.processes)
        self._zygote = None  # init ends it before any cold command
        try:
            self._send(self._command_frame(argv, limits, env, cwd, set_index, names, cs is None))
        except SandboxError:
            for fd in (spare_in, to_proc, from_proc, spare_out):
                os.close(fd)
            raise
        assert self._proc.stdout is not None
        return SpawnedProcess(self, to_proc, from_proc, [spare_in, spare_out])

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
                _wait_exit(proc, timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, _signal.SIGKILL)
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        for cs in self._cgroups.values():
            cs.destroy()
        failed = remove_tree(self._tmp)
        if failed:
            log.warning("sandbox %s: could not remove %s", self._tmp, "; ".join(failed[:5]))

    def kill(self) -> None:
        """SIGKILL the launcher and its init (which takes every process of the sandbox with it),
        e.g. for a wedged spawned command; `close` then cleans up."""
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self._proc.pid, _signal.SIGKILL)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


class SpawnedProcess:
    """The engine's end of a command started by `Sandbox.spawn`: framed reads and writes with
    deadlines. `ended` turns true when the launcher reported the command's end (`exit_info`)."""

    def __init__(self, box: Sandbox, to_proc: int, from_proc: int, spares: list[int]) -> None:
        self._box = box
        self._to = to_proc
        self._from = from_proc
        self._spares = spares
        self._buf = bytearray()
        self.exit_info: dict[str, str] | None = None

    @property
    def ended(self) -> bool:
        return self.exit_info is not None

    def _wait(self, fd: int, write: bool, deadline: float) -> None:
        """Block until `fd` is ready; TimeoutError past `deadline`. Once the command ended (its
        launcher reply arrived) a write raises EOFError, a read drains what it left."""
        proc = self._box._proc
        assert proc is not None and proc.stdout is not None
        ctl = proc.stdout.fileno()
        while True:
            if self.ended:
                if write:
                    raise EOFError("the command ended")
                self.release_spares()  # nothing can write any more: EOF after the data
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer in time")
            watch = [] if self.ended else [ctl]
            rlist = watch if write else [*watch, fd]
            r, w, _ = select.select(rlist, [fd] if write else [], [], left)
            if fd in r or w:
                return
            if ctl in r:
                line = self._box._readline()
                self.exit_info = parse_kv(line) if line else {"error": "sandbox died"}

    def write(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            self._wait(self._to, True, deadline)
            try:
                n = os.write(self._to, view)
            except BlockingIOError:
                continue
            except BrokenPipeError as exc:
                raise EOFError("the command closed its stdin") from exc
            view = view[n:]

    def read(self, size: int, deadline: float) -> bytes:
        """Exactly `size` bytes from the command's stdout."""
        while len(self._buf) < size:
            self._wait(self._from, False, deadline)
            try:
                chunk = os.read(self._from, max(65536, size - len(self._buf)))
            except BlockingIOError:
                continue
            if not chunk:
                raise EOFError("the command closed its stdout")
            self._buf += chunk
            self.release_spares()
        data = bytes(self._buf[:size])
        del self._buf[:size]
        return data

    def release_spares(self) -> None:
        """Drop the engine's spare FIFO ends (once the command answered, it holds its own):
        from then on the command's death shows as EOF / EPIPE."""
        for fd in self._spares:
            os.close(fd)
        self._spares = []

    def wait(self, deadline: float) -> bool:
        """Close the command's stdin (it sees EOF) and wait for its end; False past `deadline`
        (the caller then kills the sandbox)."""
        self.close()
        proc = self._box._proc
        if self.ended or proc is None or proc.stdout is None:
            return True
        left = deadline - time.monotonic()
        if left > 0 and select.select([proc.stdout.fileno()], [], [], left)[0]:
            line = self._box._readline()
            self.exit_info = parse_kv(line) if line else {"error": "sandbox died"}
        return self.ended

    def close(self) -> None:
        """Close the engine's ends of both FIFOs."""
        self.release_spares()
        for fd in (self._to, self._from):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._to = self._from = -1


def _env_key(env: Mapping[str, str] | None) -> tuple[tuple[str, str], ...] | None:
    return None if env is None else tuple(env.items())


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


def _chown_or_fail(path: Path, uid: int) -> None:
    failed = chown_tree(path, uid, uid)
    if failed:
        raise SandboxError(f"cannot hand {path} to the sandbox uid: {'; '.join(failed[:5])}")


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    stdin: bytes = b"",
    limits: Limits,
    readonly_paths: Sequence[Path] = (),
    writable_paths: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    isolation: str = "required",
) -> CommandOutcome:
    """Run one command in a fresh sandbox (all layers above) and return what it did.

    The command sees the toolchain directories and `readonly_paths` read-only, `cwd` and
    `writable_paths` read-write (at their host paths), a private /tmp, and nothing else of the
    host. As root, `cwd` and `writable_paths` are handed to the sandbox uid for the run and given
    back to their previous owner afterwards, so pass scratch copies. `env` replaces the default
    allow-listed environment (PATH is added when missing). `isolation` is the policy (see
    `Sandbox`). Raises SandboxError only when the sandbox cannot be built (IsolationRefused when
    the policy forbids running here); everything the command does is reported in the outcome.

    Example::

        from pathlib import Path
        from ..limits import Limits
        from .command import run_command

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
        isolation=isolation,
    )
    try:
        if os.geteuid() == 0:
            for p in writable:
                st = p.stat()
                owners.append((p, st.st_uid, st.st_gid))
                _chown_or_fail(p, sandbox.uid)
        return sandbox.run(argv, limits=limits, stdin=stdin, env=envmap, cwd=str(cwd))
    finally:
        sandbox.close()
        for p, uid, gid in owners:
            failed = chown_tree(p, uid, gid)
            if failed:
                log.warning("%s: ownership not given back: %s", p, "; ".join(failed[:5]))


def probe_isolation(policy: str = "best-effort") -> dict[str, Any]:
    """Which layers a sandbox gets on this machine under `policy` (for `doctor` and tests); a
    refusal or failure comes back as an isolation dict with the reason in its notes."""
    try:
        with Sandbox(purposes=("run",), isolation=policy) as sb:
            out = sb.run(["/bin/true"], limits=Limits(cpu_s=2, wall_s=10))
            iso = out.isolation
            if out.error or out.exit_code != 0:
                iso["notes"].append(f"probe command failed: {out.error or out.exit_code}")
            return iso
    except SandboxError as exc:
        iso = _isolation_template(policy)
        iso["notes"].append(str(exc))
        return iso


__all__ = [
    "ISOLATION_POLICIES",
    "LAYERS",
    "REQUIRED_LAYERS",
    "SHARED_ROOT",
    "IsolationRefused",
    "Limits",
    "Sandbox",
    "SandboxError",
    "SharedFolder",
    "check_policy",
    "inactive_layers",
    "is_system_path",
    "probe_isolation",
    "run_command",
]
