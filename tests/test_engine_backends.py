"""The backend seam: the local backend keeps today's cache keys, a backend defined in the tests
judges real programs through `Engine(backend=...)`, and the isolation policy is decided once for
every backend against the layers it declares."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from code_eval_taskpack.execution.backends import (
    LocalBackend,
    Session,
    SessionBackend,
    backend_names,
    get_backend,
    register_backend,
)
from code_eval_taskpack.execution.caches.results import ResultCache, job_key
from code_eval_taskpack.execution.cli.main import main as cli_main
from code_eval_taskpack.execution.judge.engine import Engine
from code_eval_taskpack.execution.languages.registry import resolve
from code_eval_taskpack.execution.run.runner import judge_with
from code_eval_taskpack.execution.types import Job, TestCase, Verdict
from tests.recording_backend import RecordingBackend

ECHO_DOUBLE = "print(int(input()) * 2)\n"
C_DOUBLE = '#include <stdio.h>\nint main(void){int x; scanf("%d",&x); printf("%d\\n",2*x);}\n'
TESTS = (TestCase("21\n", ("42",)), TestCase("5\n", ("10",)))


def _job(lang: str, src: str, jid: str = "") -> Job:
    return Job(language=lang, source_code=src, tests=TESTS, id=jid, stop_on_first_fail=False)


class _FixedFingerprint:
    """A runtime whose fingerprint is fixed, so the key below does not depend on this host."""

    def fingerprint(self) -> str:
        return "Python 3|/usr/bin/python3|3.11.2|0123456789ab"


def test_local_cache_key_is_unchanged() -> None:
    """Computed with the engine before backends existed: existing caches stay valid."""
    job = Job("Python 3", ECHO_DOUBLE.replace(" * 2", "*2"), (TestCase("21\n", ("42",)),), id="k")
    runtime = _FixedFingerprint()
    local = LocalBackend()
    fp = local.runtime_fingerprint(runtime)  # type: ignore[arg-type]
    assert fp == runtime.fingerprint()
    assert job_key(job, fp) == "b5cc0f7b771a8719e278821bcad5f4ba6ca39d85004de5d2311559773a3e8f9e"
    real = resolve("Python 3")
    assert Engine(backend="local").key(job, real) == job_key(job, real)
    # a non-local backend adds its identity, so its results never answer for the local one
    other = Engine(backend=RecordingBackend()).key(job, real)
    assert other != job_key(job, real)
    assert RecordingBackend().runtime_fingerprint(real) == f"recording|{real.fingerprint()}"


def test_registry_names_and_errors() -> None:
    assert "local" in backend_names() and "recording" in backend_names()
    assert get_backend("local") is get_backend("local")
    inst = RecordingBackend()
    assert get_backend(inst) is inst
    with pytest.raises(ValueError, match="unknown backend 'nowhere'"):
        Engine(backend="nowhere")
    with pytest.raises(ValueError, match="already registered"):
        register_backend("local", LocalBackend)
    with pytest.raises(ValueError, match="plain word"):
        register_backend("a/b", LocalBackend)


class _Configured(LocalBackend):
    name = "configured"

    def __init__(self, where: str = "here") -> None:
        self.where = where


def test_backend_options_build_one_instance_per_option_set() -> None:
    register_backend("configured", _Configured, replace=True)
    a = get_backend("configured", {"where": "there"})
    assert isinstance(a, _Configured) and a.where == "there"
    assert get_backend("configured", {"where": "there"}) is a
    plain = get_backend("configured")
    assert plain is not a and isinstance(plain, _Configured) and plain.where == "here"
    with pytest.raises(ValueError, match="bad options"):
        get_backend("configured", {"colour": "red"})
    with pytest.raises(ValueError, match="not an instance"):
        get_backend(a, {"where": "x"})


def test_recording_backend_judges_real_programs(tmp_path: Path) -> None:
    """The runner asks the backend for every session and command: one session per program,
    its compile and each test's run go through it, and verdicts equal the local backend's."""
    backend = RecordingBackend()
    jobs = [
        _job("Python 3", ECHO_DOUBLE, "py-ok"),
        _job("Python 3", ECHO_DOUBLE.replace("2", "3"), "py-wa"),
        _job("C", C_DOUBLE, "c-ok"),
        _job("C", "int main(void){ return }", "c-ce"),
    ]
    cache = ResultCache(tmp_path / "cache")
    engine = Engine(workers=2, backend=backend, cache=cache)
    got = engine.judge_many(jobs)
    local = Engine(workers=2, backend="local").judge_many(jobs)
    assert [r.verdict for r in got] == [r.verdict for r in local]
    assert [r.verdict for r in got] == [
        Verdict.PASSED,
        Verdict.WRONG_ANSWER,
        Verdict.PASSED,
        Verdict.COMPILATION_ERROR,
    ]
    for r, loc in zip(got, local, strict=True):
        assert r.isolation["backend"] == "recording"
        assert loc.isolation["backend"] == "local"
        assert [t.verdict for t in r.tests] == [t.verdict for t in loc.tests]
    calls = backend.calls
    assert len(calls.opened) == 4 and calls.closed == 4  # one session per program, all closed
    runs = [p for p, _ in calls.runs]
    # 2 Python programs x 2 tests; C: compile (+ a tar save for the compile cache) + 2 tests,
    # and the failing compile only
    assert runs.count("run") == 6
    assert runs.count("compile") >= 2
    # cached under the backend's own keys: a second engine answers from the cache, no session
    again = Engine(workers=1, backend=backend, cache=cache).judge(jobs[0])
    assert again.verdict is Verdict.PASSED and len(calls.opened) == 4
    with_local = Engine(workers=1, backend="local", cache=cache)
    assert with_local.cache is not None
    assert with_local.cache.get_key(with_local.key(jobs[0], resolve("Python 3"))) is None


class _PromisingBackend(SessionBackend):
    """Promises a layer no session of it reports: `required` must refuse, in one place."""

    name = "promising"
    required_layers = ("private_workdir", "gvisor")

    def _open(
        self,
        files: Mapping[str, bytes],
        purposes: Sequence[str],
        policy: str,
        ro_paths: Sequence[str],
    ) -> Session:
        return LocalBackend()._open(files, purposes, "best-effort", ro_paths)


def test_policy_is_checked_against_the_declared_layers() -> None:
    job = _job("Python 3", ECHO_DOUBLE)
    runtime = resolve("Python 3")
    refused = judge_with(runtime, job, isolation="required", backend=_PromisingBackend())
    assert refused.verdict is Verdict.INFRA_ERROR
    assert "gvisor" in refused.detail and "backend promising" in refused.detail
    assert not refused.tests  # nothing ran
    ran = judge_with(runtime, job, isolation="best-effort", backend=_PromisingBackend())
    assert ran.verdict is Verdict.PASSED
    assert ran.isolation["backend"] == "promising"


def test_cli_backend_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "a.py"
    src.write_text(ECHO_DOUBLE)
    tests = tmp_path / "tests.json"
    tests.write_text(json.dumps([{"input": "4\n", "output": ["8"]}]))
    argv = ["run", "--language", "Python 3", "--source", str(src), "--tests", str(tests)]
    assert cli_main([*argv, "--backend", "nowhere"]) == 2
    assert "unknown backend 'nowhere'" in capsys.readouterr().err
    assert cli_main([*argv, "--backend", "recording"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["verdict"] == "PASSED"
    assert out["isolation"]["backend"] == "recording"


def test_benchmark_settings_choose_the_backend() -> None:
    """`exec_backend` in lm-eval metadata reaches the engine; a wrong name fails early."""
    from code_eval_taskpack.utils.judging import CaseBuilder
    from lm_eval_tasks.xcodeeval.judging import ExecSettings, judge, settings_from

    assert settings_from({}).exec_backend == "local"
    settings = settings_from({"exec_backend": "recording", "xcodeeval_exec_cache": "none"})
    assert settings.exec_backend == "recording"
    assert ExecSettings.thaw(settings.freeze()) == settings
    with pytest.raises(ValueError, match="unknown backend 'nowhere'"):
        settings_from({"exec_backend": "nowhere"})
    tests = CaseBuilder()([{"input": "3\n", "output": ["6"]}])
    prog = settings.program("Python 3", ECHO_DOUBLE, tests, 2.0, 256, key="p")
    records = judge([prog], settings, progress=lambda done, total: None)
    assert records[0]["verdict"] == "PASSED"


def test_suites_judge_on_the_chosen_backend(backend_name: str) -> None:
    """`pytest --backend NAME` reaches every `Engine()` of the engine suites."""
    r = Engine(workers=1).judge(_job("Python 3", ECHO_DOUBLE))
    assert r.verdict is Verdict.PASSED
    assert r.isolation["backend"] == backend_name


def test_repository_graders_by_name() -> None:
    """Graders come from a registry with typed configurations, not `if grader == ...`."""
    from code_eval_taskpack.execution.repo_tests.local import LocalConfig
    from code_eval_taskpack.execution.repo_tests.swebench_backend import SwebenchConfig
    from lm_eval_tasks.code_infilling.grading import (
        GRADER_REGISTRY,
        GradingSettings,
        LocalGrader,
        SwebenchGrader,
        grader_for,
    )
    from lm_eval_tasks.code_infilling.settings import GRADERS

    assert set(GRADER_REGISTRY) == {"local", "swebench"} == set(GRADERS)
    local = GradingSettings.from_kwargs({"grader": "local", "repos_dir": "/nowhere"})
    grader = grader_for(local)
    assert isinstance(grader, LocalGrader)
    assert isinstance(grader.config(local), LocalConfig)
    assert grader.preflight([], GradingSettings(grader="local")) == [
        'the local grader needs "repos_dir" (a folder of <owner>__<name> git checkouts)'
    ]
    swe = GradingSettings.from_kwargs({})
    assert isinstance(grader_for(swe), SwebenchGrader)
    assert isinstance(SwebenchGrader().config(swe), SwebenchConfig)
    with pytest.raises(ValueError, match="unknown grader 'docker'"):
        grader_for(GradingSettings(grader="docker"))
    with pytest.raises(ValueError, match="docker"):
        GradingSettings.from_kwargs({"grader": "docker"})
