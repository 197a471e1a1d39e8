"""The container backend for real: warm containers of the judge image (`make image`), verdicts
equal to the local backend's, hardening in effect, nothing of one program visible to the next,
and a dead container is an INFRA_ERROR. Skipped without a Docker daemon and the image unless
REQUIRE_TOOLCHAINS=1 (CI builds an image of C and Python, see the Makefile)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase, Verdict
from code_eval_taskpack.execution.backends.container.backend import ContainerBackend, JobCgroups
from tests.backend_params import BACKENDS
from tests.conftest import require
from tests.engine_programs import HELLO, LUCKY, describe, wrong

LANGS = ("C", "Python")  # the languages of the CI image


@pytest.fixture(scope="module")
def backend() -> Iterator[ContainerBackend]:
    with BACKENDS["container"]() as b:
        assert isinstance(b, ContainerBackend)
        yield b


def _job(lang: str, src: str, tests: list[tuple[str, str]], **kw: object) -> Job:
    return Job(
        language=lang,
        source_code=src,
        tests=tuple(TestCase(i, (o,)) for i, o in tests),
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("lang", LANGS)
def test_verdicts_equal_local(backend: ContainerBackend, lang: str) -> None:
    jobs = [
        _job(lang, HELLO[lang], [("", "Hello, World!")]),
        _job(lang, LUCKY[lang], [("2\n", "6"), ("55\n", "72057594037927934")]),
        _job(lang, wrong(lang), [("2\n", "6")]),
    ]
    local = Engine(workers=1, backend="local")
    cont = Engine(workers=1, backend=backend, cache=None)
    for job in jobs:
        r_local, r_cont = local.judge(job), cont.judge(job)
        assert r_cont.verdict == r_local.verdict, describe(r_cont)
        assert r_cont.verdict is not Verdict.INFRA_ERROR, describe(r_cont)
        assert r_cont.isolation["container"]["image"] == backend.image_id()
        assert r_cont.isolation["backend"] == "container"


def test_hostile_programs(backend: ContainerBackend) -> None:
    eng = Engine(workers=1, backend=backend, cache=None)
    leave = "open('/tmp/left', 'w').write('x'); open('left', 'w').write('x'); print('ok')\n"
    look = (
        "import os\nprint(os.path.exists('/tmp/left') or os.path.exists('left')"
        " or os.path.exists('/work/left'))\n"
    )
    assert eng.judge(_job("Python", leave, [("", "ok")])).verdict is Verdict.PASSED
    r = eng.judge(_job("Python", look, [("", "False")]))
    assert r.verdict is Verdict.PASSED, describe(r)
    net = "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=2)\n"
    assert eng.judge(_job("Python", net, [("", "")])).verdict is Verdict.RUNTIME_ERROR
    fork = "import os\nwhile True:\n    os.fork()\n"
    r = eng.judge(_job("Python", fork, [("", "")], time_limit_s=1.0))
    # which limit a fork bomb meets first is a race (locally too): never a pass nor an escape
    bounded = (Verdict.RUNTIME_ERROR, Verdict.TIME_LIMIT_EXCEEDED, Verdict.MEMORY_LIMIT_EXCEEDED)
    assert r.verdict in bounded, describe(r)
    hog = "x = bytearray(512 * 1024 * 1024)\nprint(len(x))\n"
    r = eng.judge(_job("Python", hog, [("", "")], memory_limit_mb=64))
    # rootless inside, the sampled total decides, as the cgroup's OOM kill does locally as root
    assert r.verdict is Verdict.MEMORY_LIMIT_EXCEEDED, describe(r)


def test_hardening_in_effect(backend: ContainerBackend) -> None:
    c = backend._acquire()
    try:
        ids = subprocess.run(
            [
                backend.docker,
                "ps",
                "-q",
                "--no-trunc",
                "--filter",
                f"ancestor={backend.image_id()}",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert ids
        info = json.loads(subprocess.check_output([backend.docker, "inspect", ids[0]]))[0]
        host = info["HostConfig"]
        assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
        assert host["CapDrop"] == ["ALL"] and host["Privileged"] is False
        assert "no-new-privileges" in host["SecurityOpt"]
        # the options are one job slot's ceilings; the container has `jobs` slots
        assert host["PidsLimit"] == backend.pids * backend.jobs
        assert host["Memory"] == backend.memory_mb * backend.jobs << 20
        assert info["Config"]["User"] == "10001:10001"
    finally:
        backend._idle.put(c)


def test_dead_container_is_infra_error(backend: ContainerBackend) -> None:
    c = backend._acquire()
    c.kill()
    backend._idle.put(c)  # a dead one is skipped: the next job gets a fresh container
    eng = Engine(workers=2, backend=backend, cache=None)
    assert eng.judge(_job("Python", HELLO["Python"], [("", "Hello, World!")])).passed
    # the container dies while judging two jobs at once: both are INFRA_ERRORs, none a verdict
    slow = "import time\ntime.sleep(8)\nprint({k})\n"
    jobs = [_job("Python", slow.format(k=k), [("", str(k))], time_limit_s=10.0) for k in (1, 2)]
    live = [c for c in backend._all if c.alive()]
    assert len(live) == 1
    killer = threading.Timer(2.0, subprocess.run, ([backend.docker, "kill", live[0].name],))
    killer.start()
    try:
        results = eng.judge_many(jobs)
    finally:
        killer.join()
    for r in results:
        assert r.verdict is Verdict.INFRA_ERROR and "died" in r.detail, describe(r)
    assert eng.judge(_job("Python", HELLO["Python"], [("", "Hello, World!")])).passed


def test_one_container_judges_an_engines_workers(backend: ContainerBackend) -> None:
    """Two workers' jobs go to one container (its agent's warm compilers, headers and compile
    cache serve both; one job a container started one per worker), and its agent heard the
    batch's announcement first."""
    if backend.jobs < 2:
        pytest.skip("one CPU: one job slot a container")
    eng = Engine(workers=2, backend=backend, cache=None)
    slow = "import time\ntime.sleep(1.5)\nprint({k})\n"
    compiled = _job("C", HELLO["C"], [("", "Hello, World!")])
    jobs = [_job("Python", slow.format(k=k), [("", str(k))]) for k in range(4)] + [compiled]
    results = eng.judge_many(jobs)
    assert all(r.passed for r in results), [describe(r) for r in results if not r.passed]
    live = [c for c in backend._all if c.alive()]
    assert len(live) == 1 and live[0].jobs == backend.jobs
    assert live[0].announced == backend._announcement[0] > 0
    assert backend._announcement[1] == [{"language": "C", "source_code": HELLO["C"]}]


def test_outer_layers_are_probed_inside_and_required(backend: ContainerBackend) -> None:
    """The agent reports every outer layer in effect; a container started without one (here a
    writable root) is refused under `required` and runs, saying so, under `best-effort`."""
    from code_eval_taskpack.execution.isolation import CONTAINER_LAYERS

    eng = Engine(workers=1, backend=backend, cache=None)
    r = eng.judge(_job("Python", HELLO["Python"], [("", "Hello, World!")]))
    assert r.passed and all(r.isolation[name] is True for name in CONTAINER_LAYERS), r.isolation
    assert backend.host_refusal("required") == ""

    class WritableRoot(ContainerBackend):
        def argv(self, name: str, cgroups: JobCgroups | None = None) -> list[str]:
            return [a for a in super().argv(name, cgroups) if a != "--read-only"]

    weak = WritableRoot()
    try:
        refusal = weak.host_refusal("required")
        assert "container_read_only_root" in refusal, refusal
        r = Engine(workers=1, backend=weak, cache=None).judge(
            _job("Python", HELLO["Python"], [("", "Hello, World!")])
        )
        assert r.verdict is Verdict.INFRA_ERROR and "container_read_only_root" in r.detail
        r = Engine(workers=1, backend=weak, cache=None, isolation="best-effort").judge(
            _job("Python", HELLO["Python"], [("", "Hello, World!")])
        )
        assert r.passed and r.isolation["container_read_only_root"] is False
    finally:
        weak.close()


# -- the container's memory ceiling is never the program's fault ------------------------------

#: N MB of files in the work dir's tmpfs (not counted by the sandbox's sampled memory; charged
#: to the program's own cgroup, or without per-job cgroups to the container), then M MB of the
#: program's own memory
CEILING_HOG = """\
FILES_MB, HEAP_MB = {files}, {heap}
chunk = b"x" * (16 << 20)
for i in range(FILES_MB // 16):
    with open(f"fill-{{i}}", "wb") as f:
        f.write(chunk)
heap = bytearray(HEAP_MB << 20)
for i in range(0, len(heap), 4096):
    heap[i] = 1
print("done")
"""


@pytest.fixture(scope="module")
def small(backend: ContainerBackend) -> Iterator[ContainerBackend]:
    """The judge image in containers with a 384 MB ceiling."""
    b = ContainerBackend(
        image=backend.image, docker=backend.docker, memory_mb="384", jobs_per_container="1"
    )
    try:
        yield b
    finally:
        b.close()


def test_a_job_above_the_ceiling_is_refused(small: ContainerBackend, tmp_path: Path) -> None:
    """Allowed 1024 MB, touching 500 MB, in a 384 MB container: the container's OOM killer
    would SIGKILL it (a RUNTIME_ERROR the program did not earn); refused, naming the limits."""
    eng = Engine(workers=1, backend=small, cache=tmp_path / "cache")
    job = _job(
        "Python 3", CEILING_HOG.format(files=0, heap=500), [("", "done")], memory_limit_mb=1024
    )
    for _ in range(2):
        r = eng.judge(job)
        assert r.verdict is Verdict.INFRA_ERROR, describe(r)
        assert "1024 MB" in r.detail and "384 MB" in r.detail, r.detail
        assert not r.cached and not r.tests
    within = _job(
        "Python 3", CEILING_HOG.format(files=0, heap=64), [("", "done")], memory_limit_mb=200
    )
    assert eng.judge(within).passed


def job_cgroups_here(frontend: str = "docker") -> bool:
    """Whether the backend makes per-job cgroups on this host (root on cgroup v1); in CI, as
    root on such a host, it must."""
    why = JobCgroups.unavailable(frontend)
    require(not why or not (os.geteuid() == 0 and Path("/sys/fs/cgroup/memory").is_dir()), why)
    return not why


def assert_work_dir_files_are_the_programs_memory(small: ContainerBackend, tmp_path: Path) -> None:
    """Within the job's heap (100 MB of its 200 MB) but 320 MB of files in the work dir's
    tmpfs of a 384 MB container, which the sandbox's sampling does not see: the kernel charges
    them to the program's own cgroup (MEMORY_LIMIT_EXCEEDED). Without per-job cgroups the
    container's OOM killer fires first, and that is the engine's failure (INFRA_ERROR, never
    cached)."""
    eng = Engine(workers=1, backend=small, cache=tmp_path / "cache")
    src = CEILING_HOG.format(files=320, heap=100)
    job = _job("Python 3", src, [("", "done")], memory_limit_mb=200)
    r = eng.judge(job)
    if job_cgroups_here(small.frontend):
        assert r.verdict is Verdict.MEMORY_LIMIT_EXCEEDED, describe(r)
        assert r.isolation["container_job_cgroups"] is True
        assert r.isolation["memory_enforcement"] == "cgroup"
        return
    assert r.verdict is Verdict.INFRA_ERROR, describe(r)
    assert "memory ceiling (384 MB)" in r.detail and "OOM" in r.detail, r.detail
    assert not eng.judge(job).cached


def test_files_in_the_work_dir_are_the_programs_memory(
    small: ContainerBackend, tmp_path: Path
) -> None:
    assert_work_dir_files_are_the_programs_memory(small, tmp_path)


#: memory no process maps: memfd files, 60 MB each (a file is at most 64 MiB), 900 MB in all,
#: well past the container's ceiling, written once the honest neighbour runs
MEMFD_HOG = """import os, time
time.sleep(0.5)
chunk = b"x" * (1 << 20)
fds = []
for i in range(15):
    fd = os.memfd_create(f"m{i}")
    for _ in range(60):
        os.write(fd, chunk)
    fds.append(fd)
print("kept", len(fds))
"""
#: the honest program judged beside it: it is still running when the hog fills its memory
NEIGHBOUR = "import time\ntime.sleep(2.5)\nprint(sum(range(1000)))\n"


@pytest.fixture(scope="module")
def pair_slots(backend: ContainerBackend) -> Iterator[ContainerBackend]:
    """The judge image in containers of two job slots, 384 MB each."""
    b = ContainerBackend(
        image=backend.image, docker=backend.docker, memory_mb="384", jobs_per_container="2"
    )
    try:
        yield b
    finally:
        b.close()


def assert_unsampled_memory_ends_its_program_only(
    pair_slots: ContainerBackend, tmp_path: Path
) -> None:
    """One container judges two programs at once: a hog of unmapped memfd memory (900 MB, past
    its 200 MB limit and the container's 768 MB ceiling) and an honest program. The hog gets
    MEMORY_LIMIT_EXCEEDED, its neighbour its own verdict."""
    require(job_cgroups_here(pair_slots.frontend), "no per-job cgroups here")
    eng = Engine(workers=2, backend=pair_slots, cache=tmp_path / "cache")
    hog = _job("Python 3", MEMFD_HOG, [("", "kept 15")], memory_limit_mb=200, time_limit_s=5)
    honest = _job("Python 3", NEIGHBOUR, [("", "499500")], memory_limit_mb=200, time_limit_s=5)
    results = eng.judge_many([hog, honest])
    assert results[0].verdict is Verdict.MEMORY_LIMIT_EXCEEDED, describe(results[0])
    assert results[1].verdict is Verdict.PASSED, describe(results[1])
    assert all(r.isolation["container_job_cgroups"] is True for r in results)


def test_memory_the_sandbox_does_not_sample_ends_its_program_only(
    pair_slots: ContainerBackend, tmp_path: Path
) -> None:
    assert_unsampled_memory_ends_its_program_only(pair_slots, tmp_path)
