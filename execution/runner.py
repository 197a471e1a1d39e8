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

from . import go_direct, pch, startup
from .backends.base import Backend, Session
from .backends.local import LocalBackend
from .compare import outputs_match
from .compile_cache import CompileCache, CompiledEntry, PolicyView, compile_key
from .inputs import DEFAULT_INPUT_LIMITS, InputLimits, source_too_large
from .languages import Runtime, java_layout
from .limits import COMPILE_LIMITS, MB, Limits, run_limits
from .sandbox import CommandOutcome, SandboxError, SharedFolder, default_env
from .types import CompileResult, Job, Result, TestResult, Verdict
from .warm_compiler import warm_compile

#: characters of stdout/stderr kept in results (reporting only; comparison sees everything)
REPORT_CHARS = 2000
COMPILE_REPORT_CHARS = 4000
#: bytes of a test's stdout read into memory for the report (at most 4 bytes per character)
REPORT_HEAD_BYTES = 4 * REPORT_CHARS


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
    backend: Backend | None = None,
) -> Result:
    """Judge `job` with `runtime` (already resolved and available) and `job.comparator`;
    `compiled` caches compilations across jobs; `isolation` is the policy; `backend` runs
    the program (the local sandbox by default). A source over `input_limits.source_bytes` is a
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
    # the exact command lines are part of the result: flags decide verdicts (e.g. `-include`)
    info = runtime.info()
    info["compile_argv"] = runtime.expand(runtime.compile, **values) if runtime.compile else None
    result = Result(verdict=Verdict.PASSED, runtime=info, id=job.id)
    limits = run_limits(
        job.time_limit_s,
        job.memory_limit_mb,
        runtime.time_factor,
        runtime.as_headroom_mb,
        job.overrides,
    )
    session_backend = backend if backend is not None else LocalBackend()
    fingerprint = session_backend.runtime_fingerprint(runtime)
    if isolation != "required":  # compiled apart; `required` keys are those of older caches
        fingerprint = f"{fingerprint}|isolation={isolation}"
    if isinstance(compiled, CompileCache):  # entries only of sandboxes that met the policy
        compiled = PolicyView(compiled, isolation, tuple(session_backend.required_layers))
    ro_paths: list[str] = list(runtime.extra_ro_paths)
    compile_argv = runtime.compile
    header = _precompiled_header(
        runtime, job, values, compiled, fingerprint, session_backend, isolation
    )
    #: the engine's own files this program's commands use (a header, tools, a prelude)
    ours: list[Path] = []
    if header is not None:
        ours += [header[0].header, header[0].header.with_name(pch.HEADER + ".gch")]
        ro_paths.append(SharedFolder(header[0].directory))
        compile_argv = header[1]
        info["compile_argv"] = runtime.expand(compile_argv, **values)
    fallback = None
    direct = _go_tools(runtime, job, session_backend, isolation)
    if direct is not None:
        values.update(direct.values)
        ours.append(direct.directory)
        ro_paths.append(SharedFolder(direct.directory))
        fallback, compile_argv = runtime.compile, tuple(runtime.raw[go_direct.KEY])
        info["compile_argv"] = runtime.expand(compile_argv, **values)
        # its binaries differ from go build's (no module information): cached apart
        fingerprint = f"{fingerprint or runtime.fingerprint()}|{go_direct.KEY}"
    run_argv = runtime.run
    placeholder = startup.needed(run_argv)
    if placeholder is not None:
        prelude = _interpreter_prelude(runtime, placeholder, session_backend, isolation)
        if prelude is not None:
            folder = SharedFolder(prelude.directory)
            values[placeholder] = folder.inside_of(prelude.path)
            ours.append(prelude.path)
            ro_paths.append(folder)
        else:
            run_argv = tuple(runtime.raw.get("run_classic") or ())
            if not run_argv:
                result.verdict = Verdict.INFRA_ERROR
                result.detail = f"{runtime.name}: no start-up prelude and no run_classic"
                return result
    info["run_argv"] = runtime.expand(run_argv, **values)
    unusable = unusable_artefacts(ours)
    if unusable:
        result.verdict = Verdict.INFRA_ERROR
        result.detail = f"engine files unusable before the compile: {unusable}"
        return result
    try:
        sandbox = session_backend.open_session(
            files={values["source"]: job.source_code.encode("utf-8", "surrogatepass")},
            purposes=("compile", "run"),
            policy=isolation,
            ro_paths=ro_paths,
        )
    except (SandboxError, OSError) as exc:
        result.verdict = Verdict.INFRA_ERROR
        result.detail = f"sandbox could not be built: {exc}"
        return result
    try:
        result.isolation = sandbox.isolation_snapshot()
        result.isolation["backend"] = session_backend.name
        try:
            _compile_and_run(
                sandbox,
                runtime,
                job,
                values,
                limits,
                result,
                compiled,
                fingerprint,
                compile_argv,
                session_backend.warm_compilers(),
                run_argv,
                fallback,
                ours,
            )
            unusable = unusable_artefacts(ours) if result.verdict is not Verdict.PASSED else ""
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


def _precompiled_header(
    runtime: Runtime,
    job: Job,
    values: dict[str, str],
    compiled: CompileCache | PolicyView | None,
    fingerprint: str,
    backend: Backend,
    isolation: str,
) -> tuple[pch.Pch, tuple[str, ...]] | None:
    """The precompiled header of a C++ compile that will really run (not one served from the
    compile cache), with its compile argv; local backend only (the header lives on this host)."""
    if runtime.compile is None or "pch_build" not in runtime.raw:
        return None
    if not isinstance(backend, LocalBackend) or not pch.enabled():
        return None
    root = compiled.root if compiled is not None else None
    if compiled is not None:
        layout = {k: values[k] for k in ("source", "class", "main_class")}
        if compiled.get(compile_key(fingerprint or runtime.fingerprint(), job.source_code, layout)):
            return None

    def build(text: str, argv: tuple[str, ...], limits: Limits) -> bytes | None:
        return _build_header(backend, runtime, isolation, text, argv, limits)

    return pch.for_source(runtime, job.source_code, pch.store_root(root), build)


def _prober(runtime: Runtime, backend: Backend, isolation: str, purpose: str) -> startup.Prober:
    """Runs one probe of the toolchain's own settings in a sandbox of `purpose` (with the
    runtime's environment and, for a compile, the compile's limits: a compiler's driver may start
    many threads): its stdout, or None when it failed."""
    extra = runtime.compile_env if purpose == "compile" else runtime.run_env
    limits = COMPILE_LIMITS if purpose == "compile" else PROBE_LIMITS

    def probe(argv: list[str]) -> bytes | None:
        try:
            box = backend.open_session(
                files={}, purposes=(purpose,), policy=isolation, ro_paths=runtime.extra_ro_paths
            )
        except (SandboxError, OSError):
            return None
        try:
            env = default_env(box.workdir) | extra
            out = box.run(argv, limits=limits, env=env, purpose=purpose)
            return out.stdout if out.ok else None
        except SandboxError:
            return None
        finally:
            box.close()

    return probe


def _interpreter_prelude(
    runtime: Runtime, placeholder: str, backend: Backend, isolation: str
) -> startup.Prelude | None:
    """What an interpreter's start-up placeholder stands for (local backend only: it lives on
    this host)."""
    if not isinstance(backend, LocalBackend):
        return None
    return startup.prepare(runtime, placeholder, _prober(runtime, backend, isolation, "run"))


def _go_tools(
    runtime: Runtime, job: Job, backend: Backend, isolation: str
) -> go_direct.Tools | None:
    """The direct Go build's tools for this source (local backend only: the import
    configuration lives on this host), or None: go build."""
    if go_direct.KEY not in runtime.raw or not isinstance(backend, LocalBackend):
        return None
    if not go_direct.applies(job.source_code):
        return None
    return go_direct.tools(runtime, _prober(runtime, backend, isolation, "compile"))


#: limits of the one probe of an interpreter's own settings (startup.py)
PROBE_LIMITS = Limits(
    cpu_s=30, wall_s=60, memory_mb=512, output_bytes=1 * MB, processes=16, open_files=256
)


def _build_header(
    backend: Backend,
    runtime: Runtime,
    isolation: str,
    text: str,
    argv: tuple[str, ...],
    limits: Limits,
) -> bytes | None:
    """Build one precompiled header in a sandbox of its own; its bytes, or None."""
    try:
        box = backend.open_session(
            files={pch.HEADER: text.encode()},
            purposes=("compile",),
            policy=isolation,
            ro_paths=runtime.extra_ro_paths,
        )
    except (SandboxError, OSError):
        return None
    try:
        env = default_env(box.workdir) | runtime.compile_env
        out = box.run(runtime.expand(argv), limits=limits, env=env, purpose="compile")
        if not out.ok:
            return None
        got = box.run(
            ["cat", pch.HEADER + ".gch"],
            limits=limits,
            env=default_env(box.workdir),
            purpose="compile",
        )
        return got.stdout if got.ok and got.stdout else None
    except SandboxError:
        return None
    finally:
        box.close()


def _compile(
    sandbox: Session,
    runtime: Runtime,
    job: Job,
    values: dict[str, str],
    result: Result,
    compiled: CompileCache | PolicyView | None,
    fingerprint: str,
    compile_argv: tuple[str, ...] | None = None,
    warm: bool = False,
    fallback: tuple[str, ...] | None = None,
    ours: Sequence[Path] = (),
) -> bool:
    """Compile (or restore a cached compile); False when the program cannot run. With `warm`,
    a runtime with a warm compiler tries it first; whatever it cannot answer is compiled cold.
    With `fallback`, a `compile_argv` that fails for any reason is followed by `fallback`
    under fresh limits, which decides (the direct Go build, go_direct.py)."""
    assert runtime.compile is not None
    workdir = sandbox.workdir
    env = default_env(workdir) | runtime.compile_env
    key = ""
    if compiled is not None:
        layout = {k: values[k] for k in ("source", "class", "main_class")}
        key = compile_key(fingerprint or runtime.fingerprint(), job.source_code, layout)
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
    argv = runtime.expand(compile_argv or runtime.compile, **values)
    climits = COMPILE_LIMITS
    if runtime.compile_memory_mb is not None:
        climits = climits.scaled(memory_mb=runtime.compile_memory_mb)
    if warm:
        done = _compile_warm(sandbox, runtime, job, values, argv, climits, result, compiled, key)
        if done is not None:
            return done
    out = sandbox.run(argv, limits=climits, env=env, purpose="compile")
    spent = 0.0
    if fallback is not None and not out.ok:
        spent = out.cpu_s
        argv = runtime.expand(fallback, **values)
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
    values: dict[str, str],
    argv: list[str],
    climits: Limits,
    result: Result,
    compiled: CompileCache | PolicyView | None,
    key: str,
) -> bool | None:
    """The warm compiler's answer as `_compile` gives it, or None: compile cold."""
    reply = warm_compile(
        runtime, argv, values["source"], job.source_code.encode("utf-8", "surrogatepass"), climits
    )
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
    values: dict[str, str],
    limits: Limits,
    result: Result,
    compiled: CompileCache | PolicyView | None = None,
    fingerprint: str = "",
    compile_argv: tuple[str, ...] | None = None,
    warm: bool = False,
    run_argv: tuple[str, ...] | None = None,
    fallback: tuple[str, ...] | None = None,
    ours: Sequence[Path] = (),
) -> None:
    workdir = sandbox.workdir
    if runtime.compile is not None and not _compile(
        sandbox,
        runtime,
        job,
        values,
        result,
        compiled,
        fingerprint,
        compile_argv,
        warm,
        fallback,
        ours,
    ):
        return
    env = default_env(workdir) | runtime.run_env
    argv = runtime.expand(run_argv or runtime.run, **values)
    for test in job.tests:
        out = sandbox.run(
            argv,
            limits=limits,
            stdin=test.input.encode("utf-8", "surrogatepass"),
            env=env,
            purpose="run",
            output_head=REPORT_HEAD_BYTES,
        )
        with out.stdout_file or contextlib.nullcontext():
            verdict, detail = test_verdict(out)
            if verdict is Verdict.INFRA_ERROR and no_runnable_program(out, argv):
                verdict = Verdict.COMPILATION_ERROR
                detail = f"the compiler produced no runnable program ({out.error})"
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
