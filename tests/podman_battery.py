"""The programs the podman tests judge, runnable as a script so the rootless half runs as the
non-root user (`python -m tests.podman_battery [--no-preflight] [--policy best-effort]
[--cache]` prints one JSON object).

Each case is a real program with the verdict it must get: the reference programs of two
clusters (their local verdicts), a CPU spin, a memory hog, a thread flood past the process
limit, a fork bomb, a network call and a write to the read-only root. Each hostile program
would pass if its limit were not enforced (its expected output is what it prints unhindered)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution import Engine, Job, TestCase, Verdict
from code_eval_taskpack.execution.backends.container.backend import ContainerBackend
from code_eval_taskpack.execution.isolation import CONTAINER_LAYERS
from tests.engine_programs import HELLO, LUCKY, describe, wrong

LANGS = ("C", "Python")  # the clusters of the CI image
#: a fork bomb meets whichever limit first (a race, locally too): never a pass nor an escape
BOUNDED = ("RUNTIME_ERROR", "TIME_LIMIT_EXCEEDED", "MEMORY_LIMIT_EXCEEDED")


def _job(lang: str, src: str, tests: list[tuple[str, str]], **kw: Any) -> Job:
    return Job(
        language=lang,
        source_code=src,
        tests=tuple(TestCase(i, (o,)) for i, o in tests),
        **kw,
    )


def reference_jobs() -> dict[str, Job]:
    """Programs whose verdict must equal the local backend's."""
    out = {}
    for lang in LANGS:
        out[f"hello-{lang}"] = _job(lang, HELLO[lang], [("", "Hello, World!")])
        out[f"lucky-{lang}"] = _job(
            lang, LUCKY[lang], [("2\n", "6"), ("55\n", "72057594037927934")]
        )
        out[f"wrong-{lang}"] = _job(lang, wrong(lang), [("2\n", "6")])
    return out


#: CPU time past a 0.5 s limit (then prints what the test expects)
SPIN = "import time\nend = time.process_time() + 30\nwhile time.process_time() < end:\n    pass\nprint('done')\n"
#: threads alive at once, above the process limit (`Limits.processes`, 128) of a test
FLOOD = 300
#: (small stacks: 300 of them fit the address-space backstop, so the process limit is what stops
#: them; the count reached goes to stderr)
THREADS = f"""import sys, threading
threading.stack_size(256 << 10)
stop = threading.Event()
threads = []
try:
    for _ in range({FLOOD}):
        threads.append(threading.Thread(target=stop.wait))
        threads[-1].start()
finally:
    stop.set()  # a failed start ends the program, not waits for the rest
    print("started", len(threads) - 1, file=sys.stderr)
print(len(threads))
"""


def threads_started(case: dict[str, Any]) -> int:
    """How many threads the thread flood had running when one more failed to start (-1 when
    its stderr does not say)."""
    head = str(case.get("stderr_head", ""))
    words = head.split()
    return int(words[1]) if head.startswith("started ") and words[1].isdigit() else -1


#: hostile programs -> the verdicts they may get
LIMIT_CASES: dict[str, tuple[Job, tuple[str, ...]]] = {
    "cpu-spin": (
        _job("Python", SPIN, [("", "done")], time_limit_s=0.5),
        ("TIME_LIMIT_EXCEEDED",),
    ),
    "memory-hog": (
        _job(
            "Python",
            "x = bytearray(512 << 20)\nprint(len(x))\n",
            [("", str(512 << 20))],
            memory_limit_mb=64,
        ),
        ("MEMORY_LIMIT_EXCEEDED",),
    ),
    "thread-flood": (
        _job("Python", THREADS, [("", str(FLOOD))]),
        ("RUNTIME_ERROR",),
    ),
    "fork-bomb": (
        _job("Python", "import os\nwhile True:\n    os.fork()\n", [("", "")], time_limit_s=1.0),
        BOUNDED,
    ),
    "network": (
        _job(
            "Python",
            "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)\nprint('up')\n",
            [("", "up")],
        ),
        ("RUNTIME_ERROR",),
    ),
    "write-root": (
        _job(
            "Python",
            "open('/opt/code-eval/planted', 'w').write('x')\nprint('planted')\n",
            [("", "planted")],
        ),
        ("RUNTIME_ERROR",),
    ),
}


def run(
    backend: ContainerBackend, policy: str = "required", cache: Path | None = None
) -> dict[str, Any]:
    """Every case judged by `backend` under `policy`: name -> verdict, detail, whether every
    outer layer was in effect, what the result lists as missing and how the sandbox inside
    counted; plus the backend's refusal ("" when it judges). With a `cache`, then the first
    program again under "required" on that cache (`then_required`)."""
    eng = Engine(workers=1, backend=backend, cache=cache, isolation=policy)
    out: dict[str, Any] = {"refusal": backend.host_refusal(policy), "cases": {}}
    jobs = {**reference_jobs(), **{k: job for k, (job, _) in LIMIT_CASES.items()}}
    for name, job in jobs.items():
        r = eng.judge(job)
        iso = r.isolation
        out["cases"][name] = {
            "verdict": r.verdict.value,
            "describe": describe(r),
            "layers": all(iso.get(layer) is True for layer in CONTAINER_LAYERS),
            "frontend": iso.get("container", {}).get("frontend"),
            "missing": iso.get("missing"),
            "active": sorted(k for k, v in iso.items() if v is True),
            "enforcement": [iso.get("cpu_enforcement"), iso.get("memory_enforcement")],
            "unenforced": iso.get("unenforced"),
            "notes": iso.get("notes"),
            "stderr_head": r.tests[0].stderr[:200] if r.tests else "",
        }
        if out["refusal"] and r.verdict is Verdict.INFRA_ERROR:
            break  # refused: one job shows how, the rest would say the same
    if cache is not None:
        again = Engine(workers=1, backend=backend, cache=cache, isolation="required")
        r = again.judge(next(iter(jobs.values())))
        out["then_required"] = {"verdict": r.verdict.value, "cached": r.cached, "detail": r.detail}
    return out


class _NoPreflight(ContainerBackend):
    """The podman front-end with the backend's own check skipped: only the agent's probe inside
    stands between a container without ceilings and a verdict."""

    def check_frontend(self, policy: str = "required") -> None:
        return None


def main(argv: list[str]) -> int:
    cls = _NoPreflight if "--no-preflight" in argv else ContainerBackend
    policy = argv[argv.index("--policy") + 1] if "--policy" in argv else "required"
    backend = cls(frontend="podman")
    try:
        with tempfile.TemporaryDirectory(prefix="code-eval-battery-") as tmp:
            cache = Path(tmp) / "cache" if "--cache" in argv else None
            print(json.dumps(run(backend, policy, cache)))
    finally:
        backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
