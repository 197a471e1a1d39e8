"""The real `lm_eval` command line with `--include_path`, a scripted offline model, and the results
and samples files it writes (two runs: scored with a chat template, and predict-only)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.clozetest_support import read_items, write_answers
from tests.conftest import SHARED_DATA, require
from tests.lm_fakes import CliRun, run_cli

MODEL_SCRIPT = "tests.clozetest_support:says_the_answer_is_b"


def _run(
    tasks: str, out: Path, *args: str, metadata: dict[str, Any], env: dict[str, str] | None = None
) -> CliRun:
    offline = {"HF_HUB_OFFLINE": "1", "CODE_EVAL_CACHE": str(out / "cache")}
    return run_cli(
        MODEL_SCRIPT, tasks, out, *args, metadata=metadata, env={**offline, **(env or {})}
    )


@pytest.mark.slow
def test_lm_eval_cli_scores_and_predict_only(tmp_path: Path) -> None:
    real = SHARED_DATA / "codexglue_clozetest_maxmin"
    require(real.is_dir(), f"real ClozeTest-maxmin inputs missing at {real}")
    answers = tmp_path / "answers"
    gold = write_answers(answers, real, ("ruby",))
    share_b = sum(g == "B" for g in gold.values()) / len(gold)
    assert len(gold) == len(read_items(real, "ruby")) == 38

    metadata = {"clozetest_data_dir": str(real), "clozetest_answers": str(answers)}
    scored = _run(
        "clozetest_maxmin_ruby,clozetest_maxmin_ll_ruby",
        tmp_path / "scored",
        "--apply_chat_template",
        metadata=metadata,
    )
    ruby = scored.report["results"]["clozetest_maxmin_ruby"]
    assert ruby["exact_match,first_capital"] == 0.0  # "The answer is B." parses as T
    assert ruby["exact_match,letter"] == pytest.approx(share_b)
    assert ruby["gold_max_share,letter"] == pytest.approx(1 - share_b)
    # equal log-likelihoods: ties go to "max", so accuracy equals the share of max labels
    assert scored.report["results"]["clozetest_maxmin_ll_ruby"]["acc,none"] == pytest.approx(
        1 - share_b
    )
    assert "clozetest_maxmin_ruby: 38 items, share of max labels" in scored.log
    samples = [
        json.loads(line)
        for name, path in scored.sample_files.items()
        if "clozetest_maxmin_ruby" in name
        for line in path.read_text().splitlines()
    ]
    assert len(samples) == 2 * 38  # one record per document and filter
    assert all(s["resps"] == [["The answer is B."]] for s in samples)
    assert samples[0]["arguments"]["gen_args_0"]["arg_0"].startswith("<|user|>\nCode:")

    predict = _run(
        "clozetest_maxmin",
        tmp_path / "predict",
        "--limit",
        "2",
        metadata={"clozetest_data_dir": str(real)},
        env={"CLOZETEST_MAXMIN_PREDICT_ONLY": "1"},
    )
    for name in ("clozetest_maxmin", "clozetest_maxmin_python"):
        for key in ("exact_match,first_capital", "exact_match,letter"):
            assert math.isnan(predict.report["results"][name][key]), (name, key)
    assert len(predict.sample_files) == 6
    python_samples = next(
        p for n, p in predict.sample_files.items() if "clozetest_maxmin_python" in n
    )
    records = [json.loads(line) for line in python_samples.read_text().splitlines()]
    assert {r["filtered_resps"][0] for r in records} >= {"T", "B"}


def test_missing_answers_stop_the_real_cli_before_any_generation(tmp_path: Path) -> None:
    """lm-eval 0.4.13's CLI builds the model before any task (`simple_evaluate` constructs it,
    then loads the tasks; the CLI's task index reads the YAML without running any of the pack's
    code), so no hook of a task pack runs earlier: the answers error comes at the first task's
    dataset, right after the model, and before any request. This records that order (the README
    states it); if lm-eval ever builds tasks first, the first assertion on `events` fails."""
    real = SHARED_DATA / "codexglue_clozetest_maxmin"
    require(real.is_dir(), f"real ClozeTest-maxmin inputs missing at {real}")
    events = tmp_path / "events.txt"
    env = {"HF_HUB_OFFLINE": "1", "CODE_EVAL_CACHE": str(tmp_path / "cache")}
    run = run_cli(
        MODEL_SCRIPT, "clozetest_maxmin_ruby", tmp_path / "out",
        metadata={"clozetest_data_dir": str(real)},
        env={**env, "CODE_EVAL_TEST_MODEL_EVENTS": str(events)}, check=False,
    )  # fmt: skip
    assert run.returncode != 0
    assert "no gold answers for ClozeTest-maxmin language(s) ruby" in run.log
    assert "clozetest_predict_only" in run.log  # the message says how to run without answers
    assert events.read_text().split() == ["constructed"]  # built first, never asked to generate
    assert not list((tmp_path / "out").glob("**/results_*.json"))


def test_code_eval_run_stops_on_missing_answers_before_the_model(tmp_path: Path) -> None:
    """`code-eval run` builds the tasks with lm-eval's own task manager first: the answers error
    is one line, exit status 2, and the model is never constructed; with predict-only set the
    same command hands on to lm-eval's `run` and writes its results."""
    real = SHARED_DATA / "codexglue_clozetest_maxmin"
    require(real.is_dir(), f"real ClozeTest-maxmin inputs missing at {real}")
    events = tmp_path / "events.txt"
    env = {
        "HF_HUB_OFFLINE": "1",
        "CODE_EVAL_CACHE": str(tmp_path / "cache"),
        "CODE_EVAL_TEST_MODEL_EVENTS": str(events),
    }
    metadata: dict[str, Any] = {"clozetest_data_dir": str(real)}
    stopped = run_cli(
        MODEL_SCRIPT, "clozetest_maxmin_ruby", tmp_path / "out", metadata=metadata,
        env=env, check=False, checked_run=True,
    )  # fmt: skip
    assert stopped.returncode == 2, stopped.log[-3000:]
    (line,) = [ln for ln in stopped.stderr.splitlines() if ln.startswith("code-eval run:")]
    assert "the model was not loaded" in line
    assert "no gold answers for ClozeTest-maxmin language(s) ruby" in line
    assert "clozetest_predict_only" in line
    assert not events.exists()  # never constructed
    assert not list((tmp_path / "out").glob("**/results_*.json"))

    ran = run_cli(
        MODEL_SCRIPT, "clozetest_maxmin_ruby", tmp_path / "predict", "--limit", "2",
        metadata={**metadata, "clozetest_predict_only": True}, env=env, checked_run=True,
    )  # fmt: skip
    assert events.read_text().split()[0] == "constructed"
    assert math.isnan(ran.report["results"]["clozetest_maxmin_ruby"]["exact_match,letter"])
