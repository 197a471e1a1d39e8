"""xCodeEval execution tasks: one engine batch per task run, verdicts in logged samples, pass@k.

Tests marked by `_runtimes` run real programs and need the toolchains (CI installs them); the
batching/INFRA_ERROR tests replace `Engine.judge_many` and need none.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack import execution
from code_eval_taskpack.execution.types import Job, Result, Verdict
from code_eval_taskpack.utils.errors import DataError
from lm_eval_tasks.xcodeeval import data as xd
from lm_eval_tasks.xcodeeval import documents
from lm_eval_tasks.xcodeeval.hooks import verdict_records
from tests import xcodeeval_support as support
from tests.conftest import ROOT, require, require_runtime, serve_hub, write_jsonl
from tests.lm_fakes import run_cli
from tests.xcodeeval_support import FIXTURES, fx

SLUGS = xd.SLUGS


@pytest.fixture(scope="module")
def exec_cache(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One result cache per module: the same reference programs are compiled once."""
    return str(tmp_path_factory.mktemp("xce-exec-cache"))


def _runtimes(clusters: Sequence[str]) -> None:
    missing = []
    for c in clusters:
        rt = execution.resolve(c)
        if not rt.available:
            missing.append(f"{c} ({rt.reason})")
    require(not missing, f"toolchains missing for: {', '.join(missing)} (run `make toolchains`)")


def _protocol(out: dict[str, Any], task: str) -> dict[str, Any]:
    """The protocol a run recorded for `task` (as the results file holds it)."""
    return dict(out["configs"][task]["metadata"]["protocol"])


def _pass_at_k_by_formula(n: int, c: int, k: int) -> float:
    return 1.0 if n - c < k else 1.0 - math.comb(n - c, k) / math.comb(n, k)


# --------------------------------------------------------------------------- batching, no toolchain


class _CountingEngine:
    """Replaces Engine.judge_many: counts batches, records jobs, answers from the source text."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, infra_for: str | None = None) -> None:
        self.calls: list[list[Job]] = []
        self.comparators: list[str] = []
        outer = self

        def judge_many(engine: Any, jobs: Sequence[Job], progress: Any = None) -> list[Result]:
            outer.calls.append(list(jobs))
            outer.comparators.append(engine.comparator)
            out = []
            for job in jobs:
                if infra_for and infra_for in job.id:
                    out.append(
                        Result(Verdict.INFRA_ERROR, id=job.id, detail="sandbox could not start")
                    )
                elif "a + b" in job.source_code or '"YES" if' in job.source_code:
                    out.append(Result(Verdict.PASSED, id=job.id))
                else:
                    out.append(Result(Verdict.WRONG_ANSWER, id=job.id))
            return out

        monkeypatch.setattr(execution.Engine, "judge_many", judge_many)


def test_one_engine_batch_per_task_run_and_verdicts_in_logged_samples(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    support.reset()
    engine = _CountingEngine(monkeypatch)
    out = support.run_tasks(
        ["xcodeeval_synth_python", "xcodeeval_apr_greedy_java"],
        support.mixed,
        xcodeeval_exec_cache="none",
    )
    assert len(engine.calls) == 2  # one batch per task, not one per document or sample
    sizes = sorted(len(c) for c in engine.calls)
    assert sizes == [1, 40]  # 1 APR program; 2 problems x 20 samples
    python_jobs = next(c for c in engine.calls if len(c) == 40)
    assert {j.language for j in python_jobs} == {"PyPy 3"}
    limits = {(j.tests[0].input, j.time_limit_s, j.memory_limit_mb) for j in python_jobs}
    assert limits == {("1 2\n", 1.0, 256), ("8\n", 2.0, 256)}  # the problem's own limits, unscaled
    assert engine.comparators == ["default", "default"]
    res = out["results"]["xcodeeval_synth_python"]
    for k in (1, 5, 10, 20):
        want = (_pass_at_k_by_formula(20, 3, k) + _pass_at_k_by_formula(20, 12, k)) / 2
        assert res[f"pass@{k},judge"] == pytest.approx(want)
    assert _protocol(out, "xcodeeval_synth_python")["unscored_rows"] == 1  # no hidden tests
    sample = out["samples"]["xcodeeval_synth_python"][0]
    records = verdict_records(sample["filtered_resps"][0])
    assert len(records) == 20 and [r["verdict"] for r in records].count("PASSED") == 3
    assert {"verdict", "failed_test", "code", "tests", "language"} <= set(records[0])


def _judged_by_registries(monkeypatch: pytest.MonkeyPatch, factors: Sequence[float]) -> None:
    """Replaces Engine.judge_many: every program passes, judged (as a remote server or Ray node
    reports it) by a registry whose time factor is the next of `factors`, round robin."""

    def judge_many(engine: Any, jobs: Sequence[Job], progress: Any = None) -> list[Result]:
        runtime = execution.resolve(jobs[0].language).info()
        return [
            Result(
                Verdict.PASSED,
                id=job.id,
                runtime={
                    **runtime,
                    "version": "remote-9",
                    "time_factor": factors[i % len(factors)],
                },
            )
            for i, job in enumerate(jobs)
        ]

    monkeypatch.setattr(execution.Engine, "judge_many", judge_many)


def test_the_protocol_has_the_time_factor_of_the_registry_that_judged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not this machine's registry: the judging one, as each result reports it; registries that
    disagree are all recorded."""
    local = execution.resolve("PyPy 3")
    remote = local.time_factor + 7.5
    _judged_by_registries(monkeypatch, [remote])
    out = support.run_tasks(["xcodeeval_synth_python"], support.mixed, xcodeeval_exec_cache="none")
    assert _protocol(out, "xcodeeval_synth_python")["runtimes"] == {
        "PyPy 3": {
            "version": "remote-9",
            "time_factor": remote,
            "memory_headroom_mb": local.as_headroom_mb,
        }
    }
    sample = out["samples"]["xcodeeval_synth_python"][0]
    runtime = verdict_records(sample["filtered_resps"][0])[0]["runtime"]
    assert runtime["time_factor"] == remote
    _judged_by_registries(monkeypatch, [remote, 1.5])
    out = support.run_tasks(["xcodeeval_synth_python"], support.mixed, xcodeeval_exec_cache="none")
    assert _protocol(out, "xcodeeval_synth_python")["runtimes"]["PyPy 3"] == {
        "version": "remote-9",
        "time_factor": [1.5, remote],
        "memory_headroom_mb": local.as_headroom_mb,
    }


def test_a_field_a_judging_registry_did_not_report_is_recorded_as_missing() -> None:
    """An ExecEval server reports a runtime's version and time factor, no memory headroom: the
    protocol says None (and both values where others did report it), never this machine's."""
    from code_eval_taskpack.utils.judging import result_record
    from lm_eval_tasks.xcodeeval.hooks import judged_protocol

    execeval = {"name": "Go", "version": "execeval:1", "time_factor": 1.0}
    node = {**execeval, "time_factor": 10.0, "as_headroom_mb": 64}
    records = [result_record(Result(Verdict.PASSED, runtime=r)) for r in (execeval, node)]
    assert judged_protocol(records[:1])["runtimes"] == {
        "Go": {"version": "execeval:1", "time_factor": 1.0, "memory_headroom_mb": None}
    }
    assert judged_protocol(records)["runtimes"] == {
        "Go": {
            "version": "execeval:1",
            "time_factor": [1.0, 10.0],
            "memory_headroom_mb": [64, None],
        }
    }


def test_a_language_group_prints_pass_at_k_rows_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """lm-eval's printed tables (the CLI prints `make_table` of both): one pass@1 row per
    language plus the group's mean; the counts are in each task's protocol instead."""
    from lm_eval.utils import make_table

    _CountingEngine(monkeypatch)
    out = support.run_tasks(["xcodeeval_synth_greedy"], support.oracle, xcodeeval_exec_cache="none")

    def rows(table: str) -> list[list[str]]:
        cells = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()]
        return [r for r in cells[2:] if len(r) > 4]

    tasks, groups = rows(make_table(out)), rows(make_table(out, "groups"))
    assert len(tasks) == 1 + len(SLUGS) and {r[4] for r in tasks} == {"pass@1"}
    assert [(r[0], r[4]) for r in groups] == [("xcodeeval_synth_greedy", "pass@1")]
    per_language = [out["results"][f"xcodeeval_synth_greedy_{s}"]["pass@1,judge"] for s in SLUGS]
    mean = sum(per_language) / len(SLUGS)  # the unweighted mean over languages
    assert out["results"]["xcodeeval_synth_greedy"]["pass@1,judge"] == pytest.approx(mean)
    for slug in SLUGS:
        recorded = _protocol(out, f"xcodeeval_synth_greedy_{slug}")
        assert recorded["programs_judged"] == 2 and recorded["tests"] == "hidden"


def test_execeval_switch_selects_the_execeval_comparator_and_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine = _CountingEngine(monkeypatch)
    out = support.run_tasks(
        ["xcodeeval_synth_greedy_go", "xcodeeval_apr_greedy_java"],
        support.oracle,
        xcodeeval_execeval_compat=True,
        xcodeeval_exec_cache="none",
    )
    assert engine.comparators == ["execeval", "execeval"]
    jobs = [j for call in engine.calls for j in call]
    assert {j.comparator for j in jobs} == {"execeval"}
    # ExecEval's limits, not the problems' (1 s / 2 s, 256 MB): its default cpu of 2 s (the
    # engine multiplies it by the runtime factor, as ExecEval does) and 2 GiB of memory
    assert {(j.time_limit_s, j.memory_limit_mb) for j in jobs} == {(2.0, 2048)}
    assert len(jobs) == 3  # two synthesis problems + one repair row
    record = verdict_records(out["samples"]["xcodeeval_synth_greedy_go"][0]["filtered_resps"][0])
    assert record[0]["limits"] == {"time_s": 2.0, "memory_mb": 2048}
    # ExecEval's rule for time is 2 s x its factor: 2 s for Go, 6 s for Java, 4 s for PyPy
    from code_eval_taskpack.execution.limits import run_limits

    for name, want in (("Go", 2.0), ("Java 17", 6.0), ("PyPy 3", 4.0)):
        factor = execution.resolve(name).time_factor
        assert run_limits(2.0, 2048, factor).cpu_s == want
    # without the switch the problem's own limits are used
    engine.calls.clear()
    support.run_tasks(["xcodeeval_synth_greedy_go"], support.oracle, xcodeeval_exec_cache="none")
    assert {(j.time_limit_s, j.memory_limit_mb) for j in engine.calls[0]} == {
        (1.0, 256),
        (2.0, 256),
    }


def _make_unavailable(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make the registry's runtime `name` look uninstalled, whatever this machine has."""
    runtime = execution.resolve(name)
    monkeypatch.setattr(runtime, "_binary", (None, f"toolchain not installed ({name} test)"))
    assert not runtime.available


def test_apr_rows_in_an_unavailable_runtime_are_counted_not_scored(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    engine = _CountingEngine(monkeypatch)
    _make_unavailable(monkeypatch, "Python 2")
    with caplog.at_level("WARNING", logger="xcodeeval"):
        out = support.run_tasks(
            ["xcodeeval_apr_greedy_python"], support.oracle, xcodeeval_exec_cache="none"
        )
    res = out["results"]["xcodeeval_apr_greedy_python"]
    # the Python 2 row is neither judged (an INFRA_ERROR would make pass@1 NaN) nor hidden
    assert [j.language for j in engine.calls[0]] == ["Python 3"]
    protocol = _protocol(out, "xcodeeval_apr_greedy_python")
    assert res["pass@1,judge"] == 1.0 and protocol["infra_errors"] == 0
    assert protocol["unavailable_runtime_rows"] == 1
    assert protocol["unscored_rows"] == 1
    assert [s["doc"]["apr_id"] for s in out["samples"]["xcodeeval_apr_greedy_python"]] == [
        "apr-Python-1"
    ]
    warning = [r.getMessage() for r in caplog.records if "'Python 2' NOT SCORED" in r.getMessage()]
    assert len(warning) == 1 and "1 rows in runtime" in warning[0]
    assert "unavailable on this machine" in warning[0]
    # a task left with no scorable row at all: a clear error at load time, before generation
    _make_unavailable(monkeypatch, "GNU C++17")
    with pytest.raises(DataError, match=r"no row can be scored.*'GNU C\+\+17' unavailable"):
        documents.build_dataset(
            xce_task="xcodeeval_apr_greedy_cpp",
            xce_kind="apr",
            xce_cluster="C++",
            xcodeeval_data_dir=str(FIXTURES),
        )


def _score_in_process(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    lines: list[dict[str, Any]],
    tmp_path: Path,
    *args: str,
) -> tuple[int, str]:
    from lm_eval_tasks.xcodeeval import score as xcodeeval_score

    preds = tmp_path / "preds.jsonl"
    write_jsonl(preds, lines)
    code = xcodeeval_score.main([str(preds), "--no-cache", *args])
    return code, capsys.readouterr().out


def test_score_cli_reads_xcodeeval_data_and_prints_strict_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    engine = _CountingEngine(monkeypatch)
    serve_hub(monkeypatch, None)
    monkeypatch.setenv("XCODEEVAL_DATA", str(FIXTURES))
    lines = [
        {"src_uid": uid, "lang_cluster": "Python", "source_code": fx.SOLUTIONS[uid]["Python"]}
        for uid in (fx.SUM, fx.MELON)
    ]
    code, out = _score_in_process(
        monkeypatch, capsys, lines, tmp_path, "--json", "--k", "1", "2", "--execeval-compat"
    )
    assert code == 0
    # strict JSON: a bare NaN would make this parser fail
    report = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert report["data"] == str(FIXTURES.resolve())
    assert report["table"]["Python"]["pass@1"] == 1.0
    assert report["table"]["Python"]["pass@2"] is None  # one sample per problem
    assert report["table"]["mean"]["pass@2"] is None
    assert "null" in out and "NaN" not in out
    # the compat switch reaches the engine's jobs: ExecEval's comparator and limits
    assert {(j.comparator, j.time_limit_s, j.memory_limit_mb) for j in engine.calls[0]} == {
        ("execeval", 2.0, 2048)
    }
    # --data-dir still wins over the environment
    monkeypatch.setenv("XCODEEVAL_DATA", str(tmp_path / "missing"))
    code, out = _score_in_process(
        monkeypatch, capsys, lines, tmp_path, "--json", "--data-dir", str(FIXTURES)
    )
    assert code == 0 and json.loads(out)["data"] == str(FIXTURES.resolve())
    code, _ = _score_in_process(monkeypatch, capsys, lines, tmp_path, "--json")
    assert code == 2  # the environment's directory does not exist: an error, not the Hub


def test_score_cli_reports_lines_in_an_unavailable_runtime(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = _CountingEngine(monkeypatch)
    _make_unavailable(monkeypatch, "Python 2")
    lines = [
        {"src_uid": fx.SUM, "lang": "Python 3", "source_code": fx.SOLUTIONS[fx.SUM]["Python"]},
        {"src_uid": fx.SUM, "lang": "Python 2", "source_code": "print a + b"},
        {"src_uid": fx.MELON, "lang": "Python 2", "source_code": "print 'YES'"},
    ]
    with caplog.at_level("WARNING", logger="xcodeeval"):
        code, out = _score_in_process(
            monkeypatch, capsys, lines, tmp_path, "--json", "--data-dir", str(FIXTURES)
        )
    assert code == 0
    report = json.loads(out)
    assert [j.language for j in engine.calls[0]] == ["Python 3"]
    assert report["unscored"]["unavailable_runtime"] == {"Python 2": 2}
    assert report["unscored"]["lines"] == 2
    assert report["table"]["Python"]["infra_errors"] == 0
    assert report["table"]["Python"]["pass@1"] == 1.0
    assert "2 prediction lines in runtime 'Python 2' NOT SCORED" in caplog.text
    code, text = _score_in_process(
        monkeypatch, capsys, lines, tmp_path, "--data-dir", str(FIXTURES)
    )
    assert "NOT SCORED: 2 prediction lines in runtime 'Python 2'" in text


def test_infra_errors_are_counted_not_scored_as_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    _CountingEngine(monkeypatch, infra_for=fx.MELON)
    out = support.run_tasks(
        ["xcodeeval_synth_greedy_ruby"], support.oracle, xcodeeval_exec_cache="none"
    )
    res = out["results"]["xcodeeval_synth_greedy_ruby"]
    protocol = _protocol(out, "xcodeeval_synth_greedy_ruby")
    assert protocol["infra_errors"] == 1 and protocol["programs_judged"] == 2
    assert protocol["verdicts"] == {"PASSED": 1, "INFRA_ERROR": 1}
    # the melon problem could not be judged: NaN, never a silent 0 (which would give 0.5)
    assert math.isnan(res["pass@1,judge"])
    per_doc = {
        s["doc"]["src_uid"]: s["pass@1"] for s in out["samples"]["xcodeeval_synth_greedy_ruby"]
    }
    assert per_doc[fx.SUM] == 1.0 and math.isnan(per_doc[fx.MELON])


def test_sample_test_scoring_is_labelled(
    monkeypatch: pytest.MonkeyPatch, shared_data: Path
) -> None:
    engine = _CountingEngine(monkeypatch)
    out = support.run_tasks(
        ["xcodeeval_synth_greedy_python"],
        lambda kind, ctx, extra: "print(0)",
        xcodeeval_data_dir=str(shared_data / "xcodeeval_sample"),
        xcodeeval_sample_tests=True,
        xcodeeval_split="validation",
        xcodeeval_exec_cache="none",
    )
    res = out["results"]["xcodeeval_synth_greedy_python"]
    assert _protocol(out, "xcodeeval_synth_greedy_python")["tests"] == "sample"
    assert res["pass@1,judge"] == 0.0
    assert len(engine.calls) == 1 and len(engine.calls[0]) == 106
    first = json.loads(
        Path(shared_data / "xcodeeval_sample" / "problem_descriptions.jsonl")
        .read_text()
        .splitlines()[0]
    )
    job = engine.calls[0][0]
    assert [t.input for t in job.tests] == first["sample_inputs"]
    first_sample = out["samples"]["xcodeeval_synth_greedy_python"][0]
    assert verdict_records(first_sample["filtered_resps"][0])[0]["tests"] == "sample"


# --------------------------------------------------------------------------- real execution


def test_oracle_scores_one_in_every_language(exec_cache: str) -> None:
    """Reference solutions in all 11 languages: pass@1..20 = 1.0 (n=20) and greedy pass@1 = 1.0."""
    _runtimes(xd.CLUSTERS)

    def oracle(kind: str, context: str, extra: Any) -> str:
        # sampled requests get a chat-style fenced reply, greedy ones a bare program
        return (
            support.oracle(kind, context, extra)
            if extra.get("do_sample")
            else support.plain_oracle(kind, context, extra)
        )

    out = support.run_tasks(
        ["xcodeeval_synth", "xcodeeval_synth_greedy"], oracle, xcodeeval_exec_cache=exec_cache
    )
    results = out["results"]
    for slug, cluster in SLUGS.items():
        for k in (1, 5, 10, 20):
            assert results[f"xcodeeval_synth_{slug}"][f"pass@{k},judge"] == 1.0, (
                cluster,
                k,
                _verdicts(out, f"xcodeeval_synth_{slug}"),
            )
        assert results[f"xcodeeval_synth_greedy_{slug}"]["pass@1,judge"] == 1.0, _verdicts(
            out, f"xcodeeval_synth_greedy_{slug}"
        )
        assert _protocol(out, f"xcodeeval_synth_{slug}")["infra_errors"] == 0
    assert results["xcodeeval_synth"]["pass@5,judge"] == 1.0
    assert results["xcodeeval_synth_greedy"]["pass@1,judge"] == 1.0


def _verdicts(out: dict[str, Any], task: str) -> list[Any]:
    return [
        (r["verdict"], r["detail"][:200])
        for s in out["samples"][task]
        for r in verdict_records(s["filtered_resps"][0])
    ]


def test_wrong_programs_score_zero(exec_cache: str) -> None:
    _runtimes(["Python", "C"])
    out = support.run_tasks(
        ["xcodeeval_synth_greedy_python", "xcodeeval_synth_greedy_c"],
        support.wrong,
        xcodeeval_exec_cache=exec_cache,
    )
    for task in ("xcodeeval_synth_greedy_python", "xcodeeval_synth_greedy_c"):
        assert out["results"][task]["pass@1,judge"] == 0.0
        verdicts = {v for v, _ in _verdicts(out, task)}
        assert verdicts == {"WRONG_ANSWER"}


def test_mixed_candidates_give_exact_unbiased_pass_at_k(exec_cache: str) -> None:
    _runtimes(["Python"])
    support.reset()
    out = support.run_tasks(
        ["xcodeeval_synth_python"], support.mixed, xcodeeval_exec_cache=exec_cache
    )
    res = out["results"]["xcodeeval_synth_python"]
    for k in (1, 5, 10, 20):
        want = (_pass_at_k_by_formula(20, 3, k) + _pass_at_k_by_formula(20, 12, k)) / 2
        assert res[f"pass@{k},judge"] == pytest.approx(want), k
    # e.g. pass@1 = (3/20 + 12/20) / 2
    assert res["pass@1,judge"] == pytest.approx(0.375)


def test_translation_and_repair_with_oracle(exec_cache: str) -> None:
    _runtimes(["Python", "Ruby", "C++"])
    out = support.run_tasks(
        [
            "xcodeeval_translate_greedy_python",
            "xcodeeval_apr_greedy_ruby",
            "xcodeeval_apr_greedy_cpp",
        ],
        support.oracle,
        xcodeeval_exec_cache=exec_cache,
    )
    res = out["results"]
    assert res["xcodeeval_translate_greedy_python"]["pass@1,judge"] == 1.0
    assert _protocol(out, "xcodeeval_translate_greedy_python")["unscored_rows"] == 1  # unknown uid
    assert len(out["samples"]["xcodeeval_translate_greedy_python"]) == 20
    assert res["xcodeeval_apr_greedy_ruby"]["pass@1,judge"] == 1.0
    assert res["xcodeeval_apr_greedy_cpp"]["pass@1,judge"] == 1.0
    # the buggy program itself fails: repair is not scored as "anything passes"
    buggy = support.run_tasks(
        ["xcodeeval_apr_greedy_ruby"],
        lambda k, c, e: fx.BUGGY_SUM["Ruby"],
        xcodeeval_exec_cache=exec_cache,
    )
    assert buggy["results"]["xcodeeval_apr_greedy_ruby"]["pass@1,judge"] == 0.0


def test_score_cli_reports_pass_at_k_per_language(tmp_path: Path, exec_cache: str) -> None:
    _runtimes(["Python", "C"])
    preds = tmp_path / "preds.jsonl"
    lines = []
    for uid in (fx.SUM, fx.MELON):
        lines.append(
            {"src_uid": uid, "lang_cluster": "Python", "source_code": fx.SOLUTIONS[uid]["Python"]}
        )
        lines.append({"src_uid": uid, "lang": "PyPy 3", "source_code": "print(0)"})
        lines.append({"src_uid": uid, "lang": "GNU C11", "source_code": fx.SOLUTIONS[uid]["C"]})
    lines.append({"src_uid": fx.NOTESTS, "lang_cluster": "Python", "source_code": "print(0)"})
    lines.append({"src_uid": fx.UNKNOWN, "lang_cluster": "Python", "source_code": "print(0)"})
    write_jsonl(preds, lines)
    env = {**os.environ, "CODE_EVAL_CACHE": exec_cache}
    cmd = [
        sys.executable,
        "-m",
        "lm_eval_tasks.xcodeeval.score",
        str(preds),
        "--data-dir",
        str(FIXTURES),
        "--k",
        "1",
        "2",
    ]
    report = json.loads(
        subprocess.run(
            [*cmd, "--json"], check=True, capture_output=True, text=True, cwd=ROOT, env=env
        ).stdout
    )
    table = report["table"]
    assert table["Python"]["pass@1"] == pytest.approx(0.5) and table["Python"]["pass@2"] == 1.0
    assert table["C"]["pass@1"] == 1.0 and table["C"]["pass@2"] is None  # one sample each
    assert table["mean"]["pass@1"] == pytest.approx(0.75)
    assert report["unscored"] == {
        "lines": 2,
        "unknown_src_uid": [fx.UNKNOWN],
        "no_tests": [fx.NOTESTS],
        "unavailable_runtime": {},
    }
    text = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT, env=env).stdout
    assert "NOT SCORED: 2 prediction lines" in text and "mean" in text
    sample = subprocess.run(
        [*cmd, "--sample-tests"], check=True, capture_output=True, text=True, cwd=ROOT, env=env
    ).stdout
    assert sample.startswith("SAMPLE-TEST SCORING")


@pytest.mark.slow
def test_lm_eval_cli_end_to_end(tmp_path: Path, exec_cache: str) -> None:
    _runtimes(["Python"])
    meta = {"xcodeeval_data_dir": str(FIXTURES), "xcodeeval_exec_cache": exec_cache}
    args = ("--confirm_run_unsafe_code", "--apply_chat_template")
    run = run_cli(
        "tests.xcodeeval_support:oracle",
        "xcodeeval_synth_greedy_python",
        tmp_path / "out",
        *args,
        include_path=support.XCE_DIR,
        metadata=meta,
    )
    assert run.report["results"]["xcodeeval_synth_greedy_python"]["pass@1,judge"] == 1.0
    samples = run.samples("xcodeeval_synth_greedy_python")
    assert len(samples) == 2
    # the logged sample carries each program's verdict record as JSON
    records = [verdict_records(s["filtered_resps"][0]) for s in samples]
    assert [[r["verdict"] for r in rs] for rs in records] == [["PASSED"], ["PASSED"]]
    assert all(rs[0]["tests"] == "hidden" and rs[0]["language"] == "PyPy 3" for rs in records)
    assert all(rs[0]["judged_by"] == {"backend": "local"} for rs in records)
    # without the confirmation flag lm-eval refuses to run code
    refused = run_cli(
        "tests.xcodeeval_support:oracle",
        "xcodeeval_synth_greedy_python",
        tmp_path / "refused",
        *[a for a in args if a != "--confirm_run_unsafe_code"],
        include_path=support.XCE_DIR,
        metadata=meta,
        check=False,
    )
    assert refused.returncode != 0
    assert "marked as unsafe" in refused.stderr, refused.stderr[-2000:]


def test_execeval_compat_removes_carriage_returns_as_execeval_does() -> None:
    """ExecEval removes every `\\r` from the inputs, the expected outputs and the source before
    anything runs: a PHP program comparing the line it read with a word passes there, so it must
    pass with ExecEval's comparator (the engine applies the rule to every such job). The default
    comparator runs the test as it is (xCodeEval's own loaders read CRLF as LF first)."""
    import dataclasses

    from code_eval_taskpack.execution import Engine
    from code_eval_taskpack.execution.execeval.compat import execeval_line_ends
    from code_eval_taskpack.execution.types import TestCase
    from lm_eval_tasks.xcodeeval.judging import ExecSettings

    require_runtime("PHP")
    crlf = (TestCase("YES\r\n3\r\n", ("ok 3\r\n",)),)
    source = '<?php\r\n$w = fgets(STDIN);\r\n$n = fgets(STDIN);\r\necho ($w === "YES\\n" ? "ok " : "no ") . ($n * 1), "\\n";\r\n'
    verdicts = {}
    for compat in (True, False):
        p = ExecSettings(execeval_compat=compat).program("PHP", source, crlf, 2.0, 256, "k")
        verdicts[compat] = Engine(comparator=p.comparator).judge(p).verdict
    assert verdicts == {True: Verdict.PASSED, False: Verdict.WRONG_ANSWER}
    job = ExecSettings(execeval_compat=True).program("PHP", source, crlf, 2.0, 256, "k")
    lf = execeval_line_ends(job)
    assert lf.tests == (TestCase("YES\n3\n", ("ok 3\n",)),) and "\r" not in lf.source_code
    plain = dataclasses.replace(job, source_code="<?php\n", tests=lf.tests)
    assert execeval_line_ends(plain) is plain  # nothing to remove: no copy
