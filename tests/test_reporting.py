"""The report's numbers against fixture lm-eval output folders with hand-computed values."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

NAN = math.nan
STAMP = "2026-01-01T00-00-00.000000"


def _write_run(
    folder: Path,
    results: dict[str, dict[str, Any]],
    config: dict[str, Any],
    metadata: dict[str, Any] | None = None,
    samples: dict[str, list[dict[str, Any]]] | None = None,
) -> None:
    """An lm-eval output folder as `lm_eval --output_path --log_samples` writes it."""
    folder.mkdir(parents=True)
    data = {
        "results": {t: {"alias": t, **v} for t, v in results.items()},
        "configs": {t: {"task": t, "metadata": dict(metadata or {})} for t in results},
        "n-samples": {t: {"original": 10, "effective": 10} for t in results},
        "config": config,
        "date": 1.0,
    }
    (folder / f"results_{STAMP}.json").write_text(json.dumps(data))  # NaN as lm-eval writes it
    for task, rows in (samples or {}).items():
        (folder / f"samples_{task}_{STAMP}.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in rows)
        )


def _sample(lang: str, *verdicts: str) -> dict[str, Any]:
    records = [json.dumps({"verdict": v, "language": lang, "tests": "hidden"}) for v in verdicts]
    return {"doc_id": 0, "doc": {"lang_cluster": lang}, "filtered_resps": [records]}


@pytest.fixture
def fixture_runs(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    cloze = {"exact_match,first_capital": 0.8, "gold_max_share,first_capital": 0.6,
             "exact_match,letter": 0.9, "gold_max_share,letter": 0.6}  # fmt: skip
    _write_run(
        root / "alpha" / "hf__alpha",
        {
            "clozetest_maxmin": cloze,
            "clozetest_maxmin_python": cloze,
            "xcodeeval_synth_greedy": {"pass@1,judge": 0.3, "sample_tests_only,judge": 0.0},
            "xcodeeval_synth_greedy_python": {
                "pass@1,judge": 0.5,
                "infra_errors,judge": 0.0,
                "sample_tests_only,judge": 0.0,
            },
            "xcodeeval_synth_greedy_cpp": {
                "pass@1,judge": 0.1,
                "infra_errors,judge": 1.0,
                "sample_tests_only,judge": 0.0,
            },
        },
        {"model": "hf", "model_args": "pretrained=/models/alpha", "limit": None},
        samples={
            "xcodeeval_synth_greedy_python": [
                _sample("Python", "PASSED"),
                _sample("Python", "WRONG_ANSWER"),
            ],
            "xcodeeval_synth_greedy_cpp": [
                _sample("C++", "COMPILATION_ERROR"),
                _sample("C++", "INFRA_ERROR"),
            ],
        },
    )
    nan_cloze = {k: NAN for k in cloze}
    _write_run(
        root / "beta" / "hf__beta",
        {
            "clozetest_maxmin": nan_cloze,
            "clozetest_maxmin_python": nan_cloze,
            "xcodeeval_synth_greedy_python": {
                "pass@1,judge": 0.25,
                "sample_tests_only,judge": 1.0,
                "unscored_rows,judge": 3.0,
            },
        },
        {"model": "hf", "model_args": "pretrained=/models/beta", "limit": 2},
        metadata={"clozetest_predict_only": True, "xcodeeval_sample_tests": True},
    )
    return root


def test_table_numbers_and_protocols(fixture_runs: Path) -> None:
    from lm_eval_tasks.reporting.results import find_runs
    from lm_eval_tasks.reporting.table import build

    table = build(find_runs([fixture_runs]))
    keys = [c.key for c in table.columns]
    # alpha: 2 cloze columns + xCodeEval hidden; beta's --limit run: its own 2 cloze columns and
    # a sample-test, one-language xCodeEval column
    assert len(keys) == 6, keys
    hidden = [k for k in keys if "hidden tests" in k]
    sample = [k for k in keys if "SAMPLE tests" in k]
    assert len(hidden) == 1 and len(sample) == 1  # never two protocols in one column
    assert "1 of 11 languages: python" in sample[0] and "--limit 2" in sample[0]
    assert "default comparator" in hidden[0]
    alpha, beta = "hf:alpha", "hf:beta (--limit 2)"  # a partial run says so in its row label
    assert table.rows[alpha][hidden[0]].value == pytest.approx(0.3)
    cloze_fc = next(k for k in keys if "first capital" in k and "--limit" not in k)
    beta_fc = next(k for k in keys if "first capital" in k and "--limit 2" in k)
    cell = table.rows[alpha][cloze_fc]
    assert (cell.value, cell.chance) == (pytest.approx(0.8), pytest.approx(0.6))
    assert cell.normalised == pytest.approx(50.0)  # (80 - 60) / (100 - 60)
    avg, n, total = table.average(alpha)
    assert (n, total) == (3, 6)
    assert avg == pytest.approx((50.0 + 75.0 + 30.0) / 3)
    assert math.isnan(table.rows[beta][beta_fc].value)  # predict-only: n/a, not 0
    assert cloze_fc not in table.rows[beta]
    avg_b, n_b, _ = table.average(beta)
    assert (avg_b, n_b) == (pytest.approx(25.0), 1)
    text = "\n".join(table.warnings)
    assert "xcodeeval_synth_greedy_cpp: infra_errors = 1" in text
    assert "--limit 2 run" in text
    assert "predict-only run" in text
    assert "SAMPLE-TEST scoring" in text
    assert "unscored_rows = 3" in text


def test_below_chance_is_zero_and_majority_chance_uses_the_larger_label() -> None:
    from lm_eval_tasks.reporting.table import Cell

    assert Cell(0.3, 0.7).normalised == 0.0
    assert Cell(1.0, 0.7).normalised == pytest.approx(100.0)
    assert math.isnan(Cell(0.5, NAN).normalised)


def test_report_files(fixture_runs: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from lm_eval_tasks.reporting.report import main

    out = tmp_path / "report"
    assert main([str(fixture_runs), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "| hf:alpha | 51.7 (3 of 6 columns) |" in md
    assert "| hf:beta (--limit 2) | 25.0 (1 of 6 columns) |" in md
    assert "n/a" in md and "## Warnings" in md
    with open(out / "leaderboard.csv") as f:
        rows = {r["model"]: r for r in csv.DictReader(f)}
    assert float(rows["hf:alpha"]["normalised_average"]) == pytest.approx(51.6667, abs=1e-3)
    data = json.loads((out / "leaderboard.json").read_text())  # strict JSON: no NaN
    assert data["verdicts"]["hf:alpha"] == {
        "C++": {"COMPILATION_ERROR": 1, "INFRA_ERROR": 1},
        "Python": {"PASSED": 1, "WRONG_ANSWER": 1},
    }
    # one naming of languages (the catalogue's), whether a run spells them `cpp` or `C++`
    assert data["per_language"]["xcodeeval_synth_greedy.passat1.judge"]["values"]["hf:alpha"] == {
        "C++": 0.1,
        "Python": 0.5,
    }
    pngs = sorted((out / "figures").glob("*.png"))
    assert {p.name for p in pngs} >= {
        "verdicts_hf_alpha.png",
        "xcodeeval_synth_greedy.passat1.judge.png",
    }
    for p in pngs:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000
        assert f"figures/{p.name}" in md


def test_bad_results_file_is_named(tmp_path: Path) -> None:
    from lm_eval_tasks.reporting.results import ResultsError, find_runs

    bad = tmp_path / "r" / "results_x.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    with pytest.raises(ResultsError, match=r"results_x\.json"):
        find_runs([tmp_path / "r"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultsError, match="no results"):
        find_runs([tmp_path / "empty"])
