"""The report's numbers against fixture lm-eval output folders with hand-computed values."""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

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


LM_EVAL_0413 = Path(__file__).resolve().parent / "fixtures" / "reporting" / "lm_eval_0.4.13"
SMOL = "scripted:SmolLM2-135M-Instruct/smollm2-q4_1.gguf +chat"


def test_report_of_lm_eval_0413_output_with_dict_model_args(tmp_path: Path) -> None:
    """Two real `lm_eval` runs of one model (tests/fixtures/reporting/build_fixtures.py):
    config.model_args is a dict; `--limit 1` and `--limit 2` stay two rows."""
    from lm_eval_tasks.reporting.report import main
    from lm_eval_tasks.reporting.results import find_runs

    runs = find_runs([LM_EVAL_0413])
    assert [type(r.config["model_args"]) for r in runs] == [dict, dict]
    assert sorted(r.label for r in runs) == [f"{SMOL} (--limit 1)", f"{SMOL} (--limit 2)"]
    out = tmp_path / "report"
    assert main([str(LM_EVAL_0413), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    data = json.loads((out / "leaderboard.json").read_text())
    assert sorted(r["model"] for r in data["rows"]) == [
        f"{SMOL} (--limit 1)",
        f"{SMOL} (--limit 2)",
    ]
    assert "kept in 2 separate rows" in md and "`(--limit N)` marks a partial run" in md
    for text in (md, json.dumps(data["warnings"])):
        assert "{'" not in text and "':" not in text  # no dict repr anywhere a label is shown
    # each run's own verdicts: never summed over the two runs
    assert data["verdicts"][f"{SMOL} (--limit 2)"] == {
        "C++": {"COMPILATION_ERROR": 2},
        "Python": {"PASSED": 2},
    }
    assert data["verdicts"][f"{SMOL} (--limit 1)"]["Python"] == {"PASSED": 1}
    per = data["per_language"]["xcodeeval_synth_greedy.passat1.judge"]["intervals_95"]
    assert per[f"{SMOL} (--limit 2)"]["Python"] == {
        "low": pytest.approx(0.3424, abs=1e-4),  # Wilson, 2 of 2
        "high": 1.0,
        "method": "Wilson",
        "n": 2,
    }
    if importlib.util.find_spec("matplotlib") is not None:
        names = sorted(p.name for p in (out / "figures").glob("*.png"))
        assert (
            "verdicts_scripted_SmolLM2-135M-Instruct_smollm2-q4_1.gguf_chat_--limit_2.png" in names
        )
        assert all(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*\.png", n) for n in names), names


def test_report_reads_runs_without_the_bookkeeping_counters(tmp_path: Path) -> None:
    """A results file without sample_tests_only / infra_errors / unscored_rows: the protocol
    and the warnings come from the logged documents and verdicts instead."""
    from lm_eval_tasks.reporting.results import find_runs
    from lm_eval_tasks.reporting.table import build

    sample = _sample("Python", "INFRA_ERROR")
    sample["doc"].update({"_tests": "sample", "_unscored_rows": 2, "_unavailable_runtime_rows": 0})
    sample["doc"]["_exec"] = json.dumps({"execeval_compat": True})
    _write_run(
        tmp_path / "r",
        {"xcodeeval_synth_greedy_python": {"pass@1,judge": 0.0}},
        {"model": "hf", "model_args": {"pretrained": "org/m"}, "limit": None},
        samples={"xcodeeval_synth_greedy_python": [sample]},
    )
    table = build(find_runs([tmp_path / "r"]))
    (col,) = table.columns
    assert "SAMPLE tests" in col.protocol and "ExecEval comparator" in col.protocol
    assert list(table.rows) == ["hf:org/m"]
    text = "\n".join(table.warnings)
    assert "infra_errors = 1" in text and "unscored_rows = 2" in text
    assert "SAMPLE-TEST scoring in 1 xCodeEval tasks" in text


def test_report_without_matplotlib_writes_tables_and_names_the_extra(tmp_path: Path) -> None:
    out = tmp_path / "report"
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"  # as if the extra were not installed
        "from lm_eval_tasks.reporting.report import main\n"
        f"sys.exit(main([{str(LM_EVAL_0413)!r}, '--out', {str(out)!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1 and "pip install code-eval-taskpack[report]" in done.stderr
    md = (out / "report.md").read_text()
    assert "figures not drawn: they need matplotlib, the `report` extra" in md
    assert f"| {SMOL} (--limit 2) |" in md
    assert (out / "leaderboard.csv").read_text().count("\n") == 3
    assert json.loads((out / "leaderboard.json").read_text())["figure_notes"]
    assert not list(out.rglob("*.png"))


def test_interval_math() -> None:
    from lm_eval_tasks.reporting import intervals as ci

    # Wilson score intervals, 95% (textbook values)
    assert (ci.wilson(5, 10).low, ci.wilson(5, 10).high) == (
        pytest.approx(0.2366, abs=1e-4),
        pytest.approx(0.7634, abs=1e-4),
    )
    zero = ci.wilson(0, 10)
    assert (zero.low, zero.high) == (0.0, pytest.approx(0.2775, abs=1e-4))
    assert ci.wilson(10, 10).high == 1.0
    # 106 problems (one xCodeEval language) at 30%: about +-8.6 points (scipy.stats.binomtest agrees)
    i = ci.wilson(32, 106)
    assert (i.low, i.high) == (pytest.approx(0.22268, abs=1e-5), pytest.approx(0.39495, abs=1e-5))
    with pytest.raises(ValueError):
        ci.wilson(3, 2)
    # per-problem fractions: bootstrap over problems; constant scores have no spread
    flat = ci.bootstrap([0.4] * 50)
    assert (flat.low, flat.high, flat.method) == (
        pytest.approx(0.4),
        pytest.approx(0.4),
        "bootstrap",
    )
    # half the problems always solved, half never: the spread of a binomial mean, 2 * 1.96 * 0.05
    mixed = ci.bootstrap([1.0, 0.0] * 50)
    assert mixed.high - mixed.low == pytest.approx(0.196, abs=0.03)
    assert mixed.low < 0.5 < mixed.high
    assert ci.bootstrap([0.2, 0.6, 0.9]) == ci.bootstrap([0.2, 0.6, 0.9])  # seeded
    # binary scores take Wilson, fractions the bootstrap, NaN (too few samples) is left out
    assert ci.of_scores([1.0, 0.0, NAN]) == ci.wilson(1, 2)
    assert ci.of_scores([0.25, 1.0]).method == "bootstrap"  # type: ignore[union-attr]
    assert ci.of_scores([NAN]) is None


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def test_figures_for_20_models(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from lm_eval_tasks.reporting.report import main

    verdicts = ["PASSED", "WRONG_ANSWER", "COMPILATION_ERROR", "RUNTIME_ERROR"]
    langs = {"python": "Python", "cpp": "C++", "java": "Java", "go": "Go", "rust": "Rust"}
    for m in range(20):
        results: dict[str, dict[str, Any]] = {}
        logged: dict[str, list[dict[str, Any]]] = {}
        for j, (slug, cluster) in enumerate(langs.items()):
            task = f"xcodeeval_synth_greedy_{slug}"
            rows = []
            for doc in range(10):
                v = verdicts[(m + j + doc) % (2 if m % 2 else 4)]
                rows.append({**_sample(cluster, v), "doc_id": doc, "filter": "judge",
                             "pass@1": float(v == "PASSED")})  # fmt: skip
            logged[task] = rows
            results[task] = {"pass@1,judge": sum(r["pass@1"] for r in rows) / 10}
        results["clozetest_maxmin_python"] = {"exact_match,letter": NAN}  # predict-only: n/a
        _write_run(
            tmp_path / "runs" / f"m{m:02d}",
            results,
            {"model": "hf", "model_args": {"pretrained": f"org/model-{m:02d}"}, "limit": None},
            samples=logged,
        )
    out = tmp_path / "report"
    assert main([str(tmp_path / "runs"), "--out", str(out)]) == 0
    figs = out / "figures"
    md = (out / "report.md").read_text()
    # an all-n/a chart is not drawn, and the report says so
    assert "exact_match (letter) per language: not drawn, every value is n/a" in md
    assert not list(figs.glob("clozetest*"))
    width, height = _png_size(figs / "verdicts_all_models.png")
    assert height > 700 and width < 2000  # one row per model: the figure grows in height
    one = _png_size(figs / "verdicts_hf_org_model-00.png")
    assert one[1] < height
    panels = _png_size(figs / "xcodeeval_synth_greedy.passat1.judge.png")
    assert panels[1] > 700  # one panel per language, one row per model
    assert len(list(figs.glob("verdicts_hf_*.png"))) == 20
    # only verdicts that occur are drawn and tabulated
    assert "No program had TIME_LIMIT_EXCEEDED, MEMORY_LIMIT_EXCEEDED" in md


@pytest.mark.parametrize("dropped", [False, True])
def test_truncated_hidden_tests_reach_the_report(tmp_path: Path, dropped: bool) -> None:
    """The protocol's `truncated_tests` count is a warning of the report; a run that dropped
    them is another protocol, named in its column."""
    from lm_eval_tasks.reporting.results import find_runs
    from lm_eval_tasks.reporting.table import build

    kind = "hidden without truncated" if dropped else "hidden"
    protocol = {
        "tests": kind,
        "comparator": "default",
        "truncated_tests": {"problems": 11, "tests": 435, "dropped": dropped},
    }
    _write_run(
        tmp_path / "r" / "hf__m",
        {"xcodeeval_synth_greedy_go": {"pass@1,judge": 0.2}},
        {"model": "hf", "model_args": "pretrained=/models/m", "limit": None},
        metadata={"protocol": protocol},
    )
    table = build(find_runs([tmp_path / "r"]))
    text = "\n".join(table.warnings)
    assert "xcodeeval_synth_greedy_go: truncated_tests = 435" in text
    (column,) = [c.key for c in table.columns]
    assert ("WITHOUT the truncated ones" in column) == dropped
    assert ("hidden tests" in column) and "SAMPLE" not in column
