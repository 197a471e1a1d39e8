"""The backend interface: where and how a program is judged.

Two kinds. A *session* backend (`SessionBackend`, the local one) opens one `Session` per program
(its files copied in, cgroup sets per purpose such as "compile" and "run"), runs commands in it
under `Limits` (each returning a `CommandOutcome`), reports the session's isolation, and says how
a `Runtime` is fingerprinted where it runs; the shared runner judges with it. The isolation
policy is checked here, once, for every session backend (`open_session`), against the layers the
backend declares it provides.

A *job* backend (`JobBackend`) judges whole jobs somewhere else (an agent in a container, a
judge server, a cluster node running the local backend): it implements `judge` (one job) and
may override `resolve` (the runtime as the place that judges sees it); the engine keeps what
stays in the caller's process: validation, the result cache, de-duplication and the worker pool.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..config import EngineConfig
from ..inputs import DEFAULT_INPUT_LIMITS, InputLimits, source_too_large
from ..isolation import LAYERS, IsolationRefused, check_policy, policy_refusal
from ..languages.registry import Runtime, resolve
from ..limits import Limits
from ..sandbox.outcome import CommandOutcome
from ..types import CompileResult, Job, Result, Verdict

if TYPE_CHECKING:
    from ..caches.compiles import CompileCache


class Session(Protocol):
    """One program's environment; `run()` starts one fresh process inside it."""

    #: the program's working directory as its commands see it
    workdir: str

    def run(
        self,
        argv: Sequence[str],
        *,
        limits: Limits,
        stdin: bytes = b"",
        env: Mapping[str, str] | None = None,
        purpose: str | None = None,
        output_head: int | None = None,
        warm: bool = False,
    ) -> CommandOutcome: ...

    def start_warm(
        self,
        argv: Sequence[str],
        *,
        executable: str,
        limits: Limits,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        purpose: str | None = None,
    ) -> bool: ...

    def isolation_snapshot(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class Backend(abc.ABC):
    """What the engine asks of every backend. Subclasses set `name` and `required_layers` and
    derive from one of the two kinds (`SessionBackend`, `JobBackend`)."""

    #: registry name, recorded in every result's `isolation["backend"]`
    name: str = ""
    #: the layers this backend promises: `--isolation required` refuses a session lacking one
    required_layers: tuple[str, ...] = ()
    #: every layer this backend may report (a subset of `isolation.LAYERS`)
    layers: tuple[str, ...] = LAYERS
    #: True when the sandboxes this backend opens run on this host and may mount the engine's
    #: own files made here (precompiled headers, the direct Go build's tools, start-up preludes)
    #: and use this process's warm compilers: the toolchain speed-ups apply only then
    host_files: bool = False

    def resolve(self, language: str) -> Runtime:
        """The runtime judging `language` where this backend judges (raises
        UnknownLanguageError); its fingerprint goes into cache keys and its `available` decides
        whether a job is judged or answered INFRA_ERROR."""
        return resolve(language)

    @abc.abstractmethod
    def judge(
        self,
        job: Job,
        runtime: Runtime,
        *,
        compiled: CompileCache | None = None,
        policy: str = "required",
        input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
        config: EngineConfig | None = None,
    ) -> Result:
        """Judge one validated job with an available `runtime` under the switches `config`
        (None: the environment's now); an engine failure may raise (the engine turns it into
        INFRA_ERROR)."""

    def warm_compilers(self) -> bool:
        """Whether the runner may compile with a warm compiler on this host
        (`execution/speedups/warm_compiler.py`): only where the engine's own sandbox runs the programs."""
        return self.host_files

    def warm_starts(self) -> bool:
        """Whether tests may be forked from a pre-initialised interpreter in the program's own
        sandbox (`Session.start_warm`): only where the engine's own sandbox runs the programs."""
        return self.host_files

    def expect(
        self, items: Sequence[tuple[Job, Runtime]], config: EngineConfig | None = None
    ) -> None:
        """Told the distinct programs of a batch before any is judged with the switches
        `config` (what is worth preparing once for many of them, e.g. a precompiled header); by
        default nothing."""
        return None

    #: True when `judge_batch` is implemented: `Engine.judge_many` then hands it every job the
    #: cache cannot answer at once, instead of calling `judge` from its own worker pool
    supports_batches: bool = False

    def judge_batch(
        self,
        items: Sequence[tuple[Job, Runtime]],
        on_result: Callable[[int, Result], None],
        *,
        policy: str = "required",
        input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
        config: EngineConfig | None = None,
    ) -> None:
        """Judge validated jobs with available runtimes under the switches `config` (None: the
        environment's now; a job backend sends their speed-ups with the jobs), calling `on_result(i, result)` as each
        result arrives (from any thread; the engine stores it in its cache at once and keeps
        the first answer per `i`). A job left unanswered when this returns is an INFRA_ERROR."""
        raise NotImplementedError(f"backend {self.name!r} judges one job at a time")

    def host_refusal(self, policy: str) -> str:
        """Why this backend cannot judge anything under `policy` at all ("" when it can), from a
        once-per-process probe; front ends refuse before taking any work."""
        check_policy(policy)
        return ""

    def parallelism(self) -> int | None:
        """Programs this backend judges at once when the engine is not told (None: one per
        local CPU); a backend judging elsewhere says how many its servers or nodes take."""
        return None

    def identity(self) -> str:
        """What distinguishes results judged here in cache keys; "" keeps the key of the local
        backend (so caches made before backends existed stay valid)."""
        return self.name

    def runtime_fingerprint(self, runtime: Runtime) -> str:
        """The runtime's identity where this backend runs it (binary, version, registry entry),
        prefixed with the backend's identity unless that is empty."""
        ident = self.identity()
        fp = runtime.fingerprint()
        return f"{ident}|{fp}" if ident else fp

    def describe(self) -> dict[str, Any]:
        """What results and `doctor` say about the backend."""
        return {"name": self.name, "required_layers": list(self.required_layers)}


class SessionBackend(Backend):
    """Runs a program's commands in sessions it opens; subclasses implement `_open`, and the
    shared runner judges (compile once, one fresh process per test)."""

    @abc.abstractmethod
    def _open(
        self,
        files: Mapping[str, bytes],
        purposes: Sequence[str],
        policy: str,
        ro_paths: Sequence[str],
    ) -> Session:
        """Build the session (may itself refuse with IsolationRefused / fail with SandboxError)."""

    def judge(
        self,
        job: Job,
        runtime: Runtime,
        *,
        compiled: CompileCache | None = None,
        policy: str = "required",
        input_limits: InputLimits = DEFAULT_INPUT_LIMITS,
        config: EngineConfig | None = None,
    ) -> Result:
        from ..run.runner import judge_with  # imported when judging: job backends never need it

        return judge_with(runtime, job, compiled, policy, input_limits, backend=self, config=config)

    # -- the one place the policy is checked ------------------------------------------------

    def open_session(
        self,
        files: Mapping[str, bytes],
        purposes: Sequence[str] = ("run",),
        policy: str = "required",
        ro_paths: Sequence[str] = (),
    ) -> Session:
        """A session for one program, or IsolationRefused when `policy` is not met."""
        refusal = self.host_refusal(policy)
        if refusal:
            raise IsolationRefused(refusal)
        session = self._open(files, purposes, policy, ro_paths)
        try:
            snap = session.isolation_snapshot()
            refusal = policy_refusal(policy, self.required_layers, snap, self.name)
        except BaseException:
            session.close()
            raise
        if refusal:
            session.close()
            raise IsolationRefused(refusal)
        return session


class JobBackend(Backend):
    """Judges whole jobs elsewhere (usually by running a session backend there); subclasses
    implement `judge`, and may implement `judge_batch`."""


def oversized_source(job: Job, runtime: Runtime, input_limits: InputLimits) -> Result | None:
    """The COMPILATION_ERROR of a source over `input_limits` (the one verdict reached without any
    sandbox), else None. Checked where the job is given (`Engine`): a backend that judges
    elsewhere (a container's agent, a server, a node) knows only its own limits."""
    too_large = source_too_large(job.source_code, input_limits)
    if not too_large:
        return None
    return Result(
        verdict=Verdict.COMPILATION_ERROR,
        runtime=runtime.info(),
        id=job.id,
        compile=CompileResult(ok=False, detail=too_large),
        detail=too_large,
    )


def verdict_under_policy(
    result: Result,
    job: Job,
    policy: str,
    promised: Sequence[str],
    input_limits: InputLimits,
    where: str,
) -> Result:
    """`result` when its isolation snapshot meets `policy` for the layers `promised`, else an
    INFRA_ERROR naming what was missing: for the backends that judge elsewhere (a server, a
    node, a container), so a verdict judged under a weaker policy than asked is never returned.
    An INFRA_ERROR stands as it is, and so does the one verdict reached without any sandbox (a
    source over the size limit, a COMPILATION_ERROR this process can check itself)."""
    if result.verdict is Verdict.INFRA_ERROR:
        return result
    if (
        result.verdict is Verdict.COMPILATION_ERROR
        and not result.tests
        and source_too_large(job.source_code, input_limits)
    ):
        return result
    refusal = policy_refusal(policy, promised, result.isolation, where)
    if not refusal:
        return result
    return Result(
        verdict=Verdict.INFRA_ERROR,
        runtime=result.runtime,
        isolation=result.isolation,
        detail=f"the {result.verdict.value} judged by {where} does not stand: {refusal}",
    )
