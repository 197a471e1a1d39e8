"""Result cache: keys cover everything that can change a verdict, writes are atomic, corrupt
entries are misses, engine failures are never remembered."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

import pytest

import code_eval_taskpack.execution.caches.results as cache_mod
from code_eval_taskpack.execution.caches.files import default_cache_dir
from code_eval_taskpack.execution.caches.results import ResultCache, job_key
from code_eval_taskpack.execution.types import CompileResult, Job, Result, Verdict
from code_eval_taskpack.execution.types import TestCase as Case
from code_eval_taskpack.execution.types import TestResult as CaseResult

JOB = Job(
    language="Python 3",
    source_code="print(int(input()) * 2)\n",
    tests=(Case("2\n", ("4",)), Case("5\n", ("10",))),
    time_limit_s=2.0,
    memory_limit_mb=256,
    id="job-1",
)
FP = "python3|/usr/bin/python3|3.11.7"


def _result(verdict: Verdict = Verdict.PASSED) -> Result:
    return Result(
        verdict=verdict,
        tests=[CaseResult(verdict=verdict, time_s=0.02, memory_mb=9.5, stdout="4")],
        compile=CompileResult(ok=True, time_s=0.0),
        isolation={"pid_namespace": True},
        runtime={"name": "Python 3", "version": "3.11.7"},
        id="job-1",
    )


def test_roundtrip_relabels_id_and_marks_cached(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    assert cache.get(JOB, FP) is None
    assert cache.put(JOB, FP, _result())
    twin = dataclasses.replace(JOB, id="job-2")
    got = cache.get(twin, FP)
    assert got is not None
    assert got.id == "job-2" and got.cached
    assert got.verdict is Verdict.PASSED
    assert got.tests[0].memory_mb == 9.5 and got.tests[0].stdout == "4"
    assert got.runtime == {"name": "Python 3", "version": "3.11.7"}
    assert cache.stats.to_dict() == {"hits": 1, "misses": 1, "stores": 1, "corrupt": 0}


def test_runtime_object_fingerprint(tmp_path: Path) -> None:
    class Runtime:
        def fingerprint(self) -> str:
            return FP

    assert job_key(JOB, Runtime()) == job_key(JOB, FP)


@pytest.mark.parametrize(
    "change",
    [
        {"source_code": "print(int(input()) * 3)\n"},
        {"tests": (Case("2\n", ("4",)),)},
        {"tests": (Case("2\n", ("4", "4.0")), Case("5\n", ("10",)))},
        {"time_limit_s": 1.0},
        {"memory_limit_mb": 512},
        {"comparator": "execeval"},
        {"stop_on_first_fail": False},
    ],
)
def test_key_covers_every_verdict_input(change: dict[str, object]) -> None:
    assert job_key(dataclasses.replace(JOB, **change), FP) != job_key(JOB, FP)  # type: ignore[arg-type]


def test_key_covers_runtime_and_engine_version(monkeypatch: pytest.MonkeyPatch) -> None:
    base = job_key(JOB, FP)
    assert job_key(JOB, FP + "-other-build") != base
    monkeypatch.setattr(cache_mod, "ENGINE_VERSION", "999")
    assert job_key(JOB, FP) != base


def test_key_ignores_id_and_language_alias_spelling() -> None:
    assert job_key(dataclasses.replace(JOB, id="x"), FP) == job_key(JOB, FP)
    # The runtime fingerprint, not the spelling of the language, identifies the toolchain.
    assert job_key(dataclasses.replace(JOB, language="Python"), FP) == job_key(JOB, FP)


def test_older_engine_entries_are_not_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = ResultCache(tmp_path)
    cache.put(JOB, FP, _result())
    monkeypatch.setattr(cache_mod, "ENGINE_VERSION", cache_mod.ENGINE_VERSION + ".next")
    assert cache.get(JOB, FP) is None


def test_infra_errors_are_never_cached(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    assert not cache.put(JOB, FP, _result(Verdict.INFRA_ERROR))
    mixed = _result(Verdict.WRONG_ANSWER)
    mixed.tests.append(CaseResult(verdict=Verdict.INFRA_ERROR))
    assert not cache.put(JOB, FP, mixed)
    assert cache.get(JOB, FP) is None
    assert not list(tmp_path.rglob("*.json"))


@pytest.mark.parametrize("verdict", [v for v in Verdict if v is not Verdict.INFRA_ERROR])
def test_every_program_verdict_is_cached(tmp_path: Path, verdict: Verdict) -> None:
    cache = ResultCache(tmp_path)
    assert cache.put(JOB, FP, _result(verdict))
    got = cache.get(JOB, FP)
    assert got is not None and got.verdict is verdict


def test_sharded_layout_and_no_temporary_files(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    cache.put(JOB, FP, _result())
    key = job_key(JOB, FP)
    path = tmp_path / key[:2] / f"{key[2:]}.json"
    assert path.is_file()
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    assert json.loads(path.read_text())["key"] == key


@pytest.mark.parametrize(
    "garbage",
    ["", "{", "not json", "[]", '{"key": "other"}', "null", '{"key": "KEY", "engine": "1"}'],
)
def test_corrupt_entry_is_a_miss_and_is_repaired(tmp_path: Path, garbage: str) -> None:
    cache = ResultCache(tmp_path)
    key = job_key(JOB, FP)
    path = cache.path_for(key)
    path.parent.mkdir(parents=True)
    path.write_text(garbage.replace("KEY", key))
    assert cache.get(JOB, FP) is None
    assert cache.stats.corrupt == 1
    assert cache.put(JOB, FP, _result())
    got = cache.get(JOB, FP)
    assert got is not None and got.verdict is Verdict.PASSED


def test_unwritable_cache_does_not_raise(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = ResultCache(blocker / "cache")  # a file where a directory should be
    assert not cache.put(JOB, FP, _result())
    assert cache.get(JOB, FP) is None


def test_odd_text_survives(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    res = _result()
    res.tests[0].stdout = "caf\u00e9 \udcff \x00"  # lone surrogate from undecodable bytes
    assert cache.put(JOB, FP, res)
    got = cache.get(JOB, FP)
    assert got is not None and got.tests[0].stdout == res.tests[0].stdout


def test_concurrent_writers_and_readers(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(20):
                cache.put(JOB, FP, _result())
                got = cache.get(JOB, FP)
                assert got is None or got.verdict is Verdict.PASSED
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.stats.corrupt == 0
    assert len(list(tmp_path.rglob("*"))) == 2  # one shard directory, one entry


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODE_EVAL_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "exec"
    monkeypatch.delenv("CODE_EVAL_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / ".cache" / "code_eval_taskpack" / "exec"
