"""The container backend: warm containers of the judge image, each running `execution.agent`
(the local runner and sandbox) as an unprivileged user and judging up to `jobs_per_container`
jobs at once (default: this host's CPUs, so one engine's workers share one agent, as the workers
of a local engine share one process). The front-end is `docker` (a daemon) or `podman`
(daemonless, rootless for users without root); the OCI runtime (runc, runsc, crun) is a
separate setting.

Each container: no network, no new privileges, read-only root, all capabilities dropped, a tmpfs
work area, pids and memory ceilings (the options are one job slot's: a container of N slots gets
N times each), uid 10001, the seccomp profile of `seccomp_profile.py`
(user namespaces allowed, so the launcher builds its rootless sandbox inside, with the
whole-sandbox CPU and memory accounting), this package bind-mounted read-only. A container that
dies or answers garbage is removed and every job it was judging is an INFRA_ERROR (never a
verdict).

The agent keeps the local backend's speed-ups for its container's life (warm compilers, compile
cache, precompiled headers): a batch's programs that compile are announced to every container
before its first job of the batch (`expect`), and each job carries the driver's speed-up switches
when they differ from the defaults, as a judge server receives them.

Run as root on a cgroup v1 host, each program judged in a container has its own cgroups there
(`JobCgroups`): the kernel counts all of its memory, unmapped memfd and tmpfs files included, up
to its own limit, and the container's other jobs never notice. The container's memory ceiling is
never the program's fault: a job whose memory limit (or its compile's), plus the agent's
reserve, does not fit under it is refused (INFRA_ERROR naming the limits, nothing run), and a job
during which the container's own OOM killer fired anyway (without per-job cgroups: e.g. files in
the work dir's tmpfs, which the sandbox's sampled memory does not count) is answered INFRA_ERROR
by the agent (with several jobs at once, every job judged while it fired: which program caused it
cannot be told). Neither is cached.

Rootless podman can only set the pids and memory ceilings where cgroup v2 delegates the `memory`
and `pids` controllers to the user (on cgroup v1 it ignores them with a warning). Without them,
under "required" the backend refuses to start a container (SandboxError naming what is missing;
the agent's probe inside would refuse it anyway); under "best-effort" it starts the containers
without the ceiling flags, the sandbox inside still enforces every per-test limit (see
`execution/README.md`, "Rootless podman without ceilings"), and every result lists
`container_memory_ceiling` and `container_pids_ceiling` in `isolation["missing"]` with the reason
in its notes.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import queue
import resource
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from ...config import EngineConfig, or_env
from ...inputs import DEFAULT_INPUT_LIMITS, InputLimits
from ...isolation import (
    CONTAINER_LAYERS,
    REQUIRED_LAYERS,
    SandboxError,
    check_policy,
    policy_refusal,
)
from ...languages.registry import Runtime
from ...limits import COMPILE_LIMITS, cpu_count
from ...types import Job, Result, Verdict, job_to_dict
from ..base import JobBackend, oversized_source, verdict_under_policy
from .seccomp_profile import write_profile

log = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).resolve().parents[2]
UID = 10001
#: the container memory a job may not use: the agent, its runner and the sandbox launcher
AGENT_RESERVE_MB = 128
#: front-end -> its default binary
FRONTENDS = {"docker": "/usr/bin/docker", "podman": "/usr/bin/podman"}
#: front-end -> the OCI runtimes it may be asked for
RUNTIMES = {"docker": ("runc", "runsc"), "podman": ("runc", "crun")}
#: the cgroup controllers the container's ceilings need
CEILING_CONTROLLERS = ("memory", "pids")
#: the outer layers those controllers give (`isolation.CONTAINER_LAYERS`)
CEILING_LAYERS = ("container_memory_ceiling", "container_pids_ceiling")
#: podman's own ceilings for the processes it starts (conmon, runc): never asked above them
PODMAN_NOFILE, PODMAN_NPROC = 1 << 20, 32768


#: the host's cgroup v1 hierarchies, and the folder of each below which every judge container
#: gets a folder of its own (`JobCgroups`)
CGROUP_V1 = Path("/sys/fs/cgroup")
JOB_CGROUP_ROOT = "code-eval-judge"
JOB_CGROUP_CONTROLLERS = ("memory", "pids", "cpuacct")
#: where a container sees the folders delegated to its agent (one per controller)
AGENT_CGROUPS = "/run/code-eval-cgroup"
#: the captures' folder inside a container with per-job cgroups (`ContainerBackend._capture_area`)
CAPTURE_DIR = "/run/code-eval-capture"


class JobCgroups:
    """A judge container's cgroups on a cgroup v1 host, made by the backend as root.

    `/code-eval-judge/<name>` of each controller holds the container's own cgroup (the
    front-end's `--cgroup-parent`) and `jobs`, a folder owned by the agent's uid and bound into
    the container at AGENT_CGROUPS/<controller>, where each program's sandbox makes its own
    cgroups (`cgroups.delegate_v1`), as on a host as root. The kernel then counts everything a
    program's processes are charged (unmapped memfd and tmpfs files, pipe buffers, page tables)
    in that program's memory cgroup, up to its own limit: MEMORY_LIMIT_EXCEEDED for it alone,
    where the container's OOM killer would end every job of the container. The folder's own
    memory and pids limits are the container's ceilings, so the container and every job stay
    within them together. (The sandbox's init cannot exempt itself from the OOM killer without
    a capability, nor can the container start with a negative OOM score under runc: a program
    whose memory no process maps and that leaves only small processes may get its init chosen,
    and its job is then an INFRA_ERROR, its own alone.)"""

    def __init__(self, name: str, memory_mb: int, pids: int) -> None:
        self.parent = f"/{JOB_CGROUP_ROOT}/{name}"
        self.name, self.memory_mb, self.pids = name, memory_mb, pids
        self.dirs = {c: CGROUP_V1 / c / JOB_CGROUP_ROOT / name for c in JOB_CGROUP_CONTROLLERS}

    @staticmethod
    def unavailable(frontend: str) -> str:
        """Why this host and user cannot have them ("" when they can)."""
        if os.geteuid() != 0:
            return "the backend does not run as root (only root makes cgroups on cgroup v1)"
        if not (CGROUP_V1 / "memory" / "memory.limit_in_bytes").exists():
            return "the host does not mount cgroup v1 (per-job cgroups are made on v1 only)"
        missing = [c for c in JOB_CGROUP_CONTROLLERS if not (CGROUP_V1 / c).is_dir()]
        return f"no cgroup v1 hierarchy of {', '.join(missing)}" if missing else ""

    def create(self) -> None:
        """Make the folders, their limits and the agent's `jobs` (SandboxError when any step
        fails: the container would otherwise run without what the backend promises)."""
        try:
            for ctrl, d in self.dirs.items():
                d.mkdir(parents=True, exist_ok=True)
                if ctrl == "memory":
                    limit = str(self.memory_mb * 1024 * 1024)
                    (d / "memory.limit_in_bytes").write_text(limit)
                    memsw = d / "memory.memsw.limit_in_bytes"
                    if memsw.exists():
                        memsw.write_text(limit)
                elif ctrl == "pids":
                    (d / "pids.max").write_text(str(self.pids))
                jobs = d / "jobs"
                jobs.mkdir(exist_ok=True)
                for f in (jobs, jobs / "cgroup.procs", jobs / "tasks"):
                    os.chown(f, UID, UID)
        except OSError as exc:
            self.remove()
            raise SandboxError(f"per-job cgroups could not be made: {exc}") from exc

    def args(self) -> list[str]:
        """The front-end's flags: the parent and the bound `jobs` folders."""
        binds = [
            a
            for ctrl, d in self.dirs.items()
            for a in ("-v", f"{d / 'jobs'}:{AGENT_CGROUPS}/{ctrl}:rw")
        ]
        return ["--cgroup-parent", self.parent, *binds]

    def remove(self) -> None:
        """Remove the folders once the container is gone (best effort: what is left, e.g.
        after the backend itself was killed, is logged here and holds no process)."""
        # the front-end makes the parent in every hierarchy, not only in those made here
        targets = list(self.dirs.values())
        with contextlib.suppress(OSError):
            others = [h / JOB_CGROUP_ROOT / self.name for h in CGROUP_V1.iterdir()]
            targets += [d for d in others if d not in targets]
        for d in targets:
            # the sandboxes' leftover cgroups and the front-end's own (podman's conmon, whose
            # process may take a moment to end after the container is removed) first
            for attempt in range(30):
                if not d.exists():
                    break
                for sub in sorted(d.rglob("*"), key=lambda q: len(q.parts), reverse=True):
                    if sub.is_dir():
                        with contextlib.suppress(OSError):
                            sub.rmdir()
                try:
                    d.rmdir()
                except OSError as exc:
                    if attempt == 29:
                        log.warning("judge container cgroup %s not removed: %s", d, exc)
                    time.sleep(0.1)


def _hardening(frontend: str) -> list[str]:
    """The front-end's spelling of what differs between the two CLIs."""
    if frontend == "docker":
        # Docker's masked /proc paths forbid the launcher's own /proc mount
        return ["--security-opt", "systempaths=unconfined"]
    return [
        "--security-opt", "unmask=ALL",  # the same for podman
        "--pull", "never",  # the image is local; a registry is never asked
        # the agent reads its ceilings at /sys/fs/cgroup: its own cgroup, whatever
        # containers.conf says
        "--cgroupns", "private",
        "--log-driver", "none",  # the agent's answers are not copied to a log file
        *_podman_ulimits(),
    ]  # fmt: skip


def _tmpfs(frontend: str, path: str, size_mb: int) -> str:
    """A tmpfs owned by the agent's user: docker passes uid/gid to the mount, podman (which
    refuses them) chowns it to the container's user (`U`)."""
    owner = f"uid={UID},gid={UID}" if frontend == "docker" else "U"
    return f"{path}:rw,exec,nosuid,size={size_mb}m,{owner},mode=0700"


def _podman_ulimits() -> list[str]:
    """Rootful podman asks runc for its default file and process limits (above this host's hard
    limits in a restricted host, so runc fails to start): ask for what podman itself runs with
    instead (the pids cgroup, not RLIMIT_NPROC, is the container's process ceiling)."""
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    nofile = PODMAN_NOFILE if nofile == resource.RLIM_INFINITY else min(nofile, PODMAN_NOFILE)
    nproc = PODMAN_NPROC if nproc == resource.RLIM_INFINITY else min(nproc, PODMAN_NPROC)
    return ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}"]


def podman_refusal(info: dict[str, Any]) -> str:
    """Why the podman described by `podman info` cannot enforce the containers' ceilings ("" when
    it can): rootful podman sets cgroups itself; rootless needs cgroup v2 with the `memory` and
    `pids` controllers delegated to the user (systemd: `Delegate=memory pids`)."""
    host = info.get("host")
    host = host if isinstance(host, dict) else {}
    security = host.get("security")
    # only rootful podman that says so is trusted with its cgroups; any other answer is rootless
    if isinstance(security, dict) and security.get("rootless") is False:
        return ""
    version = host.get("cgroupVersion")
    if version != "v2":
        return (
            f"rootless podman on cgroup {version or '?'} cannot enforce the judge containers' "
            "memory and pids ceilings (it ignores --memory and --pids-limit): boot with cgroup v2 "
            "(systemd.unified_cgroup_hierarchy=1) and delegate the memory and pids controllers "
            "to the user, use the docker front-end, or judge without them under --isolation "
            "best-effort (each result lists them as missing)"
        )
    have = host.get("cgroupControllers") or []
    missing = [c for c in CEILING_CONTROLLERS if c not in have]
    if missing:
        return (
            f"rootless podman: the cgroup controllers {', '.join(missing)} are not delegated to "
            f"this user (delegated: {', '.join(have) or 'none'}), so the judge containers' "
            "memory and pids ceilings cannot be enforced: delegate them (systemd user@.service "
            "`Delegate=memory pids`, or a cgroup the user owns with them enabled in its "
            "cgroup.subtree_control)"
        )
    return ""


#: front-end -> how `rm -f` removes a running container at once: podman otherwise sends SIGTERM
#: and waits 10 s, which the agent (the container's pid 1, no handler) ignores
RM_NOW = {"docker": ("rm", "-f"), "podman": ("rm", "-f", "--time", "0")}


class _Container:
    """One judge container: its agent judges up to `jobs` requests at once; a reader thread
    hands each answer line to the request of its id."""

    def __init__(
        self,
        argv: list[str],
        docker: str,
        name: str,
        frontend: str = "docker",
        jobs: int = 1,
        cgroups: JobCgroups | None = None,
    ) -> None:
        #: the container's name: kept after it stops (no --rm) so its end can be inspected
        self.docker, self.name, self.frontend, self.jobs = docker, name, frontend, jobs
        #: its per-job cgroups' folders on the host (removed with it)
        self.cgroups = cgroups
        self._removing, self._removed, self._ended = threading.Lock(), False, ""
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        hello = self._readline()
        try:
            greeting = json.loads(hello or b"{}")
        except ValueError:
            greeting = {}
        layers = greeting.get("layers") if isinstance(greeting, dict) else None
        ceiling = greeting.get("memory_mb") if isinstance(greeting, dict) else None
        #: the memory ceiling the agent found on its cgroup (MB; 0 when it found none)
        self.memory_mb = ceiling if isinstance(ceiling, int) and ceiling > 0 else 0
        #: the batch announcement (`ContainerBackend.expect`) this agent was told last
        self.announced = 0
        self.announcing = threading.Lock()
        #: the outer layers the agent found in effect (isolation.CONTAINER_LAYERS)
        self.layers: dict[str, bool] = {
            name: layers.get(name) is True if isinstance(layers, dict) else False
            for name in CONTAINER_LAYERS
        }
        if not isinstance(greeting, dict) or greeting.get("ready") is not True:
            err = (
                self.proc.stderr.read().decode(errors="replace")[-600:] if self.proc.stderr else ""
            )
            self.kill()
            raise SandboxError(f"judge container did not start: {err or hello!r}")
        self._lock = threading.Lock()
        self._write = threading.Lock()
        self._ids = itertools.count(1)
        #: request id -> where its answer goes (None: the container ended first)
        self._waiting: dict[int, queue.SimpleQueue[dict[str, Any] | None]] = {}
        #: why the container can answer nothing more ("" while it can), and whether it answered
        #: something it was not asked (then it is removed, not kept for inspection)
        self._ended, self._garbage = "", False
        threading.Thread(target=self._read_answers, name=f"{name}-answers", daemon=True).start()

    def _readline(self) -> bytes:
        out: IO[bytes] | None = self.proc.stdout
        return out.readline() if out else b""

    def _read_answers(self) -> None:
        """Deliver every answer line to its request, until the agent's output ends or holds
        anything but an answer to a request in flight."""
        why, garbage = "its output ended", False
        try:
            while line := self._readline():
                answer = json.loads(line)
                request_id = answer.get("id") if isinstance(answer, dict) else None
                with self._lock:
                    waiter = self._waiting.pop(request_id, None)  # type: ignore[arg-type]
                if waiter is None:
                    why, garbage = f"answered {line[:200]!r}", True
                    break
                waiter.put(answer)
        except (OSError, ValueError) as exc:
            why = f"{type(exc).__name__}: {exc}"
        with self._lock:
            self._ended, self._garbage = why, garbage
            waiting = list(self._waiting.values())
            self._waiting.clear()
        for waiter in waiting:
            waiter.put(None)
        self.stop()  # kept until the callers have read how it ended (oom_killed)

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """The agent's answer to `request` (from any thread); SandboxError when the container
        ends first or answers garbage."""
        assert self.proc.stdin is not None
        waiter: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        with self._lock:
            if not self._ended:
                request_id = next(self._ids)
                self._waiting[request_id] = waiter
        if self._ended:
            return self._died()
        try:
            with self._write:
                self.proc.stdin.write(json.dumps({"id": request_id, **request}).encode() + b"\n")
                self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            with self._lock:
                self._waiting.pop(request_id, None)
            self.stop()
            raise SandboxError(f"judge container died: {exc}") from exc
        answer = waiter.get()
        return answer if answer is not None else self._died()

    def _died(self) -> dict[str, Any]:
        if self._garbage:
            self.kill()
            raise SandboxError(f"judge container {self._ended}")
        self.stop()
        raise SandboxError(f"judge container died: {self._ended}")

    def alive(self) -> bool:
        return self.proc.poll() is None and not self._ended

    def oom_killed(self) -> bool:
        """Whether the container's own OOM killer ended it (the runtime's record of a stopped
        container; False when that cannot be read)."""
        try:
            proc = subprocess.run(
                [self.docker, "inspect", "-f", "{{.State.OOMKilled}}", self.name],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return False
        return proc.returncode == 0 and proc.stdout.strip() == "true"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def kill(self) -> None:
        """Stop the container and remove it (once, whichever of its slots asks)."""
        self.stop()
        with self._removing:
            if self._removed:
                return
            self._removed = True
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [self.docker, *RM_NOW[self.frontend], self.name],
                capture_output=True,
                timeout=60,
                check=False,
            )
        if self.cgroups is not None:
            self.cgroups.remove()


class ContainerBackend(JobBackend):
    """Programs judged by the agent in warm containers of the judge image."""

    name = "container"
    #: the local sandbox's layers (checked inside by the agent) plus the container's own
    required_layers = REQUIRED_LAYERS + CONTAINER_LAYERS

    def __init__(
        self,
        image: str = "code-eval-judge:latest",
        runtime: str = "runc",
        docker: str = "",
        memory_mb: str = "4096",
        pids: str = "512",
        work_mb: str = "1024",
        frontend: str = "docker",
        jobs_per_container: str = "",
    ) -> None:
        if frontend not in FRONTENDS:
            raise ValueError(f"container front-end must be docker or podman, not {frontend!r}")
        if runtime not in RUNTIMES[frontend]:
            raise ValueError(
                f"the {frontend} front-end's OCI runtime must be "
                f"{' or '.join(RUNTIMES[frontend])}, not {runtime!r}"
            )
        self.frontend, self.image, self.runtime = frontend, image, runtime
        #: the front-end's binary (`docker` or `podman`)
        self.docker = docker or FRONTENDS[frontend]
        #: why the front-end cannot enforce the ceilings ("" when it can; None: not asked yet)
        self._frontend_refusal: str | None = None
        #: the ceilings of one job slot (a container of `jobs` slots gets `jobs` times each)
        self.memory_mb, self.pids, self.work_mb = int(memory_mb), int(pids), int(work_mb)
        #: jobs one container judges at once (default: this host's CPUs, so that one engine's
        #: workers share one agent: its warm compilers, headers and compile cache)
        self.jobs = int(jobs_per_container) if jobs_per_container else cpu_count()
        if self.jobs < 1:
            raise ValueError(f"jobs_per_container must be at least 1, not {jobs_per_container!r}")
        #: one entry per free job slot (a container with two free slots is there twice)
        self._idle: queue.SimpleQueue[_Container] = queue.SimpleQueue()
        self._all: list[_Container] = []
        self._lock = threading.Lock()
        self._starting = threading.Lock()
        self._image_id = ""
        #: the latest batch announcement: its number (0: none yet) and the programs it names
        self._announcement: tuple[int, list[dict[str, str]]] = (0, [])
        self._profile_dir = tempfile.TemporaryDirectory(prefix="code-eval-seccomp-")

    def check_frontend(self, policy: str = "required") -> None:
        """SandboxError when the front-end cannot enforce every ceiling this backend sets
        (rootless podman without delegated cgroup controllers) and `policy` is "required":
        refused, never run weaker. Under "best-effort" the containers start without the
        ceilings (`uncapped`), and every result names them as missing."""
        if self.frontend != "podman":
            return
        if self._frontend_refusal is None:
            self._frontend_refusal = self._ask_podman()
        if self._frontend_refusal and check_policy(policy) == "required":
            raise SandboxError(self._frontend_refusal)

    @property
    def uncapped(self) -> str:
        """Why the containers this backend starts have no memory and pids ceilings ("" when
        they have them, or the front-end has not been asked yet)."""
        return self._frontend_refusal or ""

    def _ask_podman(self) -> str:
        """`podman_refusal` of this podman's `podman info` (asked once: a refusal stands for the
        backend's life; an unreadable answer is SandboxError and is asked again)."""
        try:
            proc = subprocess.run(
                [self.docker, "info", "--format", "json"],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            raise SandboxError(f"podman info: {exc}") from exc
        if proc.returncode != 0:
            raise SandboxError(f"podman info failed: {proc.stderr.strip()[-300:]}")
        try:
            info = json.loads(proc.stdout)
        except ValueError as exc:
            raise SandboxError(f"podman info answered {proc.stdout[:200]!r}") from exc
        return podman_refusal(info if isinstance(info, dict) else {})

    def image_id(self) -> str:
        """The image's content ID, `sha256:...` from either front-end (recorded in every
        result); SandboxError when absent."""
        if not self._image_id:
            proc = subprocess.run(
                [self.docker, "image", "inspect", "-f", "{{.Id}}", self.image],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if proc.returncode != 0:
                raise SandboxError(f"judge image {self.image}: {proc.stderr.strip()[-300:]}")
            found = proc.stdout.strip()
            # podman prints the bare digest, docker the algorithm too
            self._image_id = found if found.startswith("sha256:") else f"sha256:{found}"
        return self._image_id

    def clusters(self) -> frozenset[str] | None:
        """The language clusters the image holds (its `code-eval.langs` label, written by
        `container/build-image.sh`), None for all of them."""
        proc = subprocess.run(
            [self.docker, "image", "inspect", "-f", '{{index .Config.Labels "code-eval.langs"}}',
             self.image],
            capture_output=True,
            text=True,
            timeout=60,
        )  # fmt: skip
        label = proc.stdout.strip() if proc.returncode == 0 else ""
        if label in ("", "all", "<no value>"):
            return None
        return frozenset(c.strip() for c in label.split(",") if c.strip())

    def job_cgroups(self, name: str) -> JobCgroups | None:
        """The per-job cgroups of container `name` (made), or None where this host and user
        cannot have them (cgroup v2, rootless: the jobs then share the container's ceilings,
        as `isolation["notes"]` says)."""
        if self.uncapped or JobCgroups.unavailable(self.frontend):
            return None
        made = JobCgroups(name, self.memory_mb * self.jobs, self.pids * self.jobs)
        made.create()
        return made

    def argv(self, name: str, cgroups: JobCgroups | None = None) -> list[str]:
        profile = write_profile(Path(self._profile_dir.name) / "seccomp.json")
        agent_cgroups = ["--cgroups", AGENT_CGROUPS] if cgroups is not None else []
        return [
            self.docker, "run", "-i", "--name", name, "--runtime", self.runtime,
            "--network", "none", "--cap-drop", "ALL", "--read-only",
            "--security-opt", "no-new-privileges",
            "--security-opt", f"seccomp={profile}",
            *_hardening(self.frontend),
            "--user", f"{UID}:{UID}", *self._ceilings(),
            *(cgroups.args() if cgroups is not None else []),
            "--tmpfs", _tmpfs(self.frontend, "/work", self.work_mb * self.jobs),
            "--tmpfs", _tmpfs(self.frontend, "/tmp", 64),
            "-v", f"{PACKAGE_DIR}:/opt/code-eval/code_eval_taskpack/execution:ro",
            # the sandboxes' captured output (up to 64 MiB a stream) lives in TMPDIR, not the
            # small /tmp, so an output flood is the local OUTPUT_LIMIT_EXCEEDED
            *self._capture_area(name, cgroups),
            "-e", "HOME=/work", "-e", "CODE_EVAL_CACHE=/work/.cache",
            "-e", "PYTHONPATH=/opt/code-eval", "-w", "/work",
            self.image_id().removeprefix("sha256:") if self.frontend == "podman"
            else self.image_id(),
            "python3", "-m", "code_eval_taskpack.execution.backends.container.agent", "--jobs", str(self.jobs),
            *agent_cgroups,
        ]  # fmt: skip

    def _capture_area(self, name: str, cgroups: JobCgroups | None) -> list[str]:
        """Where the container's sandboxes capture output (TMPDIR). With per-job cgroups the
        program writing its output is charged for the pages it fills: on a tmpfs they cannot be
        reclaimed, and a 64 MiB flood would end as MEMORY_LIMIT_EXCEEDED under a small limit
        where the local backend (captures on disk) says OUTPUT_LIMIT_EXCEEDED. So there the
        captures go to a folder of this host's disk, the container's own, bind-mounted; without
        per-job cgroups they stay in the work area's tmpfs (charged to the container's ceiling)."""
        if cgroups is None:
            return ["-e", "TMPDIR=/work"]
        folder = Path(self._profile_dir.name) / f"capture-{name}"
        folder.mkdir(mode=0o700)
        os.chown(folder, UID, UID)
        return ["-v", f"{folder}:{CAPTURE_DIR}", "-e", f"TMPDIR={CAPTURE_DIR}"]

    def _ceilings(self) -> list[str]:
        """The container's pids and memory ceilings, or none where the front-end cannot set
        them, `jobs` slots' worth (best-effort only: podman would ignore the flags with a warning, and the command
        line should not claim what is not in effect; the agent's probe reports them absent)."""
        if self.uncapped:
            return []
        return [
            "--pids-limit", str(self.pids * self.jobs),
            "--memory", f"{self.memory_mb * self.jobs}m",
            "--memory-swap", f"{self.memory_mb * self.jobs}m",
        ]  # fmt: skip

    def _free_slot(self) -> _Container | None:
        """A free slot of a live container, or None."""
        try:
            while True:
                c = self._idle.get_nowait()
                if c.alive():
                    return c
                c.kill()  # stopped while idle: removed (containers are not started with --rm)
        except queue.Empty:
            return None

    def _acquire(self, policy: str = "required") -> _Container:
        c = self._free_slot()
        if c is not None:
            return c
        with self._starting:  # one container starts at a time: its slots serve the waiting
            c = self._free_slot()
            if c is not None:
                return c
            self.check_frontend(policy)
            name = f"code-eval-judge-{uuid.uuid4().hex[:16]}"
            cgroups = self.job_cgroups(name)
            try:
                c = _Container(
                    self.argv(name, cgroups), self.docker, name, self.frontend, self.jobs, cgroups
                )
            except BaseException:
                if cgroups is not None:
                    cgroups.remove()
                raise
            with self._lock:
                self._all.append(c)
            for _ in range(self.jobs - 1):  # its other slots
                self._idle.put(c)
            return c

    def expect(
        self, items: Sequence[tuple[Job, Runtime]], config: EngineConfig | None = None
    ) -> None:
        """Remember a batch's compiled programs; each container is told them before it judges
        its first job of the batch (the agent's local backend decides what to prepare, under
        its own switches: `config` goes with each job)."""
        programs = [
            {"language": job.language, "source_code": job.source_code}
            for job, runtime in items
            if runtime.compile is not None
        ]
        with self._lock:
            self._announcement = (self._announcement[0] + 1, programs)

    def _announce(self, c: _Container) -> None:
        """Tell container `c` the latest batch announcement if it has not heard it yet."""
        with self._lock:
            number, programs = self._announcement
        with c.announcing:
            if c.announced >= number:
                return
            if programs:
                answer = c.ask({"expect": programs})
                if answer.get("expected") != len(programs):
                    c.kill()
                    raise SandboxError(f"judge container: expect answered {str(answer)[:300]}")
            c.announced = number

    def host_refusal(self, policy: str) -> str:
        super().host_refusal(policy)
        try:
            self.check_frontend(policy)
            self.image_id()
            c = self._acquire(policy)
        except (SandboxError, OSError, subprocess.SubprocessError) as exc:
            return f"container backend unavailable: {exc}"
        self._idle.put(c)
        return self._refusal(policy, c)

    def _refusal(self, policy: str, c: _Container) -> str:
        """Why `policy` forbids judging in container `c` ("" when it may): under "required"
        every outer layer must be in effect (the agent checks the sandbox's own inside)."""
        return policy_refusal(check_policy(policy), CONTAINER_LAYERS, c.layers, self.name)

    def judge(
        self,
        job: Job,
        runtime: Runtime,
        *,
        compiled: Any = None,
        policy: str = "required",
        input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
        config: EngineConfig | None = None,
    ) -> Result:
        oversized = oversized_source(job, runtime, input_limits)
        if oversized is not None:  # the caller's bound: the agent knows only the default ones
            return oversized
        c = self._acquire(policy)
        refusal = self._refusal(policy, c)
        if refusal:
            self._idle.put(c)
            return Result(
                verdict=Verdict.INFRA_ERROR,
                runtime=runtime.info(),
                detail=f"sandbox could not be built: {refusal}",
                isolation={"backend": self.name, **c.layers},
            )
        too_big = self._above_ceiling(job, runtime, c)
        if too_big:
            self._idle.put(c)
            return Result(
                verdict=Verdict.INFRA_ERROR,
                runtime=runtime.info(),
                id=job.id,
                detail=too_big,
                isolation={"backend": self.name, **c.layers},
            )
        request: dict[str, Any] = {"job": job_to_dict(job), "policy": policy}
        switches = or_env(config).speedups()
        if switches != EngineConfig().speedups():  # only what differs from the agent's defaults
            request["engine"] = switches
        try:
            self._announce(c)
            answer = c.ask(request)
        except SandboxError:
            # the agent itself may be what the container's OOM killer chose
            if not c.oom_killed():
                raise
            return Result(
                verdict=Verdict.INFRA_ERROR,
                runtime=runtime.info(),
                id=job.id,
                detail=(
                    f"the container's memory ceiling ({self.memory_mb * c.jobs} MB) was reached "
                    "while judging (its OOM killer ended the judge; the job's limit is "
                    f"{job.memory_limit_mb} MB): give the container more memory or judge the "
                    "job elsewhere"
                ),
                isolation={"backend": self.name, **c.layers},
            )
        finally:
            if not c.alive():
                c.kill()  # removes the stopped container
        if c.alive():
            self._idle.put(c)
        if "result" not in answer:
            raise SandboxError(f"judge container: {answer.get('error', answer)}")
        result = Result.from_dict(answer["result"])
        result.isolation["backend"] = self.name
        result.isolation["container"] = {
            "image": self.image_id(),
            "runtime": self.runtime,
            "frontend": self.frontend,
        }
        self._record_outer_layers(result, c)
        where = f"judge container {self.image}"
        return verdict_under_policy(result, job, policy, self.required_layers, input_limits, where)

    def _record_outer_layers(self, result: Result, c: _Container) -> None:
        """The container's outer layers into `result.isolation`, each one not in effect added
        to its `missing` list (beside the sandbox's own), and why the ceilings are absent when
        the front-end could not set them."""
        iso = result.isolation
        iso.update(c.layers)
        iso["container_job_cgroups"] = c.cgroups is not None
        if c.cgroups is None:
            iso["notes"] = [
                *(iso.get("notes") or []),
                "no per-job cgroups in the container "
                f"({JobCgroups.unavailable(self.frontend) or self.uncapped}): its jobs share its "
                "memory ceiling, and a job's memory the sandbox does not sample can end them all",
            ]
        absent = [name for name in CONTAINER_LAYERS if not c.layers[name]]
        missing = iso.get("missing")
        iso["missing"] = [*(missing if isinstance(missing, list) else []), *absent]
        if self.uncapped and any(n in absent for n in CEILING_LAYERS):
            notes = iso.get("notes")
            iso["notes"] = [
                *(notes if isinstance(notes, list) else []),
                f"no container ceilings: {self.uncapped}; the per-test limits are the inner "
                "sandbox's alone",
            ]

    def _above_ceiling(self, job: Job, runtime: Runtime, c: _Container) -> str:
        """Why `job` cannot be judged within container `c`'s memory ceiling ("" when it can):
        its memory limit (or its compile's) and what the agent itself needs must fit, else the
        container's OOM killer, not the job's limit, would decide (a SIGKILL that would read
        as the program's RUNTIME_ERROR). The ceiling is a slot's share of the limit the agent
        found on its cgroup (uncapped: an enclosing one's, if any)."""
        found = c.memory_mb // c.jobs
        if self.uncapped:
            ceiling = found
        else:
            ceiling = min(m for m in (self.memory_mb, found) if m > 0) if self.memory_mb else 0
        compile_mb = 0
        if runtime.compile is not None:
            compile_mb = runtime.compile_memory_mb or COMPILE_LIMITS.memory_mb
        need = max(job.memory_limit_mb, compile_mb)
        if not ceiling or need + AGENT_RESERVE_MB <= ceiling:
            return ""
        return (
            f"the job needs {need} MB (memory limit {job.memory_limit_mb} MB"
            f"{f', compile {compile_mb} MB' if compile_mb else ''}) plus {AGENT_RESERVE_MB} MB "
            f"for the judge, above a container job slot's memory ceiling of {ceiling} MB: start the "
            "backend with a larger memory_mb or judge it elsewhere"
        )

    def container_names(self) -> list[str]:
        """The names of the live judge containers (to read the runtime's records of them)."""
        with self._lock:
            return [c.name for c in self._all if c.alive()]

    def identity(self) -> str:
        base = f"container:{self.image_id()[:19]}:{self.runtime}"
        return base if self.frontend == "docker" else f"{base}:{self.frontend}"

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "image": self.image_id(),
            "runtime": self.runtime,
            "frontend": self.frontend,
        }

    def close(self) -> None:
        """Stop every warm container."""
        with self._lock:
            for c in self._all:
                c.kill()
            self._all.clear()
