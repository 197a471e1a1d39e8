"""The judge agent inside a container: JSON lines in, JSON lines out, up to `--jobs` jobs at once.

Each request `{"id": N, "job": {...}, "policy": "required"}` is judged with the local backend
(the same runner and sandbox as on a host) and answered `{"id": N, "result": {...}}`, in the
order the jobs finish; a request it cannot read is answered `{"id": N, "error": "..."}`. The
container (see backends/container/backend.py) is the outer boundary.
A job during which the container's own OOM killer fired (its memory ceiling, not the job's
limit; with jobs judged at once, whichever job's program caused it) is answered INFRA_ERROR,
whatever the program's tests said.

The agent lives as long as its container, so the local backend's speed-ups serve every job it
judges, as in one engine with `--jobs` workers on a host: its warm compilers (one server per
language for all its jobs), its compile cache (in memory, bounded
well inside the agent's memory reserve) and its precompiled headers, which are built only for an
include list a batch announces enough programs of: `{"expect": [{"language": ..., "source_code":
...}, ...]}` announces the programs of a batch (answered `{"expected": N}` before any later
request is read). A job request may
carry the driver's speed-up switches (`"engine": {...}`, `config.SPEEDUPS` only, never
isolation), validated as a judge server validates them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ...caches.compiles import CompileCache
from ...config import EngineConfig
from ...sandbox import cgroups
from ...types import Job, Result, Verdict, job_from_dict
from .. import get_backend

#: the compiled programs kept in memory for the agent's life (far below `AGENT_RESERVE_MB` of
#: backends/container/backend.py, the container memory no job may use)
COMPILED_MAX_BYTES = 32 * 1024 * 1024
_compiled: CompileCache | None = None


def compiled() -> CompileCache:
    """The agent's compile cache (made at the first job)."""
    global _compiled
    if _compiled is None:
        _compiled = CompileCache(None, max_bytes=COMPILED_MAX_BYTES)
    return _compiled


def handle(req: Any) -> dict[str, Any]:
    """The answer to one request (a job or a batch announcement), without its id."""
    try:
        if isinstance(req, dict) and "expect" in req:
            return expect(req["expect"])
        job = job_from_dict(req["job"])
        policy = str(req.get("policy", "required"))
        switches = EngineConfig.from_env().with_speedups(req.get("engine"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return {"error": f"bad request: {exc}"}
    local = get_backend("local")
    runtime = local.resolve(job.language)
    if not runtime.available:
        return {"error": f"runtime {runtime.name} unavailable in the image: {runtime.reason}"}
    before = container_oom_kills()
    result = local.judge(job, runtime, compiled=compiled(), policy=policy, config=switches)
    after = container_oom_kills()
    if before is None or after is None:
        result.isolation.setdefault("notes", []).append(
            "the container's OOM kill counter is unreadable: a kill by its memory ceiling "
            "cannot be told from the program's"
        )
    elif after > before:
        result = ceiling_result(job, result)
    return {"result": result.to_dict()}


def expect(programs: Any) -> dict[str, Any]:
    """Announce a batch's programs to the local backend (what is worth preparing once for many
    of them); a language the registry does not know is a bad request."""
    if not isinstance(programs, list):
        return {"error": "bad request: expect must be a list of programs"}
    local = get_backend("local")
    announced = []
    try:
        for p in programs:
            job = Job(language=str(p["language"]), source_code=str(p["source_code"]), tests=())
            announced.append((job, local.resolve(job.language)))
    except (ValueError, KeyError, TypeError) as exc:
        return {"error": f"bad request: expect: {exc!r}"}
    local.expect(announced)
    return {"expected": len(announced)}


def ceiling_result(job: Job, judged: Result) -> Result:
    """What a job gets when the container's own OOM killer fired while it ran: the container's
    memory ceiling, not the job's limit, stopped something (the program, its compiler, the
    sandbox), so the verdict is the engine's failure (never cached), not the program's. A
    container without a ceiling of its own (rootless podman on cgroup v1) counts the kills of
    the cgroup it runs in: any of them is the engine's failure too."""
    ceiling = memory_ceiling_mb()
    where = (
        f"the container's memory ceiling ({ceiling} MB)"
        if ceiling
        else "the memory limit of the cgroup the container runs in (it has no ceiling of its own)"
    )
    return Result(
        verdict=Verdict.INFRA_ERROR,
        runtime=judged.runtime,
        compile=judged.compile,
        isolation=judged.isolation,
        id=job.id,
        detail=(
            f"{where} was reached while judging "
            f"(its OOM killer fired; the job's limit is {job.memory_limit_mb} MB): give the "
            "container more memory (--memory) or judge the job elsewhere"
        ),
    )


def _status() -> dict[str, str]:
    out = {}
    with open("/proc/self/status", encoding="ascii", errors="replace") as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def _cgroup_file(names: tuple[str, ...]) -> str | None:
    """The text of the first readable of the container's cgroup files `names`."""
    for name in names:
        try:
            return (Path("/sys/fs/cgroup") / name).read_text()
        except OSError:
            continue
    return None


def container_oom_kills() -> int | None:
    """How many processes the container's memory ceiling has OOM-killed so far (v2
    memory.events, v1 memory.oom_control), None when unreadable. Inside, the sandbox has no
    cgroup of its own (rootless: it samples its memory), so every such kill is the ceiling's."""
    text = _cgroup_file(("memory.events", "memory/memory.oom_control"))
    for line in (text or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def memory_ceiling_mb() -> int:
    """The container's memory ceiling in MB (0: none, or unreadable)."""
    text = (_cgroup_file(("memory.max", "memory/memory.limit_in_bytes")) or "").strip()
    return int(text) // (1 << 20) if text.isdigit() and int(text) < 1 << 60 else 0


def _cgroup_ceiling(names: tuple[str, ...]) -> bool:
    """True when the first readable of the cgroup files `names` holds a finite limit (v2 says
    `max`, v1 a number near 2**63 when there is none)."""
    for name in names:
        try:
            text = (Path("/sys/fs/cgroup") / name).read_text().strip()
        except OSError:
            continue
        return text.isdigit() and int(text) < 1 << 60
    return False


def container_layers() -> dict[str, bool]:
    """The container's outer layers (`isolation.CONTAINER_LAYERS`) as seen from inside: the
    backend trusts this probe, not the flags it passed to `docker run`."""
    st = _status()

    def caps(key: str) -> int:
        try:
            return int(st.get(key, "f"), 16)
        except ValueError:
            return -1

    try:
        interfaces = set(os.listdir("/sys/class/net"))
    except OSError:
        interfaces = {"?"}
    return {
        "container_no_network": interfaces <= {"lo"},
        "container_read_only_root": bool(os.statvfs("/").f_flag & os.ST_RDONLY),
        "container_no_capabilities": caps("CapEff") == 0 and caps("CapBnd") == 0,
        "container_no_new_privileges": st.get("NoNewPrivs") == "1",
        "container_seccomp": st.get("Seccomp") == "2",
        "container_unprivileged_user": os.getuid() != 0 and os.geteuid() != 0,
        "container_pids_ceiling": _cgroup_ceiling(("pids.max", "pids/pids.max")),
        "container_memory_ceiling": _cgroup_ceiling(("memory.max", "memory/memory.limit_in_bytes")),
    }


class Replies:
    """The agent's stdout, written one whole answer line at a time from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def send(self, request_id: Any, answer: dict[str, Any]) -> None:
        line = json.dumps({"id": request_id, **answer})
        with self._lock:
            print(line, flush=True)


def answer(request: Any) -> dict[str, Any]:
    """`handle` with an engine failure answered as an error (the caller's INFRA_ERROR)."""
    try:
        return handle(request)
    except Exception as exc:
        return {"error": f"agent: {type(exc).__name__}: {exc}"}


def judge_and_reply(replies: Replies, request_id: Any, request: Any) -> None:
    replies.send(request_id, answer(request))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="the judge agent of a container")
    ap.add_argument("--jobs", type=int, default=1, help="jobs judged at once")
    ap.add_argument(
        "--cgroups",
        default="",
        help="cgroup v1 folders (memory, pids, cpuacct) delegated to the agent: each program's "
        "sandbox gets its own cgroups there, the kernel counting all its memory",
    )
    args = ap.parse_args(argv)
    jobs = max(1, args.jobs)
    # the work area is the agent's alone (podman's chowned tmpfs comes up 0755)
    with contextlib.suppress(OSError):
        os.chmod(os.getcwd(), 0o700)
    if args.cgroups:  # promised by the backend: without them nothing is judged
        why = cgroups.delegate_v1(Path(args.cgroups))
        if why:
            print(json.dumps({"ready": False, "error": f"per-job cgroups unusable: {why}"}))
            return 1
    greeting = {"ready": True, "layers": container_layers(), "memory_mb": memory_ceiling_mb()}
    print(json.dumps(greeting), flush=True)
    replies = Replies()
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="agent") as pool:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except ValueError as exc:
                replies.send(None, {"error": f"bad request: {exc}"})
                continue
            request_id = request.get("id") if isinstance(request, dict) else None
            if isinstance(request, dict) and "expect" in request:
                replies.send(request_id, answer(request))  # before any later job starts
                continue
            pool.submit(judge_and_reply, replies, request_id, request)
    return 0


if __name__ == "__main__":
    sys.exit(main())
