"""`code-eval judge`: a `--predict_only` run judged afterwards writes the files of an in-harness run.

The same scripted model runs through lm-eval's real CLI twice: (1) in-harness with
--confirm_run_unsafe_code, (2) with --predict_only, then `code-eval judge` (its real command line)
judges what (2) logged. Tasks: xCodeEval synthesis in two languages (Python with 20 samples a
problem, C++ greedy) inside a group, a translation task, and `sg_infilling_qwen_exec` on the
bundled requests rows graded by the local grader. Both runs use the same verdict cache folder,
emptied before the predict-only run, so run (2) provably judges nothing and the judge judges all.

Fields that may differ, and why (everything else must be equal):
- results file: `date`, `start_time`, `end_time`, `total_evaluation_time_seconds` (when each
  evaluation ran and how long it took); `task_hashes` (lm-eval hashes each sample's `doc_hash`,
  see below).
- samples: `doc._protocol`, the key of the task's protocol record, a fresh uuid in every
  process (`lm_eval_tasks.protocol.record`), hence `doc_hash` too (lm-eval's hash of `doc`).
- `configs.<task>.filter_list[].filter[].filter_fn`: lm-eval writes the function's repr, whose
  memory address differs per process (the address is dropped, the name compared).
- the infilling grader's `duration_s` in each outcome, if it reports one (a wall-clock time).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lm_eval_tasks import judge_later
from lm_eval_tasks.code_infilling import bundled
from tests import xcodeeval_support
from tests.conftest import ROOT, TASKS_DIR, require_runtime
from tests.lm_fakes import run_cli

SYNTH = ["xcodeeval_synth_python", "xcodeeval_synth_greedy_cpp"]
TRANSLATE = "xcodeeval_translate_greedy_python"
INFILL = "sg_infilling_qwen_exec"
GROUP = "judge_pair"
TASKS = [GROUP, TRANSLATE, INFILL]
LEAVES = [*SYNTH, TRANSLATE, INFILL]
SCRIPT = "tests.test_judge_later:answer"
MODEL_ARGS = "pretrained=scripted-judge-test"  # a fixed model name (else lm-eval draws one)

TIMES = ("date", "start_time", "end_time", "total_evaluation_time_seconds", "task_hashes")
GROUP_YAML = f"""group: {GROUP}
task: {json.dumps(SYNTH)}
aggregate_metric_list:
  - metric: pass@1
    aggregation: mean
    weight_by_size: false
    filter_list: judge
metadata:
  version: 1.0
"""


def _bundled_row(context: str) -> tuple[int, dict[str, Any]]:
    """The bundled row a FIM prompt was built from (the latest prefix end in it)."""
    best, best_end = None, -1
    for number, row in enumerate(bundled.load_rows()):
        tail = row["prefix"][-200:]
        at = context.rfind(tail)
        if at >= 0 and at + len(tail) > best_end:
            best, best_end = (number, row), at + len(tail)
    assert best is not None, context[-300:]
    return best


def answer(kind: str, context: str, extra: Any) -> str:
    """xCodeEval: `xcodeeval_support.mixed` (some samples right, some wrong). Infilling: the
    gold body for the first bundled row, a wrong but valid one for the others."""
    if "<|fim_" in context:
        number, row = _bundled_row(context)
        if number == 0:
            return row["middle"] + "<|endoftext|>"
        indent = re.match(r"\s*", row["middle"]).group(0)  # type: ignore[union-attr]
        return f"{indent}return None\n<|endoftext|>"
    return xcodeeval_support.mixed(kind, context, extra)


def _results_file(out: Path) -> Path:
    (path,) = sorted(p for p in out.rglob("results_*.json") if ".partial-" not in str(p))
    return path


def _samples(results_file: Path, task: str) -> list[dict[str, Any]]:
    (path,) = results_file.parent.glob(f"samples_{task}_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def _judge(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lm_eval_tasks.cli", "judge", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _executed(log: str) -> dict[str, tuple[int, int]]:
    """(executed, from the cache) per xCodeEval task, from the engine batch's log line."""
    found = re.findall(r"(\w+): judged \d+ programs \((\d+) executed, (\d+) from the verdict", log)
    return {task: (int(run), int(cached)) for task, run, cached in found}


class Runs:
    """Everything the module's tests compare, built once."""

    def __init__(self, root: Path) -> None:
        for lang in ("PyPy 3", "GNU C++17"):
            require_runtime(lang)
        self.root = root
        # the pack's tasks plus one group of two of them (lm-eval takes one --include_path)
        include = root / "tasks"
        shutil.copytree(TASKS_DIR, include, ignore=shutil.ignore_patterns("__pycache__"))
        (include / f"{GROUP}.yaml").write_text(GROUP_YAML)
        self.include = include
        self.cache = root / "verdicts"
        repos = root / "repos"
        bundled.build_checkout(repos)
        meta = {
            "xcodeeval_data_dir": str(xcodeeval_support.FIXTURES),
            "xcodeeval_exec_cache": str(self.cache),
            "sg_infilling_data": str(bundled.ROWS),
            "sg_infilling_grader": "local",
            "sg_infilling_repos_dir": str(repos),
        }
        common = ("--limit", "2", "--model_args", f"script={SCRIPT},{MODEL_ARGS}")

        def lm_eval(out: Path, *args: str) -> Path:
            run_cli(
                SCRIPT, ",".join(TASKS), out, *common, *args, include_path=include, metadata=meta
            )
            return _results_file(out)

        self.harness = lm_eval(root / "harness", "--confirm_run_unsafe_code")
        shutil.rmtree(self.cache)
        self.predicted = lm_eval(root / "predicted", "--confirm_run_unsafe_code", "--predict_only")
        self.cache_after_predict = sorted(self.cache.rglob("*.json")) if self.cache.exists() else []
        self.first = _judge(root / "predicted", "--include-path", include)
        assert self.first.returncode == 0, self.first.stderr[-4000:]
        self.judged = _results_file(root / "predicted" / "judged")
        self.first_text = self.judged.read_text()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    return Runs(tmp_path_factory.mktemp("judge-later"))


def _comparable_results(path: Path) -> dict[str, Any]:
    # lm-eval writes a filter function as its repr, memory address included
    data = json.loads(re.sub(r" at 0x[0-9a-f]+>", ">", path.read_text()))
    for key in TIMES:
        data.pop(key, None)
    return data


def _comparable_samples(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        row = dict(row)
        row.pop("doc_hash")
        row["doc"] = {k: v for k, v in row["doc"].items() if k != "_protocol"}
        out.append(row)
    return out


def test_predict_only_runs_nothing(runs: Runs) -> None:
    assert runs.cache_after_predict == []
    data = json.loads(runs.predicted.read_text())
    assert all("bypass,judge" in data["results"][t] for t in [*SYNTH, TRANSLATE])
    for task in [*SYNTH, TRANSLATE]:
        for row in _samples(runs.predicted, task):
            # the extracted programs, never verdict records
            assert all(not code.lstrip().startswith("{") for code in row["filtered_resps"][0])
    (middle,) = _samples(runs.predicted, INFILL)[0]["filtered_resps"]
    assert "resolved" not in middle


def test_judged_files_equal_the_in_harness_files(runs: Runs) -> None:
    harness, judged = _comparable_results(runs.harness), _comparable_results(runs.judged)
    # the runs scored something, both ways: neither all-pass nor all-fail
    res = harness["results"]
    assert 0 < res["xcodeeval_synth_python"]["pass@1,judge"] < 1
    assert 0 < res["xcodeeval_synth_python"]["pass@5,judge"] <= 1
    assert res[INFILL]["pass@1,graded"] == 0.5
    assert GROUP in harness["groups"]
    assert harness["configs"][SYNTH[0]]["metadata"]["protocol"]["programs_judged"] == 40
    assert judged == harness
    for task in LEAVES:
        assert _comparable_samples(_samples(runs.judged, task)) == _comparable_samples(
            _samples(runs.harness, task)
        ), task
    # the first judge executed every program (the cache was empty)
    counts = _executed(runs.first.stderr)
    assert counts[SYNTH[0]] == (40, 0) and counts[SYNTH[1]][1] == 0


def test_report_reads_the_judged_run(runs: Runs, tmp_path: Path) -> None:
    from lm_eval_tasks.reporting import report

    assert report.main([str(runs.judged.parent), "--out", str(tmp_path / "r")]) == 0
    text = (tmp_path / "r" / "report.md").read_text()
    assert "xcodeeval_synth_python" in text and INFILL in text


def test_second_judge_runs_nothing_again(runs: Runs) -> None:
    again = _judge(runs.root / "predicted", "--include-path", runs.include)
    assert again.returncode == 0, again.stderr[-4000:]
    counts = _executed(again.stderr)
    assert set(counts) == {*SYNTH, TRANSLATE}
    assert all(executed == 0 and cached > 0 for executed, cached in counts.values()), counts
    # the new judgment replaced the old one, with the same content
    rejudged = _results_file(runs.root / "predicted" / "judged")
    assert _comparable_results(rejudged) == _comparable_results(runs.harness)


def _copy_run(runs: Runs, dest: Path) -> Path:
    shutil.copytree(runs.predicted.parent, dest / "out" / runs.predicted.parent.name)
    return dest / "out"


def _fail(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    assert judge_later.main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_missing_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = _fail(capsys, tmp_path / "nowhere")
    assert "nowhere: no such file or folder" in err


def test_a_task_that_is_not_execution_scored(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy_run(runs, tmp_path)
    results = _results_file(out)
    data = json.loads(results.read_text())
    data["configs"][TRANSLATE]["unsafe_code"] = False  # as a generation-only task's config
    results.write_text(json.dumps(data))
    err = _fail(capsys, out, "--tasks", TRANSLATE, "--include-path", runs.include)
    assert f"{results.name}, field 'configs.{TRANSLATE}'" in err and "not execution-scored" in err
    err = _fail(capsys, out, "--tasks", "clozetest_maxmin_python")
    assert "'clozetest_maxmin_python' is not in this run" in err


@pytest.mark.parametrize("missing", ["resps", "doc", "file"])
def test_bad_samples_stop_before_judging_and_keep_the_judged_run(
    runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str], missing: str
) -> None:
    out = _copy_run(runs, tmp_path)
    judged = out / "judged"
    shutil.copytree(runs.judged.parents[1], judged / runs.judged.parents[1].name)
    before = {p: p.read_bytes() for p in judged.rglob("*") if p.is_file()}
    (path,) = _results_file(out).parent.glob(f"samples_{TRANSLATE}_*.jsonl")
    if missing == "file":
        path.unlink()
        err = _fail(capsys, out, "--include-path", runs.include)
        assert f"{path.name}: missing" in err
    else:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        del rows[1][missing]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        err = _fail(capsys, out, "--include-path", runs.include)
        assert f"{path.name}, row 2, field '{missing}': missing required field" in err
    assert {p: p.read_bytes() for p in judged.rglob("*") if p.is_file()} == before
