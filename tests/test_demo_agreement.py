"""Cross-check of our judge against ExecEval on real programs: every ChatGPT program that passed
xCodeEval's hidden tests under ExecEval must pass the public sample tests here, except the
reviewed entries of `lm_eval_tasks/reporting/expected_disagreements.json`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.conftest import SHARED_DATA, require, require_runtime


def test_execeval_passed_programs_pass_the_samples(tmp_path: Path) -> None:
    from lm_eval_tasks.reporting import demo

    data = Path(os.environ.get("CODE_EVAL_SHARED_DATA", SHARED_DATA))
    predictions = data / "xcodeeval_chatgpt_direct" / "predictions.jsonl"
    require(predictions.is_file(), f"real ChatGPT programs missing at {predictions}")
    for cluster in ("C", "C++", "C#", "Go", "PHP", "Python", "Ruby", "Rust"):
        require_runtime(cluster)
    summary, programs = demo.judge(predictions, data / "xcodeeval_sample", True)
    passed = [
        json.loads(line)
        for line in predictions.read_text().splitlines()
        if json.loads(line)["execeval_hidden_tests_passed"]
    ]
    assert len(programs) == len(passed) == 128  # every ExecEval-passed program was judged
    assert summary["tests"] == "sample"
    assert summary["unscored"]["lines"] == 0
    assert all(p["verdict"] != "INFRA_ERROR" for p in programs)
    expected = demo.load_expected()
    found = demo.disagreements(programs)
    assert demo.compare(found, expected) == []
    assert all(e["category"] != demo.UNREVIEWED for e in expected.values())
    path = demo.report(tmp_path / "r", summary, programs, expected)
    text = path.read_text()
    assert "SAMPLE-TEST scoring" in text
    assert f"| ExecEval: passed hidden tests | {128 - len(found)} | {len(found)} |" in text
