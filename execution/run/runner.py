"""Judge one program: compile once inside its sandbox, then one fresh process per test.

Verdict of a test, in this order (first match wins):
  sandbox failure -> INFRA_ERROR;  OOM kill in the run cgroup -> MEMORY_LIMIT_EXCEEDED;
  CPU or wall limit hit -> TIME_LIMIT_EXCEEDED;  stdout/stderr past the cap ->
  OUTPUT_LIMIT_EXCEEDED;  killed by a signal -> RUNTIME_ERROR (signal named, e.g. SIGSEGV,
  SIGXFSZ);  non-zero exit -> RUNTIME_ERROR (code named);  else the comparator decides
  PASSED / WRONG_ANSWER. MLE is never inferred from stderr text, and a silent crash is a
  RUNTIME_ERROR, not an MLE.
The program's verdict is the first failing test's verdict (or PASSED); with stop_on_first_fail
the remaining tests are not run.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..caches.compiles import CompileCache, CompiledEntry, PolicyView, compile_key
from ..config import EngineConfig, or_env
from ..inputs import DEFAULT_INPUT_LIMITS, InputLimits, source_too_large
from ..isolation import SandboxError
from ..languages.registry import Runtime, java_layout
from ..limits import COMPILE_LIMITS, MB, Limits, run_limits
from ..sandbox.outcome import WARM_OOM_NOTE, CommandOutcome, ForkedTestMemoryKill, default_env
from ..speedups import BuildPlan, Host, build_plan
from ..types import CompileResult, Job, Result, TestResult, Verdict
from .compare import outputs_match

if TYPE_CHECKING:  # the backends call the runner, never the other way round
    from ..backends.base import Session, SessionBackend

#: characters of stdout/stderr kept in results (reporting only; comparison sees everything)
REPORT_CHARS = 2000
COMPILE_REPORT_CHARS = 4000
#: bytes of a test's stdout read into memory for the report (at most 4 bytes per character)
REPORT_HEAD_BYTES = 4 * REPORT_CHARS


#: the first test a plan's warm start serves (the ones before run cold: many programs end at
#: their first test, and a zygote costs one cold start)
WARM_FROM_TEST = 1


def _text(data: bytes, limit: int) -> str:
    return data[:limit].decode("utf-8", errors="replace")


def source_layout(runtime: Runtime, source_code: str) -> dict[str, str]:
    """Template values for a program: its file name and, for Java, its main class."""
    values = {"class": "Main", "main_class": "Main"}
    if "{class}" in runtime.source or any("{main_class}" in a for a in runtime.run):
        pkg, cls = java_layout(source_code)
        values["class"] = cls
        values["main_class"] = f"{pkg}.{cls}" if pkg else cls
    values["source"] = runtime.source.format(**values)
    return values


#: exec errors that mean "this file is not a runnable program" (rather than a sandbox failure)
NO_PROGRAM_ERRNOS = frozenset({errno.ENOENT, errno.ENOEXEC})


def no_runnable_program(out: CommandOutcome, argv: Sequence[str]) -> bool:
    """True when a test could not start because the compiled artefact (``./main``) is missing
    or not an executable (e.g. ``go build`` of a non-main package): the program's fault.

    Every other launcher failure (setgid, capabilities, setuid, seccomp, chdir, exec EAGAIN or
    ENOMEM, exec of an interpreter) is the engine's, hence INFRA_ERROR and never cached.
    """
    return (
        bool(out.error)
        and out.error_stage == "exec"
        and out.error_errno in NO_PROGRAM_ERRNOS
        and bool(argv)
        and argv[0].startswith("./")
    )


#: exec and chdir errors about the file or folder itself (not a shortage of memory, processes or
#: descriptors, which stay the engine's)
FILE_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.ENOEXEC,
        errno.EACCES,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.ELOOP,
        errno.ENAMETOOLONG,
        errno.ETXTBSY,
        errno.ELIBBAD,
    }
)


def in_work_dir(path: str, workdir: str) -> bool:
    """Whether `path` (an argv[0] as exec sees it, or a cwd) lies in the program's writable work
    dir: relative with a slash (exec resolves it from the work dir), or below `workdir`. A bare
    name is looked up on PATH, which holds only read-only system folders."""
    root = workdir.rstrip("/")
    if path == root or path.startswith(root + "/"):
        return True
    return "/" in path and not path.startswith("/")


def unrunnable_by_the_program(out: CommandOutcome, argv: Sequence[str], workdir: str) -> bool:
    """True when a test could not start because a file or folder of the work dir that served an
    earlier test of the same program (its binary, its script, the work dir itself) no longer
    can: only the program writes there between two tests, so this is the program's doing (a
    RUNTIME_ERROR, as ExecEval says it), never the engine's. Call it only once the program has
    run in this sandbox."""
    if not out.error or out.error_errno not in FILE_ERRNOS or not argv:
        return False
    if out.error_stage == "exec":
        return in_work_dir(argv[0], workdir)
    return out.error_stage == "chdir"  # every test of a program runs in its work dir


def test_verdict(out: CommandOutcome) -> tuple[Verdict | None, str]:
    """Verdict from how the process ended; None means "compare the output"."""
    if out.error:
        return Verdict.INFRA_ERROR, f"sandbox: {out.error}"
    if out.memory_exceeded:
        how = {
            "cgroup": "killed by the memory cgroup (OOM)",
            "pid_namespace_sampling": "killed past the sampled memory total of the sandbox",
        }.get(str(out.isolation.get("memory_enforcement")), "peak memory over the limit")
        return Verdict.MEMORY_LIMIT_EXCEEDED, how
    if out.timed_out:
        return Verdict.TIME_LIMIT_EXCEEDED, f"{out.timeout_kind or 'cpu'} time limit"
    if out.output_exceeded:
        return Verdict.OUTPUT_LIMIT_EXCEEDED, "output limit exceeded"
    if out.signal:
        return Verdict.RUNTIME_ERROR, f"killed by {out.signal}"
    if out.exit_code != 0:
        return Verdict.RUNTIME_ERROR, f"exit code {out.exit_code}"
    return None, ""


def judge_with(
    runtime: Runtime,
    job: Job,
    compiled: CompileCache | PolicyView | None = None,
    isolation: str = "required",
    input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
    *,
    backend: SessionBackend,
    config: EngineConfig | None = None,
) -> Result:
    """Judge `job` with `runtime` (already resolved and available) and `job.comparator`;
    `compiled` caches compilations across jobs; `isolation` is the policy; `backend` opens
    the program's sessions (its `host_files` decides whether the speed-ups made on this host
    apply); `config` holds the switches the speed-ups obey (None: the environment's now). A source over `input_limits.source_bytes` is a
    COMPILATION_ERROR without any sandbox (it would not fit the work dir anyway)."""
    too_large = source_too_large(job.source_code, input_limits)
    if too_large:
        compile_result = CompileResult(ok=False, detail=too_large)
        return Result(
            verdict=Verdict.COMPILATION_ERROR,
            runtime=runtime.info(),
            id=job.id,
            compile=compile_result,
            detail=too_large,
        )
    values = source_layout(runtime, job.source_code)
    values["memory_mb"] = str(job.memory_limit_mb)
    info = runtime.info()
    result = Result(verdict=Verdict.PASSED, runtime=info, id=job.id)
    limits = run_limits(
        job.time_limit_s,
        job.memory_limit_mb,
        runtime.time_factor,
        runtime.as_headroom_mb,
        job.overrides,
    )
    fingerprint = backend.runtime_fingerprint(runtime)
    if isolation != "required":  # compiled apart; `required` keys are those of older caches
        fingerprint = f"{fingerprint}|isolation={isolation}"
    if isinstance(compiled, CompileCache):  # entries only of sandboxes that met the policy
        compiled = PolicyView(compiled, isolation, tuple(backend.required_layers))
    plan = build_plan(
        runtime, job, Host(backend, isolation, compiled, or_env(config)), values, fingerprint
    )
    # the exact command lines are part of the result: flags decide verdicts (e.g. `-include`)
    compile_argv = plan.compile_argv
    info["compile_argv"] = runtime.expand(compile_argv, **plan.values) if compile_argv else None
    if plan.refusal:
        result.verdict = Verdict.INFRA_ERROR
        result.detail = plan.refusal
        return result
    try:
        return _judge_in_sandbox(runtime, job, plan, limits, result, compiled, isolation, backend)
    except ForkedTestMemoryKill:
        # its tests may have changed the sandbox's files: judged again, cold from the first
        # test in a fresh sandbox, as a cold judge runs each test once from what the earlier
        # tests left
        result = Result(verdict=Verdict.PASSED, runtime=info, id=job.id)
        cold = plan.changed("cold_after_forked_oom", warm_start="")
        result = _judge_in_sandbox(runtime, job, cold, limits, result, compiled, isolation, backend)
        result.isolation.setdefault("notes", []).append(WARM_OOM_NOTE)
        return result


def _judge_in_sandbox(
    runtime: Runtime,
    job: Job,
    plan: BuildPlan,
    limits: Limits,
    result: Result,
    compiled: CompileCache | PolicyView | None,
    isolation: str,
    backend: SessionBackend,
) -> Result:
    """`judge_with`'s sandboxed part: compile and run `plan` in a session of `backend`."""
    info = result.runtime
    info["run_argv"] = runtime.expand(plan.run_argv, **plan.values)
    unusable = unusable_artefacts(plan.ours)
    if unusable:
        result.verdict = Verdict.INFRA_ERROR
        result.detail = f"engine files unusable before the compile: {unusable}"
        return result
    try:
        sandbox = backend.open_session(
            files={plan.values["source"]: job.source_code.encode("utf-8", "surrogatepass")},
            purposes=("compile", "run"),
            policy=isolation,
            ro_paths=plan.ro_paths,
        )
    except (SandboxError, OSError) as exc:
        result.verdict = Verdict.INFRA_ERROR
        result.detail = f"sandbox could not be built: {exc}"
        return result
    try:
        result.isolation = sandbox.isolation_snapshot()
        result.isolation["backend"] = backend.name
        try:
            _compile_and_run(sandbox, runtime, job, plan, limits, result, compiled)
            unusable = unusable_artefacts(plan.ours) if result.verdict is not Verdict.PASSED else ""
            if unusable and result.verdict is not Verdict.INFRA_ERROR:
                # the program failed while a file of ours was gone: ours, not the program's
                result.detail = f"engine files unusable ({unusable}); {result.detail}"
                result.verdict = Verdict.INFRA_ERROR
        except SandboxError as exc:
            result.verdict = Verdict.INFRA_ERROR
            result.detail = f"sandbox failed: {exc}"
    finally:
        sandbox.close()
    return result


def unusable_artefacts(paths: Sequence[Path]) -> str:
    """Which of the engine's own files a program's commands use is not an absolute, readable
    path ("" when all are): a compile or run that fails without one failed for a reason of ours."""
    bad = [str(p) for p in paths if not p.is_absolute() or not os.access(p, os.R_OK)]
    return ", ".join(bad)


#: limits of the tar commands that save and restore a compiled work dir
ARCHIVE_LIMITS = Limits(
    cpu_s=30, wall_s=60, memory_mb=512, output_bytes=256 * MB, processes=16, open_files=256
)
ARCHIVE_EXCLUDES = ("--exclude=./.cache", "--exclude=./.go")


def _compile(
    sandbox: Session,
    runtime: Runtime,
    job: Job,
    plan: BuildPlan,
    result: Result,
    compiled: CompileCache | PolicyView | None,
) -> bool:
    """Compile (or restore a cached compile); False when the program cannot run. A plan with a
    warm compiler tries it first; whatever it cannot answer is compiled cold. With a fallback,
    a compile argv that fails for any reason is followed by the fallback under fresh limits,
    which decides."""
    assert runtime.compile is not None
    values, fingerprint, ours = plan.values, plan.fingerprint, plan.ours
    workdir = sandbox.workdir
    env = default_env(workdir) | runtime.compile_env
    key = ""
    if compiled is not None:
        key = compile_key(fingerprint or runtime.fingerprint(), job.source_code, plan.layout())
        hit = compiled.get(key)
        if hit is not None and not hit.ok:
            result.compile = CompileResult(
                ok=False, time_s=hit.time_s, stdout=hit.stdout, stderr=hit.stderr, cached=True
            )
            result.compile.detail = hit.detail
            result.verdict = Verdict.COMPILATION_ERROR
            result.detail = hit.detail
            return False
        if hit is not None and hit.archive is not None:
            out = sandbox.run(
                ["tar", "-xf", "-"],
                limits=ARCHIVE_LIMITS,
                stdin=hit.archive,
                env=default_env(workdir),
                purpose="compile",
            )
            if out.ok:
                result.compile = CompileResult(
                    ok=True, time_s=hit.time_s, stdout=hit.stdout, stderr=hit.stderr, cached=True
                )
                return True
            # an unusable entry: compile for real below
    argv = runtime.expand(plan.compile_argv or runtime.compile, **values)
    climits = COMPILE_LIMITS
    if runtime.compile_memory_mb is not None:
        climits = climits.scaled(memory_mb=runtime.compile_memory_mb)
    if plan.warm_compile is not None:
        done = _compile_warm(sandbox, runtime, job, plan, argv, climits, result, compiled, key)
        if done is not None:
            return done
    out = sandbox.run(argv, limits=climits, env=env, purpose="compile")
    spent = 0.0
    if plan.fallback is not None and not out.ok:
        spent = out.cpu_s
        argv = runtime.expand(plan.fallback, **values)
        out = sandbox.run(argv, limits=climits, env=env, purpose="compile")
    comp = CompileResult(
        ok=out.ok,
        time_s=round(out.cpu_s + spent, 4),
        stdout=_text(out.stdout, COMPILE_REPORT_CHARS),
        stderr=_text(out.stderr, COMPILE_REPORT_CHARS),
        wall_s=round(out.wall_s, 4),
    )
    result.compile = comp
    if out.error:
        result.verdict = Verdict.INFRA_ERROR
        result.detail = f"compiler could not start: {out.error}"
        comp.detail = out.error
        return False
    if not out.ok:
        hit_limits = out.memory_exceeded or out.timed_out or out.output_exceeded
        why = test_verdict(out)[1] or "compiler failed"
        if hit_limits:
            why = f"compilation exceeded its limits ({why})"
        comp.detail = why
        unusable = unusable_artefacts(ours)
        if unusable:  # a header or tool of ours went missing: never the program's verdict
            result.verdict = Verdict.INFRA_ERROR
            result.detail = f"compile failed with engine files unusable: {unusable}"
            return False
        result.verdict = Verdict.COMPILATION_ERROR
        result.detail = why
        if compiled is not None and not hit_limits and out.signal is None:
            # a plain compiler error is a property of the source; a limit hit may be load
            compiled.put(
                key,
                CompiledEntry(
                    False, comp.stdout, comp.stderr, why, comp.time_s, None, dict(result.isolation)
                ),
            )
        return False
    if compiled is not None:
        saved = sandbox.run(
            ["tar", "-cf", "-", *ARCHIVE_EXCLUDES, "."],
            limits=ARCHIVE_LIMITS,
            env=default_env(workdir),
            purpose="compile",
        )
        if saved.ok:
            entry = CompiledEntry(
                True,
                comp.stdout,
                comp.stderr,
                "",
                comp.time_s,
                saved.stdout,
                dict(result.isolation),
            )
            compiled.put(key, entry)
    return True


def _compile_warm(
    sandbox: Session,
    runtime: Runtime,
    job: Job,
    plan: BuildPlan,
    argv: list[str],
    climits: Limits,
    result: Result,
    compiled: CompileCache | PolicyView | None,
    key: str,
) -> bool | None:
    """The warm compiler's answer as `_compile` gives it, or None: compile cold."""
    assert plan.warm_compile is not None
    source = job.source_code.encode("utf-8", "surrogatepass")
    reply = plan.warm_compile(runtime, argv, plan.values["source"], source, climits)
    if reply is None:
        return None
    if reply.ok:
        out = sandbox.run(
            ["tar", "-xf", "-"],
            limits=ARCHIVE_LIMITS,
            stdin=reply.archive,
            env=default_env(sandbox.workdir),
            purpose="compile",
        )
        if not out.ok:
            return None
    comp = CompileResult(
        ok=reply.ok,
        time_s=round(reply.cpu_s, 4),
        stdout=_text(reply.stdout, COMPILE_REPORT_CHARS),
        stderr=_text(reply.stderr, COMPILE_REPORT_CHARS),
        warm=True,
        wall_s=round(reply.wall_s, 4),
    )
    result.compile = comp
    if not reply.ok:
        # the compiler's own error status (1 from javac and kotlinc), as a cold compile says it
        comp.detail = "exit code 1"
        result.verdict = Verdict.COMPILATION_ERROR
        result.detail = comp.detail
    if compiled is not None:
        archive = reply.archive if reply.ok else None
        compiled.put(
            key,
            CompiledEntry(
                reply.ok,
                comp.stdout,
                comp.stderr,
                comp.detail,
                comp.time_s,
                archive,
                dict(result.isolation),
            ),
        )
    return reply.ok


def _compile_and_run(
    sandbox: Session,
    runtime: Runtime,
    job: Job,
    plan: BuildPlan,
    limits: Limits,
    result: Result,
    compiled: CompileCache | PolicyView | None = None,
) -> None:
    workdir = sandbox.workdir
    if runtime.compile is not None and not _compile(sandbox, runtime, job, plan, result, compiled):
        return
    env = default_env(workdir) | runtime.run_env
    argv = runtime.expand(plan.run_argv, **plan.values)
    warm = False
    ran = False  # whether a test's process started: from then on the work dir is the program's
    for index, test in enumerate(job.tests):
        if plan.warm_start and index == WARM_FROM_TEST and len(job.tests) - index >= 2:
            # the later tests forked from a pre-initialised interpreter (its start costs one cold
            # start: worth it from two tests on, after a first that did not end the program); a
            # test it cannot serve runs cold, the same verdict by construction
            warm = sandbox.start_warm(
                argv, executable=plan.warm_start, limits=limits, env=env, purpose="run"
            )
        out = sandbox.run(
            argv,
            limits=limits,
            stdin=test.input.encode("utf-8", "surrogatepass"),
            env=env,
            purpose="run",
            output_head=REPORT_HEAD_BYTES,
            warm=warm,
        )
        with out.stdout_file or contextlib.nullcontext():
            verdict, detail = test_verdict(out)
            if (
                verdict is Verdict.INFRA_ERROR
                and ran
                and unrunnable_by_the_program(out, argv, workdir)
            ):
                verdict = Verdict.RUNTIME_ERROR
                detail = f"the program made its own files unrunnable ({out.error})"
            elif verdict is Verdict.INFRA_ERROR and no_runnable_program(out, argv):
                verdict = Verdict.COMPILATION_ERROR
                detail = f"the compiler produced no runnable program ({out.error})"
            ran = ran or not out.error
            if verdict is None:
                # streamed from the capture file (raw bytes: each mode decodes)
                capture = out.stdout_file if out.stdout_file is not None else out.stdout
                ok = outputs_match(capture, test.output, job.comparator)
                verdict = Verdict.PASSED if ok else Verdict.WRONG_ANSWER
        tr = TestResult(
            verdict=verdict,
            time_s=round(out.cpu_s, 4),
            wall_s=round(out.wall_s, 4),
            memory_mb=out.peak_memory_mb,
            exit_code=out.exit_code,
            signal=out.signal,
            stdout=_text(out.stdout, REPORT_CHARS),
            stderr=_text(out.stderr, REPORT_CHARS),
            detail=detail,
        )
        result.tests.append(tr)
        if verdict is not Verdict.PASSED and result.verdict is Verdict.PASSED:
            result.verdict = verdict
            result.detail = f"test {len(result.tests)}: {detail or verdict.value}"
            if job.stop_on_first_fail or verdict is Verdict.COMPILATION_ERROR:
                break
        if verdict is Verdict.INFRA_ERROR:
            result.verdict = verdict
            break
