"""The container backend: warm Docker containers of the judge image, one per worker thread, each
running `execution.agent` (the local runner and sandbox) as an unprivileged user.

Each container: no network, no new privileges, read-only root, all capabilities dropped, a tmpfs
work area, pids and memory ceilings, uid 10001, the seccomp profile of `seccomp_profile.py`
(user namespaces allowed, so the launcher builds its rootless sandbox inside, with the
whole-sandbox CPU and memory accounting), this package bind-mounted read-only. A container that
dies or answers garbage is removed and its job is an INFRA_ERROR (never a verdict).

The container's memory ceiling is never the program's fault: a job whose memory limit (or its
compile's), plus the agent's reserve, does not fit under it is refused (INFRA_ERROR naming the
limits, nothing run), and a job during which the container's own OOM killer fired anyway (e.g.
files in the work dir's tmpfs, which the sandbox's sampled memory does not count) is answered
INFRA_ERROR by the agent. Neither is cached.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path
from typing import IO, Any

from ..inputs import DEFAULT_INPUT_LIMITS, InputLimits
from ..isolation import CONTAINER_LAYERS, REQUIRED_LAYERS, check_policy, policy_refusal
from ..languages import Runtime
from ..limits import COMPILE_LIMITS
from ..sandbox import SandboxError
from ..types import Job, Result, Verdict, job_to_dict
from .base import JobBackend, verdict_under_policy
from .seccomp_profile import write_profile

PACKAGE_DIR = Path(__file__).resolve().parent.parent
UID = 10001
#: the container memory a job may not use: the agent, its runner and the sandbox launcher
AGENT_RESERVE_MB = 128


class _Container:
    def __init__(self, argv: list[str], docker: str, name: str) -> None:
        #: the container's name: kept after it stops (no --rm) so its end can be inspected
        self.docker, self.name = docker, name
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

    def _readline(self) -> bytes:
        out: IO[bytes] | None = self.proc.stdout
        return out.readline() if out else b""

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
            line = self._readline()
            answer = json.loads(line)
        except (OSError, ValueError) as exc:
            self.stop()  # kept until the caller has read how it ended (oom_killed)
            raise SandboxError(f"judge container died: {exc}") from exc
        if not isinstance(answer, dict):
            self.kill()
            raise SandboxError(f"judge container answered {line[:200]!r}")
        return answer

    def alive(self) -> bool:
        return self.proc.poll() is None

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
        """Stop the container and remove it."""
        self.stop()
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                [self.docker, "rm", "-f", self.name], capture_output=True, timeout=60, check=False
            )


class ContainerBackend(JobBackend):
    """Programs judged by the agent in warm containers of the judge image."""

    name = "container"
    #: the local sandbox's layers (checked inside by the agent) plus the container's own
    required_layers = REQUIRED_LAYERS + CONTAINER_LAYERS

    def __init__(
        self,
        image: str = "code-eval-judge:latest",
        runtime: str = "runc",
        docker: str = "/usr/bin/docker",
        memory_mb: str = "4096",
        pids: str = "512",
        work_mb: str = "1024",
    ) -> None:
        if runtime not in ("runc", "runsc"):
            raise ValueError(f"container runtime must be runc or runsc, not {runtime!r}")
        self.image, self.runtime, self.docker = image, runtime, docker
        self.memory_mb, self.pids, self.work_mb = int(memory_mb), int(pids), int(work_mb)
        self._idle: queue.SimpleQueue[_Container] = queue.SimpleQueue()
        self._all: list[_Container] = []
        self._lock = threading.Lock()
        self._image_id = ""
        self._profile_dir = tempfile.TemporaryDirectory(prefix="code-eval-seccomp-")

    def image_id(self) -> str:
        """The image's content ID (recorded in every result); SandboxError when absent."""
        if not self._image_id:
            proc = subprocess.run(
                [self.docker, "image", "inspect", "-f", "{{.Id}}", self.image],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if proc.returncode != 0:
                raise SandboxError(f"judge image {self.image}: {proc.stderr.strip()[-300:]}")
            self._image_id = proc.stdout.strip()
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

    def argv(self, name: str) -> list[str]:
        profile = write_profile(Path(self._profile_dir.name) / "seccomp.json")
        return [
            self.docker, "run", "-i", "--name", name, "--runtime", self.runtime,
            "--network", "none", "--cap-drop", "ALL", "--read-only",
            "--security-opt", "no-new-privileges",
            "--security-opt", f"seccomp={profile}",
            # Docker's masked /proc paths forbid the launcher's own /proc mount
            "--security-opt", "systempaths=unconfined",
            "--user", f"{UID}:{UID}", "--pids-limit", str(self.pids),
            "--memory", f"{self.memory_mb}m", "--memory-swap", f"{self.memory_mb}m",
            "--tmpfs", f"/work:rw,exec,nosuid,size={self.work_mb}m,uid={UID},gid={UID},mode=0700",
            "--tmpfs", f"/tmp:rw,exec,nosuid,size=64m,uid={UID},gid={UID},mode=0700",
            "-v", f"{PACKAGE_DIR}:/opt/code-eval/code_eval_taskpack/execution:ro",
            # the sandboxes' captured output (up to 64 MiB a stream) lives in TMPDIR: the work
            # area, not the small /tmp, so an output flood is the local OUTPUT_LIMIT_EXCEEDED
            "-e", "HOME=/work", "-e", "CODE_EVAL_CACHE=/work/.cache", "-e", "TMPDIR=/work",
            "-e", "PYTHONPATH=/opt/code-eval", "-w", "/work",
            self.image_id(), "python3", "-m", "code_eval_taskpack.execution.agent",
        ]  # fmt: skip

    def _acquire(self) -> _Container:
        try:
            while True:
                c = self._idle.get_nowait()
                if c.alive():
                    return c
                c.kill()  # stopped while idle: removed (containers are not started with --rm)
        except queue.Empty:
            pass
        name = f"code-eval-judge-{uuid.uuid4().hex[:16]}"
        c = _Container(self.argv(name), self.docker, name)
        with self._lock:
            self._all.append(c)
        return c

    def host_refusal(self, policy: str) -> str:
        super().host_refusal(policy)
        try:
            self.image_id()
            c = self._acquire()
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
    ) -> Result:

        c = self._acquire()
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
        try:
            answer = c.ask({"job": job_to_dict(job), "policy": policy})
        except SandboxError:
            # the agent itself may be what the container's OOM killer chose
            if not c.oom_killed():
                raise
            return Result(
                verdict=Verdict.INFRA_ERROR,
                runtime=runtime.info(),
                id=job.id,
                detail=(
                    f"the container's memory ceiling ({self.memory_mb} MB) was reached while "
                    f"judging (its OOM killer ended the judge; the job's limit is "
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
        result.isolation["container"] = {"image": self.image_id(), "runtime": self.runtime}
        result.isolation.update(c.layers)
        where = f"judge container {self.image}"
        return verdict_under_policy(result, job, policy, self.required_layers, input_limits, where)

    def _above_ceiling(self, job: Job, runtime: Runtime, c: _Container) -> str:
        """Why `job` cannot be judged within container `c`'s memory ceiling ("" when it can):
        its memory limit (or its compile's) and what the agent itself needs must fit, else the
        container's OOM killer, not the job's limit, would decide (a SIGKILL that would read
        as the program's RUNTIME_ERROR)."""
        ceiling = min(m for m in (self.memory_mb, c.memory_mb) if m > 0) if self.memory_mb else 0
        compile_mb = 0
        if runtime.compile is not None:
            compile_mb = runtime.compile_memory_mb or COMPILE_LIMITS.memory_mb
        need = max(job.memory_limit_mb, compile_mb)
        if not ceiling or need + AGENT_RESERVE_MB <= ceiling:
            return ""
        return (
            f"the job needs {need} MB (memory limit {job.memory_limit_mb} MB"
            f"{f', compile {compile_mb} MB' if compile_mb else ''}) plus {AGENT_RESERVE_MB} MB "
            f"for the judge, above the container's memory ceiling of {ceiling} MB: start the "
            "backend with a larger memory_mb or judge it elsewhere"
        )

    def identity(self) -> str:
        return f"container:{self.image_id()[:19]}:{self.runtime}"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "image": self.image_id(), "runtime": self.runtime}

    def close(self) -> None:
        """Stop every warm container."""
        with self._lock:
            for c in self._all:
                c.kill()
            self._all.clear()
