"""The judge-speed workloads (bench/workload/) and the bench's driver.

The files must be what the generator writes, every language must have 106 distinct programs, and
the recorded verdicts must be what the engine gives: a few are re-judged here (the bench checks
all of them on every run)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from code_eval_taskpack.execution.types import Verdict
from tests.conftest import ROOT, require, require_runtime

BENCH = ROOT / "bench"


def _module(name: str) -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module(name)


wl = _module("judge_workload")
driver = _module("judge_driver")


@pytest.fixture
def data() -> Path:
    path: Path = wl.SHARED_DATA
    require(path.is_dir(), f"shared data folder {path} is missing")
    return path


def _own() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = wl.read_jsonl(wl.EQUAL_FILE)
    return rows


def test_own_programs_are_well_formed_and_distinct() -> None:
    rows = _own()
    uids = set(wl.problems().values())
    assert all(set(r) == {"id", "src_uid", "lang_cluster", "kind", "source_code"} for r in rows), (
        rows[0].keys()
    )
    assert all(r["src_uid"] in uids and r["source_code"].strip() for r in rows)
    assert len({r["id"] for r in rows}) == len(rows)
    assert Counter(r["lang_cluster"] for r in rows) == {
        c: wl.PER_LANGUAGE for c in wl.OWN_LANGUAGES.values()
    }
    assert wl.distinct_problems(rows) == {}
    # correct and incorrect programs for a dozen or more problems in each language
    for cluster in wl.OWN_LANGUAGES.values():
        mine = [r for r in rows if r["lang_cluster"] == cluster]
        assert len({r["src_uid"] for r in mine if r["kind"] == "ok"}) >= 12
        assert {"ok", "wa", "re", "tle", "ce"} <= {r["kind"] for r in mine}


def test_files_are_what_the_generator_writes(data: Path) -> None:
    for path, text in wl.generated().items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name}: run --write"


def test_equal_workload_has_106_distinct_programs_in_every_language(data: Path) -> None:
    programs = wl.equal_workload(data)
    languages = ("C", "C#", "C++", "Go", "Java", "Javascript", "Kotlin", "PHP", "Python", "Ruby")
    assert Counter(p["lang_cluster"] for p in programs) == dict.fromkeys((*languages, "Rust"), 106)
    assert wl.distinct_problems(programs) == {}
    sampled = wl.read_jsonl(wl.SAMPLED_FILE)
    per = Counter((s["src_uid"], s["lang_cluster"]) for s in sampled)
    assert set(per.values()) == {wl.SAMPLES}
    # near-identical samples: some repeat exactly, none is the only one of its group
    assert len({(s["lang_cluster"], s["source_code"]) for s in sampled}) < len(sampled)


def test_every_program_has_a_recorded_verdict(data: Path) -> None:
    recorded = wl.recorded_verdicts()
    ids = {p["id"] for p in wl.equal_workload(data)} | {
        s["id"] for s in wl.read_jsonl(wl.SAMPLED_FILE)
    }
    assert ids == set(recorded)
    assert {Verdict(v) for v in recorded.values()} >= {
        Verdict.PASSED,
        Verdict.WRONG_ANSWER,
        Verdict.RUNTIME_ERROR,
        Verdict.COMPILATION_ERROR,
        Verdict.TIME_LIMIT_EXCEEDED,
    }


def test_recorded_verdicts_are_what_the_engine_gives(data: Path, tmp_path: Path) -> None:
    """A subset re-judged in process: each kind but the time-outs (seconds each)."""
    for name in ("Java", "Kotlin", "Javascript"):
        require_runtime(name)
    wanted = (
        "Java/hello.ok.v1",
        "Java/display.ce.v0",
        "Kotlin/stock.wa.v0",
        "Javascript/kefa.re.v2",
        "Javascript/watermelon.wa.v0",
    )
    rows = [r for r in _own() if r["id"] in wanted]
    assert len(rows) == len(wanted)
    out = driver.judge_jobs(wl.jobs_for(rows, data), workers=2, cache_dir=str(tmp_path / "c"))
    recorded = wl.recorded_verdicts()
    assert {r["id"]: r["verdict"] for r in out["results"]} == {k: recorded[k] for k in wanted}
    assert not any(r["cached"] or r["compile_cached"] for r in out["results"])


def test_driver_runs_two_programs_in_its_own_process(data: Path, tmp_path: Path) -> None:
    require_runtime("Javascript")
    rows = [r for r in _own() if r["id"] in ("Javascript/hello.ok.v0", "Javascript/socks.wa.v0")]
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps(wl.jobs_for(rows, data)), encoding="utf-8")
    out = tmp_path / "out.json"
    argv = [sys.executable, str(BENCH / "judge_driver.py"), "--jobs", str(jobs), "--out", str(out)]
    argv += ["--workers", "2", "--cache", str(tmp_path / "cache")]
    subprocess.run(argv, check=True, capture_output=True, timeout=120)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [r["verdict"] for r in report["results"]] == ["PASSED", "WRONG_ANSWER"]
    assert report["package"] == driver.DEFAULT_PACKAGE and report["wall_s"] > 0
    assert report["children_cpu_s"] > 0 and all(r["run_s"] > 0 for r in report["results"])


def test_judge_speed_help() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "judge_speed.py"), "--help"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    for word in ("--quick", "--only", "floor", "equal", "sampled", "cache"):
        assert word in proc.stdout


def test_floor_runs_the_registry_command_lines_bare() -> None:
    """The floor fills every placeholder of the registry's argv (e.g. Ruby's prelude)."""
    for name in ("Ruby", "C"):
        require_runtime(name)
    floors = _module("judge_speed").floor_costs(["Ruby", "C"], reps=1)
    assert set(floors) == {"Ruby", "C"}
    assert floors["C"]["compile_cpu"] > 0 and all(f["wall"] > 0 for f in floors.values())
