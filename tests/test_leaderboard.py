"""Leaderboard runs through lm-eval's Python API: kill mid-run, rerun, nothing done twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

CLOZE_DATA = (
    ROOT / "tests/fixtures/clozetest/remote/microsoft/CodeXGLUE/main/Code-Code"
    "/ClozeTesting-maxmin/data/cloze-maxmin"
)


def _log_call(model: str) -> None:
    with open(os.environ["LB_CALLS"], "a") as f:
        f.write(model + "\n")


def fast(kind: str, context: str, extra: Any) -> Any:
    _log_call("fast")
    return "A" if kind == "generate" else -1.0


def gated(kind: str, context: str, extra: Any) -> Any:
    """Answers only once the gate file exists: the first run is killed while waiting here."""
    _log_call("gated")
    while not Path(os.environ["LB_GATE"]).exists():
        time.sleep(0.2)
    return "B" if kind == "generate" else -1.0


def _board(tmp_path: Path) -> Path:
    board = {
        "output": "runs",
        "imports": ["tests.lm_fakes"],
        "models": [
            {"name": "fast", "model": "scripted", "model_args": "script=tests.test_leaderboard:fast"},
            {"name": "gated", "model": "scripted", "model_args": "script=tests.test_leaderboard:gated"},
            {"name": "broken", "model": "scripted", "model_args": "script=tests.no_such_module:fn"},
        ],
        "task_sets": [
            {
                "name": name,
                "tasks": [task],
                "metadata": {"clozetest_data_dir": str(CLOZE_DATA), "clozetest_predict_only": True},
                "limit": 2,
            }
            for name, task in (("cloze-py", "clozetest_maxmin_python"), ("cloze-go", "clozetest_maxmin_go"))
        ],
    }  # fmt: skip
    path = tmp_path / "board.yaml"
    path.write_text(json.dumps(board))  # JSON is YAML
    return path


def _start(board: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "lm_eval_tasks.reporting.leaderboard", str(board)],
        cwd=ROOT,
        env=env,
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, killed as a whole
    )


def test_kill_and_resume_runs_each_pair_once(tmp_path: Path) -> None:
    board = _board(tmp_path)
    calls = tmp_path / "calls.txt"
    gate = tmp_path / "gate"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LB_CALLS": str(calls),
        "LB_GATE": str(gate),
        "CODE_EVAL_CACHE": str(tmp_path / "cache"),
    }
    runs = tmp_path / "runs"
    first = _start(board, env, tmp_path / "first.log")
    try:
        deadline = time.monotonic() + 900
        while "gated" not in (calls.read_text() if calls.exists() else ""):
            assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the run never reached the gated model"
            time.sleep(0.5)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    done_first = sorted(p.parent.relative_to(runs).as_posix() for p in runs.glob("*/*/pair.json"))
    assert done_first == ["fast/cloze-go", "fast/cloze-py"]
    assert not (runs / "gated" / "cloze-py").exists()  # the killed pair left no final folder
    assert list((runs / "gated").glob(".cloze-py.partial-*"))  # only its temporary folder
    fast_calls = calls.read_text().splitlines().count("fast")
    assert fast_calls == 4  # 2 documents x 2 task sets

    gate.touch()
    second = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.reporting.leaderboard", str(board)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    out = second.stdout
    assert second.returncode == 1, out + second.stderr[-3000:]  # the broken model failed
    assert "[1/6] fast x cloze-py: already done, skipped" in out
    assert "[2/6] fast x cloze-go: already done, skipped" in out
    assert "gated x cloze-py: done" in out and "gated x cloze-go: done" in out
    assert "FAILED broken x cloze-py" in out and "FAILED broken x cloze-go" in out
    assert "2 run, 2 already done, 2 failed" in out
    assert calls.read_text().splitlines().count("fast") == fast_calls  # not rerun
    assert not list(runs.glob("*/.*.partial-*"))  # the stale temporary folder was removed
    for pair in ("fast/cloze-py", "gated/cloze-go"):
        info = json.loads((runs / pair / "pair.json").read_text())
        assert info["status"] == "done"
        assert info["versions"]["lm_eval"]
        assert "Python 3" in info["versions"]["toolchains"]
        results = list((runs / pair).glob("results_*.json"))
        samples = list((runs / pair).glob("samples_*.jsonl"))
        assert len(results) == 1 and len(samples) == 1
        assert json.loads(results[0].read_text())["config"]["limit"] == 2
        logged = [json.loads(x) for x in samples[0].read_text().splitlines()]
        assert {s["doc_id"] for s in logged} == {0, 1}  # --limit 2 (one line per filter)

    # the report reads the leaderboard folder: one row per model that ran
    report = subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.reporting.report", str(runs), "--out", str(tmp_path / "rep")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=True,
    )  # fmt: skip
    table = json.loads((tmp_path / "rep" / "leaderboard.json").read_text())
    assert sorted(r["model"] for r in table["rows"]) == ["fast", "gated"]
    assert report.stdout.strip().endswith("report.md")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("models: []\n", "missing field 'output'"),
        ("output: x\nmodels: [{name: a}]\ntask_sets: [{name: t, tasks: [x]}]\n", "models[0]: missing field 'model'"),
        ("output: x\nmodels: [{name: 'a b', model: hf}]\ntask_sets: [{name: t, tasks: [x]}]\n", "name 'a b'"),
        ("output: x\nmodels: [{name: a, model: hf}]\ntask_sets: [{name: t, tasks: []}]\n", "task_sets[0]: field 'tasks'"),
        ("output: x\nmodels: [{name: a, model: hf, batch: 2}]\ntask_sets: [{name: t, tasks: [x]}]\n", "unknown fields ['batch']"),
    ],
)  # fmt: skip
def test_bad_leaderboard_files_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    from lm_eval_tasks.reporting.leaderboard import LeaderboardError, load

    path = tmp_path / "b.yaml"
    path.write_text(text)
    with pytest.raises(LeaderboardError) as err:
        load(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_dry_run_checks_task_names_and_suggests_the_nearest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lm_eval_tasks.reporting.leaderboard import main

    def board(task: str) -> Path:
        path = tmp_path / "board.yaml"
        path.write_text(
            json.dumps(
                {
                    "output": "runs",
                    "models": [{"name": "m", "model": "hf"}],
                    "task_sets": [{"name": "t", "tasks": ["clozetest_maxmin_go", task]}],
                }
            )
        )
        return path

    assert main([str(board("xcodeeval_synth_greedy_pyhton")), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "unknown task 'xcodeeval_synth_greedy_pyhton'" in err
    assert "did you mean 'xcodeeval_synth_greedy_python'?" in err and "lm-eval ls tasks" in err
    assert main([str(board("xcodeeval_synth_greedy")), "--dry-run"]) == 0
    assert "would run clozetest_maxmin_go, xcodeeval_synth_greedy" in capsys.readouterr().out
