"""A test that cannot start is the program's fault only when its compiled artefact is missing
or not executable; every other launcher failure is an engine failure (INFRA_ERROR, never cached)."""

from __future__ import annotations

import dataclasses
import errno
import os
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Job, TestCase, Verdict
from code_eval_taskpack.execution.backends.local import LocalBackend
from code_eval_taskpack.execution.caches.results import ResultCache
from code_eval_taskpack.execution.languages.registry import resolve
from code_eval_taskpack.execution.limits import Limits
from code_eval_taskpack.execution.run.runner import judge_with, no_runnable_program
from code_eval_taskpack.execution.sandbox.command import Sandbox
from code_eval_taskpack.execution.sandbox.outcome import CommandOutcome
from tests.conftest import require, require_binary, require_runtime
from tests.engine_programs import HELLO

C_HELLO = HELLO["C"]


def _failed(stage: str, err: int) -> CommandOutcome:
    """What the sandbox reports when its launcher child failed at `stage` with `err`."""
    return CommandOutcome(
        exit_code=127,
        signal=None,
        stdout=b"",
        stderr=b"",
        cpu_s=0.0,
        wall_s=0.001,
        peak_memory_mb=1.0,
        timed_out=False,
        memory_exceeded=False,
        output_exceeded=False,
        error=f"{stage}:_{os.strerror(err).replace(' ', '_')}",
        error_stage=stage,
        error_errno=err,
    )


@pytest.mark.parametrize(
    ("stage", "err", "argv", "blamed"),
    [
        ("exec", errno.ENOENT, ["./main"], True),
        ("exec", errno.ENOEXEC, ["./main"], True),
        ("exec", errno.EAGAIN, ["./main"], False),  # RLIMIT_NPROC at exec: load, not the program
        ("exec", errno.ENOMEM, ["./main"], False),
        ("exec", errno.EACCES, ["./main"], False),  # e.g. a noexec work dir
        ("exec", errno.ENOENT, ["java", "Main"], False),  # a missing interpreter
        ("setgid", errno.EPERM, ["./main"], False),
        ("capabilities", errno.EINVAL, ["./main"], False),
        ("setuid", errno.EAGAIN, ["./main"], False),
        ("seccomp", errno.EINVAL, ["./main"], False),
        ("chdir", errno.ENOENT, ["./main"], False),  # the stage decides, not just the errno
        ("dup2", errno.EBADF, ["./main"], False),
        ("unknown", errno.ENOENT, ["./main"], False),
    ],
)
def test_only_a_missing_artefact_is_blamed_on_the_program(
    stage: str, err: int, argv: list[str], blamed: bool
) -> None:
    assert no_runnable_program(_failed(stage, err), argv) is blamed
    ok = dataclasses.replace(_failed(stage, err), error="", error_stage="", error_errno=0)
    assert not no_runnable_program(ok, argv)


def test_launcher_reports_the_failing_stage_and_errno() -> None:
    with Sandbox(purposes=("run",)) as sb:
        missing = sb.run(["./missing"], limits=Limits(cpu_s=2))
        assert (missing.error_stage, missing.error_errno) == ("exec", errno.ENOENT), missing
        assert "missing" in missing.error and not missing.ok
        nodir = sb.run(["/bin/true"], limits=Limits(cpu_s=2), cwd="/no/such/dir")
        assert (nodir.error_stage, nodir.error_errno) == ("chdir", errno.ENOENT), nodir
        fine = sb.run(["/bin/true"], limits=Limits(cpu_s=2))
        assert fine.ok and (fine.error, fine.error_stage, fine.error_errno) == ("", "", 0)


def _c_job() -> Job:
    return Job(language="GNU C11", source_code=C_HELLO, tests=(TestCase("", ("Hello, World!",)),))


@pytest.mark.parametrize("stage", ["setgid", "capabilities", "setuid", "seccomp", "chdir", "exec"])
def test_launcher_failures_of_a_compiled_program_are_infra_errors(
    stage: str, tmp_path: Path
) -> None:
    """Each pre-exec stage fails (EAGAIN, via the launcher's test hook) for the test runs only:
    the compile succeeds, `./main` exists, and the verdict must still be the engine's."""
    require_binary("gcc")
    runtime = require_runtime("GNU C11")
    job = _c_job()
    iso_probe = judge_with(runtime, job, backend=LocalBackend())
    assert iso_probe.verdict is Verdict.PASSED, iso_probe.detail
    if stage in ("setgid", "setuid"):
        require(bool(iso_probe.isolation.get("unprivileged_uid")), "no uid switch here (not root)")
    if stage == "capabilities":
        require(bool(iso_probe.isolation.get("pid_namespace")), "no namespaces here")
    if stage == "seccomp":
        require(bool(iso_probe.isolation.get("seccomp")), "no seccomp here")
    result = judge_with(runtime, job, backend=LocalBackend(test_fail_stage=(stage, "run")))
    assert result.compile is not None and result.compile.ok
    assert result.verdict is Verdict.INFRA_ERROR, result.detail
    assert result.tests[0].verdict is Verdict.INFRA_ERROR
    assert f"sandbox: {stage}" in result.detail  # the message names the failing stage
    cache = ResultCache(tmp_path)
    assert not cache.put(job, runtime.fingerprint(), result)


def test_a_compile_that_leaves_no_program_is_a_compilation_error() -> None:
    """A "compiler" that succeeds without writing ./main: exec fails with ENOENT."""
    require_binary("gcc")
    runtime = dataclasses.replace(resolve("GNU C11"), compile=("/bin/true",))
    require(runtime.available, runtime.reason)
    result = judge_with(runtime, _c_job(), backend=LocalBackend())
    assert result.verdict is Verdict.COMPILATION_ERROR, result.detail
    assert "no runnable program" in result.detail


def test_go_package_without_main_is_a_compilation_error() -> None:
    runtime = require_runtime("Go")
    job = Job(
        language="Go",
        source_code="package solution\n\nfunc Solve() int { return 1 }\n",
        tests=(TestCase("", ("1",)),),
    )
    result = judge_with(runtime, job, backend=LocalBackend())
    assert result.verdict is Verdict.COMPILATION_ERROR, result.detail
    assert result.compile is not None and "produced no executable" in result.compile.stderr
