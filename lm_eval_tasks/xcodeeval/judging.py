"""How xCodeEval judges candidate programs: its limits, comparator and cache choices.

Both the lm-eval tasks (in their judging filter) and the scoring CLI
(`python -m lm_eval_tasks.xcodeeval.score`) come here, so the choice between our comparator with
the problem's limits and ExecEval's exists once; the batch itself is `utils.judging`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.types import TestCase
from code_eval_taskpack.utils.judging import Program, cache_dir, judge_programs
from code_eval_taskpack.utils.settings import Frozen, parse_settings
from lm_eval_tasks.xcodeeval import settings as xs

log = logging.getLogger("xcodeeval")


# ExecEval's limits when a request names none (the xCodeEval scripts never do): its default
# `cpu` of 2 seconds, applied as a wall-clock timeout of cpu x the runtime's time-limit factor,
# and an RLIMIT_AS of 2 GiB. ExecEval ignores the problem's own time and memory limits.
EXECEVAL_TIME_LIMIT_S = 2.0
EXECEVAL_MEMORY_MB = 2048
# Programs run only with every isolation layer the backend promises (the engine's default).
ISOLATION_POLICY = "required"


@dataclass(frozen=True)
class ExecSettings(Frozen):
    """How programs are judged.

    Default: our comparator, and the problem's own time and memory limits (the engine multiplies
    the time by the runtime's factor). `execeval_compat` reproduces what ExecEval applied to the
    paper's numbers: its output comparison (flaws included) and its limits, which ignore the
    problem: 2 s times the runtime's factor (ExecEval's factors are the engine's) and 2048 MB.
    Our engine still measures CPU time and enforces memory with a cgroup (see the README).
    Tests run until the first failure in both modes, as ExecEval does.
    """

    execeval_compat: bool = False
    workers: int | None = None
    cache: str | None = "default"  # "default": the engine's cache dir; None: no cache; else a dir
    exec_backend: str = "local"  # the engine backend programs run on (execution.backends)
    #: the backend option settings given (`exec_servers`...: `settings.BACKEND_OPTION_SETTINGS`)
    exec_options: dict[str, str] = field(default_factory=dict)

    def backend_options(self) -> dict[str, str]:
        """The options of `exec_backend` (`get_backend(name, options)`); one meant for another
        backend is a ValueError, never silently ignored."""
        out = {}
        for setting, option, backends in xs.BACKEND_OPTION_SETTINGS:
            value = self.exec_options.get(setting.key)
            if value is None:
                continue
            if self.exec_backend not in backends:
                raise ValueError(
                    f"setting {setting.key!r} applies to exec_backend "
                    f"{' or '.join(repr(b) for b in backends)}, not {self.exec_backend!r}"
                )
            out[option] = str(value)
        return out

    @property
    def comparator(self) -> str:
        return "execeval" if self.execeval_compat else "default"

    def limits(self, time_limit_s: float, memory_limit_mb: int) -> tuple[float, int]:
        """(time limit before the runtime factor, memory limit in MB) of a job for a problem
        with the given limits."""
        if self.execeval_compat:
            return EXECEVAL_TIME_LIMIT_S, EXECEVAL_MEMORY_MB
        return time_limit_s, memory_limit_mb

    def program(
        self,
        language: str,
        source_code: str,
        tests: tuple[TestCase, ...],
        time_limit_s: float,
        memory_limit_mb: int,
        key: str,
    ) -> Program:
        """The engine job of one candidate for a problem with the given limits: limits and
        comparator as chosen here, tests run until the first failure (as ExecEval does).
        ExecEval-compatible, every `\r` of the source, the inputs and the expected outputs is
        removed first, as ExecEval does (xCodeEval's hidden tests have CRLF line ends: a
        program that keeps the `\r` it reads fails here and passed there)."""
        time_s, memory_mb = self.limits(time_limit_s, memory_limit_mb)
        if self.execeval_compat:
            source_code = source_code.replace("\r", "")
            tests = _lf_tests(tests)
        return Program(
            language=language,
            source_code=source_code,
            tests=tests,
            time_limit_s=time_s,
            memory_limit_mb=memory_mb,
            stop_on_first_fail=True,
            comparator=self.comparator,
            id=key,
        )

    def engine_cache(self) -> Path | None:
        return cache_dir(self.cache)

    def limits_note(self) -> str:
        if self.execeval_compat:
            return (
                f"ExecEval's: {EXECEVAL_TIME_LIMIT_S:g} s x the runtime's time factor, "
                f"{EXECEVAL_MEMORY_MB} MB, whatever the problem's"
            )
        return "the problem's: its time limit x the runtime's time factor, its memory limit"

    def protocol(self) -> dict[str, Any]:
        """How programs are judged, as the results file records it (`lm_eval_tasks.protocol`)."""
        cache = self.engine_cache()
        return {
            "comparator": self.comparator,
            "limits": self.limits_note(),
            "stop_on_first_failure": True,
            "backend": self.exec_backend,
            "backend_options": self.backend_options(),
            "isolation_policy": ISOLATION_POLICY,
            "workers": self.workers,
            "verdict_cache": None if cache is None else str(cache),
        }


#: the `\r`-free copy of each tests tuple (every sample of a problem shares its tuple, and so
#: its copy): id -> (the tuple, kept alive so its id stays unique, its copy); bounded
_LF_TESTS: dict[int, tuple[tuple[TestCase, ...], tuple[TestCase, ...]]] = {}
_LF_TESTS_MAX = 4096


def _lf_tests(tests: tuple[TestCase, ...]) -> tuple[TestCase, ...]:
    hit = _LF_TESTS.get(id(tests))
    if hit is None or hit[0] is not tests:
        if len(_LF_TESTS) >= _LF_TESTS_MAX:
            _LF_TESTS.clear()
        hit = (tests, tuple(without_cr(t) for t in tests))
        _LF_TESTS[id(tests)] = hit
    return hit[1]


def without_cr(test: TestCase) -> TestCase:
    """`test` with every `\r` removed from its input and expected outputs (ExecEval's
    `convert_crlf_to_lf`)."""
    if "\r" not in test.input and not any("\r" in o for o in test.output):
        return test
    return TestCase(test.input.replace("\r", ""), tuple(o.replace("\r", "") for o in test.output))


def settings_from(kwargs: Mapping[str, Any]) -> ExecSettings:
    """`xcodeeval_execeval_compat`, `xcodeeval_workers`, `xcodeeval_exec_cache` (a directory,
    or `none` to judge everything afresh) and `exec_backend` from metadata or the environment."""
    from code_eval_taskpack.execution.backends import get_backend

    options = tuple(s for s, _, _ in xs.BACKEND_OPTION_SETTINGS)
    values = parse_settings(
        (xs.EXECEVAL_COMPAT, xs.WORKERS, xs.EXEC_CACHE, xs.EXEC_BACKEND, *options), kwargs
    )
    settings = ExecSettings(
        values[xs.EXECEVAL_COMPAT.key],
        values[xs.WORKERS.key],
        values[xs.EXEC_CACHE.key],
        values[xs.EXEC_BACKEND.key],
        {s.key: str(values[s.key]) for s in options if values[s.key] is not None},
    )
    # an unknown name or a bad option fails here, naming what is accepted
    get_backend(settings.exec_backend, settings.backend_options())
    return settings


def judge(
    programs: Sequence[Program],
    settings: ExecSettings,
    label: str = "xcodeeval",
    progress: Callable[..., Any] | None = None,
) -> list[dict[str, Any]]:
    """Verdict records ({verdict, failed_test, tests_run, detail, stderr, runtime, limits}) of
    `programs` (built by `ExecSettings.program`), in input order, from one engine batch."""
    return judge_programs(
        programs,
        workers=settings.workers,
        cache=settings.engine_cache(),
        comparator=settings.comparator,
        backend=settings.exec_backend,
        backend_options=settings.backend_options(),
        isolation=ISOLATION_POLICY,
        label=label,
        limits_note=f"limits {settings.limits_note()}",
        progress=progress,
        logger=log,
    )
