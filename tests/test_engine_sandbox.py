"""The generic sandboxed command API (`run_command`), the Sandbox and the Engine's plumbing."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, Result, TestCase, Verdict
from code_eval_taskpack.execution.caches.results import ResultCache
from code_eval_taskpack.execution.isolation import LAYERS, SandboxError
from code_eval_taskpack.execution.limits import Limits
from code_eval_taskpack.execution.sandbox.command import Sandbox, run_command
from tests.conftest import require, require_binary
from tests.engine_programs import HELLO, LUCKY, check_isolation

PY = "/usr/bin/python3"


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    d = tmp_path / "repo"
    d.mkdir()
    (d / "data.txt").write_text("42\n")
    return d


def test_run_command_reads_and_writes_its_cwd(scratch: Path, tmp_path: Path) -> None:
    require_binary("python3")
    ro = tmp_path / "ro"
    ro.mkdir()
    (ro / "lib.txt").write_text("library")
    code = (
        "import os, sys\n"
        "print(open('data.txt').read().strip(), open(sys.argv[1]).read())\n"
        "open('result.txt', 'w').write('done')\n"
        "try:\n    open(sys.argv[1], 'w')\nexcept OSError:\n    print('ro-denied')\n"
        "print(os.getcwd())\n"
    )
    before = scratch.stat()
    out = run_command(
        [PY, "-c", code, str(ro / "lib.txt")],
        cwd=scratch,
        limits=Limits(cpu_s=10, memory_mb=256),
        readonly_paths=[ro],
    )
    assert out.ok, out
    lines = out.stdout.decode().splitlines()
    assert lines == ["42 library", "ro-denied", str(scratch.resolve())]
    assert (scratch / "result.txt").read_text() == "done"
    assert (ro / "lib.txt").read_text() == "library"
    # ownership is given back to the caller
    assert scratch.stat().st_uid == before.st_uid
    assert (scratch / "result.txt").stat().st_uid == before.st_uid
    assert set(out.isolation) >= set(LAYERS)
    check_isolation(out.isolation)


def test_run_command_stdin_env_and_exit_code(scratch: Path) -> None:
    require_binary("python3")
    code = "import os, sys\nprint(sys.stdin.read().upper(), os.environ.get('FOO'), os.environ.get('HOME'))\nsys.exit(7)"
    out = run_command(
        [PY, "-c", code],
        cwd=scratch,
        stdin=b"hello",
        limits=Limits(cpu_s=10),
        env={"FOO": "bar", "HOME": "/nowhere"},
    )
    assert out.exit_code == 7 and out.signal is None and not out.ok
    assert out.stdout.decode().split() == ["HELLO", "bar", "/nowhere"]


def test_run_command_limits(scratch: Path) -> None:
    require_binary("python3")
    spin = run_command([PY, "-c", "while True: pass"], cwd=scratch, limits=Limits(cpu_s=0.3))
    assert spin.timed_out and spin.timeout_kind == "cpu" and spin.cpu_s >= 0.3
    sleeper = run_command(
        [PY, "-c", "import time; time.sleep(100)"], cwd=scratch, limits=Limits(cpu_s=1, wall_s=0.5)
    )
    assert sleeper.timed_out and sleeper.timeout_kind == "wall"
    flood = run_command(
        [PY, "-c", "import sys\nwhile True: sys.stdout.write('y' * 65536)"],
        cwd=scratch,
        limits=Limits(cpu_s=5, output_bytes=100_000),
    )
    assert flood.output_exceeded and len(flood.stdout) == 100_000
    balloon = run_command(
        [PY, "-c", "x = bytearray(512 * 2**20)"], cwd=scratch, limits=Limits(memory_mb=64)
    )
    iso = balloon.isolation
    if iso.get("cgroup"):
        assert balloon.memory_exceeded and balloon.signal == "SIGKILL"
    else:
        require(False, "no cgroup here: memory is only limited by RLIMIT_AS")


def test_run_command_missing_binary_is_an_error_not_a_crash(scratch: Path) -> None:
    out = run_command(["/no/such/binary"], cwd=scratch, limits=Limits())
    assert out.error and "exec" in out.error and not out.ok


def test_sandbox_reuses_one_environment_per_program() -> None:
    require_binary("python3")
    with Sandbox(files={"a.py": b"import os\nprint(os.getpid())\n"}) as sb:
        pids = set()
        for _ in range(3):
            out = sb.run([PY, "a.py"], limits=Limits(cpu_s=5))
            assert out.ok, out
            pids.add(out.stdout.strip())
        # a fresh process per command (pid differs) in the same pid namespace, where the
        # launcher is pid 1 and the first program gets a small pid
        assert len(pids) == 3
        if sb.isolation["pid_namespace"]:
            assert all(int(p) < 100 for p in pids)
        # files written by one command are seen by the next: same work dir
        sb.run([PY, "-c", "open('keep', 'w').write('x')"], limits=Limits(cpu_s=5))
        out = sb.run([PY, "-c", "print(open('keep').read())"], limits=Limits(cpu_s=5))
        assert out.stdout.strip() == b"x"
    with pytest.raises(SandboxError):
        sb.run(["/bin/true"], limits=Limits())


def test_sandbox_file_names_are_plain() -> None:
    with pytest.raises(ValueError):
        Sandbox(files={"../evil": b""})


# -- engine plumbing --------------------------------------------------------------------------


def _lucky_job(n: int, ident: str, source: str | None = None) -> Job:
    return Job("C", source or LUCKY["C"], (TestCase(f"{n}\n", (str(2 ** (n + 1) - 2),)),), id=ident)


def test_judge_many_order_dedup_progress_and_cache(tmp_path: Path) -> None:
    require_binary("gcc")
    cache = ResultCache(tmp_path / "cache")
    engine = Engine(workers=2, cache=cache)
    jobs = [
        _lucky_job(3, "a"),
        _lucky_job(4, "b"),
        _lucky_job(3, "c"),  # identical to "a" except the id
        Job("C", HELLO["C"], (TestCase("", ("nope",)),), id="d"),
    ]
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def progress(done: int, total: int) -> None:
        with lock:
            seen.append((done, total))

    results = engine.judge_many(jobs, progress=progress)
    assert [r.id for r in results] == ["a", "b", "c", "d"]
    assert [r.verdict for r in results] == [Verdict.PASSED] * 3 + [Verdict.WRONG_ANSWER]
    assert engine.judged == 3  # "a" and "c" judged once
    assert seen[0] == (0, 4) and seen[-1] == (4, 4)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert cache.stats.stores == 3
    # a second engine on the same cache judges nothing
    again = Engine(workers=2, cache=tmp_path / "cache")
    results2 = again.judge_many(jobs)
    assert again.judged == 0
    assert all(r.cached for r in results2)
    assert [r.verdict for r in results2] == [r.verdict for r in results]
    assert [r.id for r in results2] == ["a", "b", "c", "d"]


def test_result_is_cached_as_soon_as_its_job_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_binary("gcc")
    cache = ResultCache(tmp_path / "cache")
    engine = Engine(workers=1, cache=cache)
    calls: list[int] = []
    real = engine.backend.judge

    def judge_then_check(job, runtime, **kwargs):  # type: ignore[no-untyped-def]
        # when the second job starts, the first one's result is already on disk
        calls.append(cache.stats.stores)
        return real(job, runtime, **kwargs)

    monkeypatch.setattr(engine.backend, "judge", judge_then_check)
    engine.judge_many([_lucky_job(1, "x"), _lucky_job(2, "y")])
    assert calls == [0, 1]


def test_engine_failure_is_infra_error_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    require_binary("gcc")

    def broken(*args: object, **kwargs: object) -> Result:
        raise OSError("disk on fire")

    engine = Engine(workers=1)
    monkeypatch.setattr(engine.backend, "judge", broken)
    r = engine.judge(_lucky_job(1, "z"))
    assert r.verdict is Verdict.INFRA_ERROR and "disk on fire" in r.detail and r.id == "z"


def test_sandbox_build_failure_is_infra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    require_binary("gcc")
    from code_eval_taskpack.execution.backends import local

    def no_sandbox(*args: object, **kwargs: object) -> Sandbox:
        raise SandboxError("no namespaces today")

    monkeypatch.setattr(local, "Sandbox", no_sandbox)
    r = Engine(workers=1).judge(_lucky_job(1, "q"))
    assert r.verdict is Verdict.INFRA_ERROR and "no namespaces today" in r.detail


def test_engine_comparator_applies_to_default_jobs() -> None:
    require_binary("gcc")
    src = '#include <stdio.h>\nint main(void){puts("1.0000001");return 0;}\n'
    job = Job("C", src, (TestCase("", ("1.0",)),))
    assert Engine(workers=1).judge(job).verdict is Verdict.PASSED  # 1e-6 tolerance (a real)
    assert Engine(workers=1, comparator="execeval").judge(job).verdict is Verdict.WRONG_ANSWER
    with pytest.raises(ValueError):
        Engine(comparator="fuzzy")


def test_results_record_runtime_and_isolation() -> None:
    require_binary("gcc")
    r = Engine(workers=1).judge(_lucky_job(5, "r"))
    assert r.verdict is Verdict.PASSED
    assert r.runtime["name"] == "GNU C11" and r.runtime["version"][0].isdigit()
    assert r.runtime["binary"].startswith("/")
    assert r.compile is not None and r.compile.ok
    assert set(r.isolation) >= set(LAYERS)
    check_isolation(r.isolation)
    d = r.to_dict()
    assert Result.from_dict(d).to_dict() == d


def test_compile_cache_reuses_a_compiled_program(tmp_path: Path) -> None:
    require_binary("gcc")
    src = LUCKY["C"] + f"/* {os.getpid()} {tmp_path.name} */\n"  # never compiled before
    engine = Engine(workers=1, cache=tmp_path / "cache")
    first = engine.judge(_lucky_job(3, "1", src))
    second = engine.judge(_lucky_job(4, "2", src))  # same program, other tests
    assert first.verdict is second.verdict is Verdict.PASSED
    assert first.compile is not None and not first.compile.cached
    assert second.compile is not None and second.compile.cached
    assert second.tests[0].stdout.strip() == "30"
    # on disk too: a new engine (a rerun) restores it instead of compiling
    third = Engine(workers=1, cache=tmp_path / "cache").judge(_lucky_job(5, "3", src))
    assert third.verdict is Verdict.PASSED and third.compile is not None and third.compile.cached
    # a compiler error is remembered as well, with its message
    bad = "int main(void) { return missing_name; }\n"
    ce1 = engine.judge(_lucky_job(1, "4", bad))
    ce2 = engine.judge(_lucky_job(2, "5", bad))
    assert ce1.verdict is ce2.verdict is Verdict.COMPILATION_ERROR
    assert ce2.compile is not None and ce2.compile.cached
    assert "missing_name" in ce2.compile.stderr


def test_compile_cache_is_keyed_by_source() -> None:
    require_binary("gcc")
    engine = Engine(workers=1)
    a = engine.judge(_lucky_job(3, "a"))
    other = LUCKY["C"].replace("- 2", "- 1")
    b = engine.judge(Job("C", other, (TestCase("3\n", ("15",)),)))
    assert a.verdict is b.verdict is Verdict.PASSED
    assert b.compile is not None and not b.compile.cached


def test_cgroup_v2_layout_detection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """cgroup v2 (no v1 memory controller): a delegated engine cgroup is used as the parent."""
    from code_eval_taskpack.execution.sandbox import cgroups

    root = tmp_path / "cg"
    own = root / "user.slice" / "engine.scope"
    own.mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu memory pids\n")
    (root / "cgroup.subtree_control").write_text("memory pids\n")
    (own / "cgroup.subtree_control").write_text("memory pids\n")
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", root)
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {"": "/user.slice/engine.scope"})
    lay = cgroups.detect()
    assert lay.version == "v2" and lay.memory == own and lay.pids == own
    # not delegated: a dedicated subtree off the root gets the controllers
    (own / "cgroup.subtree_control").write_text("")
    lay = cgroups.detect()
    assert lay.version == "v2" and lay.memory == root / "code-exec"
    assert (root / "code-exec" / "cgroup.subtree_control").read_text() == "+memory +pids"


@pytest.mark.parametrize(
    ("version", "name"), [("v1", "memory.swappiness"), ("v2", "memory.swap.max")]
)
def test_program_cgroups_never_swap(tmp_path: Path, version: str, name: str) -> None:
    """A balloon must be OOM-killed at the limit, not swapped out (v1 may lack memsw)."""
    from code_eval_taskpack.execution.sandbox import cgroups

    (tmp_path / name).write_text("60\n" if version == "v1" else "max\n")
    cs = cgroups.CgroupSet(version=version, memory_dir=tmp_path)
    cs._disable_swap()
    assert (tmp_path / name).read_text() == "0"
    assert cs.swap_control == name.removeprefix("memory.")


def test_this_machines_program_cgroup_has_no_swap() -> None:
    from code_eval_taskpack.execution.sandbox import cgroups

    lay = cgroups.layout()
    require(bool(lay.version), f"no usable cgroups here: {lay.reason}")
    cs = cgroups.CgroupSet.create("swaptest")
    try:
        assert cs.memory_dir is not None
        name = "memory.swappiness" if cs.version == "v1" else "memory.swap.max"
        if (cs.memory_dir / name).exists():
            assert (cs.memory_dir / name).read_text().strip() == "0"
            assert cs.swap_control
        else:
            assert cs.swap_control == ""
    finally:
        cs.destroy()


def test_teardown_waits_for_the_exit_itself() -> None:
    """`_wait_exit` (a sandbox's teardown) returns once the process has exited and reaped it,
    and gives up at its timeout on one that does not exit."""
    import subprocess

    from code_eval_taskpack.execution.sandbox.command import _wait_exit

    quick = subprocess.Popen(["sh", "-c", "exit 3"])
    _wait_exit(quick, timeout=10)
    assert quick.returncode == 3
    _wait_exit(quick, timeout=10)  # already reaped: returns at once
    stuck = subprocess.Popen(["sleep", "30"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            _wait_exit(stuck, timeout=0.2)
        assert stuck.returncode is None
    finally:
        stuck.kill()
        stuck.wait()
