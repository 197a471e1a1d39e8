"""The engine's data model: one job in, one result out.

Everything that crosses the engine's boundary (Python API, CLI, batch files, cache) is one of
these dataclasses, so every backend and every benchmark speaks the same language.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from .limits import RunOverrides


class Verdict(str, enum.Enum):
    """Outcome of one test or one program.

    INFRA_ERROR is the engine's own failure (a missing toolchain, a sandbox that could not be
    built): it is never the model's fault, so scorers must surface it rather than count it as
    a failed sample.
    """

    PASSED = "PASSED"
    WRONG_ANSWER = "WRONG_ANSWER"
    TIME_LIMIT_EXCEEDED = "TIME_LIMIT_EXCEEDED"
    MEMORY_LIMIT_EXCEEDED = "MEMORY_LIMIT_EXCEEDED"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    OUTPUT_LIMIT_EXCEEDED = "OUTPUT_LIMIT_EXCEEDED"
    COMPILATION_ERROR = "COMPILATION_ERROR"
    INFRA_ERROR = "INFRA_ERROR"

    def __str__(self) -> str:
        return self.value


#: the six outcomes ExecEval reports (its protocol has no output-limit or infrastructure verdict)
EXECEVAL_VERDICTS = (
    Verdict.PASSED,
    Verdict.WRONG_ANSWER,
    Verdict.TIME_LIMIT_EXCEEDED,
    Verdict.RUNTIME_ERROR,
    Verdict.COMPILATION_ERROR,
    Verdict.MEMORY_LIMIT_EXCEEDED,
)


@dataclass(frozen=True)
class TestCase:
    """One stdin/stdout test; the program passes if its output matches ANY expected output."""

    __test__ = False  # not a pytest test class despite the name

    input: str
    output: tuple[str, ...]

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TestCase:
        out = raw.get("output", [])
        if isinstance(out, str):
            out = [out]
        return cls(input=str(raw.get("input", "")), output=tuple(str(o) for o in out))

    def to_dict(self) -> dict[str, Any]:
        return {"input": self.input, "output": list(self.output)}


@dataclass(frozen=True)
class Job:
    """A program to judge.

    `language` is any accepted name (xCodeEval `lang`, cluster name or alias); the registry
    resolves it. `time_limit_s` is the problem's own limit, before the runtime's time factor.
    """

    language: str
    source_code: str
    tests: tuple[TestCase, ...]
    time_limit_s: float = 2.0
    memory_limit_mb: int = 256
    stop_on_first_fail: bool = True
    comparator: str = "default"  # "default" or "execeval"
    id: str = ""
    overrides: RunOverrides | None = None  # per-test limits replacing the derived ones


@dataclass
class TestResult:
    verdict: Verdict
    time_s: float = 0.0  # CPU time (user + sys) of the test's processes
    wall_s: float = 0.0
    memory_mb: float = 0.0  # peak
    exit_code: int | None = None
    signal: str | None = None  # e.g. "SIGSEGV"
    stdout: str = ""  # truncated for reporting
    stderr: str = ""  # truncated for reporting
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict.value
        return d


@dataclass
class CompileResult:
    ok: bool
    time_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    cached: bool = False
    detail: str = ""
    # compiled by a warm compiler (execution/speedups/warm_compiler.py): `time_s` is then the compile
    # thread's CPU time (no per-program cgroup), `wall_s` its wall time
    warm: bool = False
    wall_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Result:
    """The judgement of one Job. `verdict` is the first failing test's verdict, or PASSED."""

    verdict: Verdict
    tests: list[TestResult] = field(default_factory=list)
    compile: CompileResult | None = None
    isolation: dict[str, Any] = field(default_factory=dict)
    runtime: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    detail: str = ""
    cached: bool = False

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "verdict": self.verdict.value,
            "tests": [t.to_dict() for t in self.tests],
            "compile": self.compile.to_dict() if self.compile else None,
            "isolation": dict(self.isolation),
            "runtime": dict(self.runtime),
            "detail": self.detail,
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Result:
        comp = raw.get("compile")
        return cls(
            verdict=Verdict(raw["verdict"]),
            tests=[
                TestResult(**{**t, "verdict": Verdict(t["verdict"])}) for t in raw.get("tests", [])
            ],
            compile=CompileResult(**comp) if comp else None,
            isolation=dict(raw.get("isolation", {})),
            runtime=dict(raw.get("runtime", {})),
            id=str(raw.get("id", "")),
            detail=str(raw.get("detail", "")),
            cached=bool(raw.get("cached", False)),
        )


def job_from_dict(raw: dict[str, Any]) -> Job:
    """The inverse of `job_to_dict` (the container agent's wire format of a job)."""
    ov = raw.get("overrides")
    return Job(
        language=str(raw["language"]),
        source_code=str(raw["source_code"]),
        tests=tuple(TestCase.from_dict(t) for t in raw.get("tests", [])),
        time_limit_s=float(raw.get("time_limit_s", 2.0)),
        memory_limit_mb=int(raw.get("memory_limit_mb", 256)),
        stop_on_first_fail=bool(raw.get("stop_on_first_fail", True)),
        comparator=str(raw.get("comparator", "default")),
        id=str(raw.get("id", "")),
        overrides=RunOverrides(**ov) if ov else None,
    )


def job_to_dict(job: Job) -> dict[str, Any]:
    return {
        "language": job.language,
        "source_code": job.source_code,
        "tests": [t.to_dict() for t in job.tests],
        "time_limit_s": job.time_limit_s,
        "memory_limit_mb": job.memory_limit_mb,
        "stop_on_first_fail": job.stop_on_first_fail,
        "comparator": job.comparator,
        "id": job.id,
        "overrides": job.overrides.to_dict() if job.overrides else None,
    }
