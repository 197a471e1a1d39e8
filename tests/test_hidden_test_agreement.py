"""The 848 shared ChatGPT programs on xCodeEval's real hidden tests, against ExecEval's own
outcome for each (`execeval_hidden_tests_passed`): in ExecEval's protocol every program must get
ExecEval's pass/fail, and in the pack's own protocol (through lm-eval) every program whose outcome
differs must be a reviewed entry of `lm_eval_tasks/reporting/expected_disagreements.json`."""

from __future__ import annotations

from pathlib import Path

import pytest

from lm_eval_tasks.reporting import demo
from tests.conftest import SHARED_DATA, require, require_runtime

PREDICTIONS = SHARED_DATA / "xcodeeval_chatgpt_direct" / "predictions.jsonl"
VALIDATION = SHARED_DATA / "xcodeeval_validation"
CLUSTERS = ("C", "C++", "C#", "Go", "PHP", "Python", "Ruby", "Rust")


@pytest.fixture(scope="module")
def rows() -> list[dict[str, object]]:
    require(PREDICTIONS.is_file(), f"the shared ChatGPT programs are missing at {PREDICTIONS}")
    require((VALIDATION / "unittest_db.json").is_file(), f"hidden tests missing in {VALIDATION}")
    out = demo.read_predictions(PREDICTIONS)
    assert len(out) == 848 and sum(bool(r["execeval_hidden_tests_passed"]) for r in out) == 128
    return out


@pytest.fixture(scope="module")
def expected() -> dict[str, dict[str, dict[str, str]]]:
    reviewed = demo.load_expected()
    for entries in reviewed.values():
        assert all(e["category"] != demo.UNREVIEWED for e in entries.values())
    return reviewed


@pytest.fixture(scope="module")
def execeval_outcomes(rows: list[dict[str, object]]) -> list[demo.Outcome]:
    from lm_eval_tasks.xcodeeval.execeval_client import CLUSTER_RUNTIME

    for cluster in CLUSTERS:
        require_runtime(CLUSTER_RUNTIME[cluster])
    return demo.execeval_protocol(rows, VALIDATION, workers=2)


@pytest.fixture(scope="module")
def own_outcomes(rows: list[dict[str, object]]) -> list[demo.Outcome]:
    for cluster in CLUSTERS:
        require_runtime(cluster)
    return demo.own_protocol(rows, VALIDATION, workers=2)


def test_every_program_gets_execevals_verdict_in_its_protocol(
    execeval_outcomes: list[demo.Outcome], expected: dict[str, dict[str, dict[str, str]]]
) -> None:
    """The authors' client, ExecEval's runtime names and limits, to the ExecEval-compatible
    server: the same pass/fail for every program, so the same per-language pass@1."""
    assert len(execeval_outcomes) == 848
    found = demo.disagreements(execeval_outcomes)
    assert demo.compare(found, expected[demo.EXECEVAL_PROTOCOL]) == []
    if not expected[demo.EXECEVAL_PROTOCOL]:
        assert demo.pass_at_1(execeval_outcomes) == demo.pass_at_1(execeval_outcomes, True)
    runtimes = {o.lang_cluster: o.runtime for o in execeval_outcomes}
    assert runtimes["C"] == "GNU C" and runtimes["Rust"] == "Rust" and runtimes["C#"] == "C# 10"


def test_the_packs_protocol_through_lm_eval_differs_only_where_reviewed(
    own_outcomes: list[demo.Outcome], expected: dict[str, dict[str, dict[str, str]]]
) -> None:
    """`xcodeeval_synth_greedy_*` with a model replaying each raw reply: one document per
    problem and language, and every difference from ExecEval reviewed."""
    assert len(own_outcomes) == 848
    assert len({(o.src_uid, o.lang_cluster) for o in own_outcomes}) == 848
    found = demo.disagreements(own_outcomes)
    assert demo.compare(found, expected[demo.OWN_PROTOCOL]) == []
    assert all(o.verdict != "INFRA_ERROR" for o in own_outcomes)


def test_the_report_shows_both_protocols(
    tmp_path: Path,
    execeval_outcomes: list[demo.Outcome],
    own_outcomes: list[demo.Outcome],
    expected: dict[str, dict[str, dict[str, str]]],
) -> None:
    results = {demo.EXECEVAL_PROTOCOL: execeval_outcomes, demo.OWN_PROTOCOL: own_outcomes}
    text = demo.report(tmp_path, results, expected).read_text()
    agree = demo.agreement(execeval_outcomes)
    assert f"| ExecEval: passed | {agree[(True, True)]} | {agree[(True, False)]} |" in text
    assert "HIDDEN tests" in text and "Differences from the reviewed list" not in text
    assert len((tmp_path / "programs.jsonl").read_text().splitlines()) == 2 * 848
