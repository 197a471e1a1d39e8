"""The real `lm_eval` command line with `--include_path`, a scripted offline model, and the results
and samples files it writes (two runs: scored with a chat template, and predict-only)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.clozetest_support import read_items, write_answers
from tests.conftest import ROOT, SHARED_DATA, TASKS_DIR, require

MODEL_ARGS = "script=tests.clozetest_support:says_the_answer_is_b"


def run_cli(args: list[str], out: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    command = [
        sys.executable,
        str(ROOT / "tests" / "run_lm_eval.py"),
        "--model", "scripted",
        "--model_args", MODEL_ARGS,
        "--include_path", str(TASKS_DIR),
        "--output_path", str(out),
        "--log_samples",
        *args,
    ]  # fmt: skip
    full_env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "CODE_EVAL_CACHE": str(out / "cache"),
        **(env or {}),
    }
    done = subprocess.run(
        command, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    files = sorted(out.glob("**/results_*.json"))
    assert len(files) == 1, files
    report: dict[str, Any] = json.loads(files[0].read_text())
    report["_samples"] = {p.name: p for p in out.glob("**/samples_*.jsonl")}
    report["_log"] = done.stdout + done.stderr
    return report


@pytest.mark.slow
def test_lm_eval_cli_scores_and_predict_only(tmp_path: Path) -> None:
    real = SHARED_DATA / "codexglue_clozetest_maxmin"
    require(real.is_dir(), f"real ClozeTest-maxmin inputs missing at {real}")
    answers = tmp_path / "answers"
    gold = write_answers(answers, real, ("ruby",))
    share_b = sum(g == "B" for g in gold.values()) / len(gold)
    assert len(gold) == len(read_items(real, "ruby")) == 38

    metadata = {"clozetest_data_dir": str(real), "clozetest_answers": str(answers)}
    scored = run_cli(
        ["--tasks", "clozetest_maxmin_ruby,clozetest_maxmin_ll_ruby", "--apply_chat_template",
         "--metadata", json.dumps(metadata)],
        tmp_path / "scored",
    )  # fmt: skip
    ruby = scored["results"]["clozetest_maxmin_ruby"]
    assert ruby["exact_match,first_capital"] == 0.0  # "The answer is B." parses as T
    assert ruby["exact_match,letter"] == pytest.approx(share_b)
    assert ruby["gold_max_share,letter"] == pytest.approx(1 - share_b)
    # equal log-likelihoods: ties go to "max", so accuracy equals the share of max labels
    assert scored["results"]["clozetest_maxmin_ll_ruby"]["acc,none"] == pytest.approx(1 - share_b)
    assert "clozetest_maxmin_ruby: 38 items, share of max labels" in scored["_log"]
    samples = [
        json.loads(line)
        for name, path in scored["_samples"].items()
        if "clozetest_maxmin_ruby" in name
        for line in path.read_text().splitlines()
    ]
    assert len(samples) == 2 * 38  # one record per document and filter
    assert all(s["resps"] == [["The answer is B."]] for s in samples)
    assert samples[0]["arguments"]["gen_args_0"]["arg_0"].startswith("<|user|>\nCode:")

    predict = run_cli(
        ["--tasks", "clozetest_maxmin", "--limit", "2",
         "--metadata", json.dumps({"clozetest_data_dir": str(real)})],
        tmp_path / "predict",
        env={"CLOZETEST_MAXMIN_PREDICT_ONLY": "1"},
    )  # fmt: skip
    for name in ("clozetest_maxmin", "clozetest_maxmin_python"):
        for key in ("exact_match,first_capital", "exact_match,letter"):
            assert math.isnan(predict["results"][name][key]), (name, key)
    assert len(predict["_samples"]) == 6
    python_samples = next(
        p for n, p in predict["_samples"].items() if "clozetest_maxmin_python" in n
    )
    records = [json.loads(line) for line in python_samples.read_text().splitlines()]
    assert {r["filtered_resps"][0] for r in records} >= {"T", "B"}
