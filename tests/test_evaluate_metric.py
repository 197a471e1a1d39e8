"""The `code_exec` evaluate metric, loaded for real with `evaluate.load(<local path>)`, offline."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, require_runtime
from tests.engine_programs import COMPILE_ERROR, LUCKY, wrong

LUCKY_TESTS = [
    {"input": "2\n", "output": ["6"]},
    {"input": "1\n", "output": ["2"]},
    {"input": "55\n", "output": ["72057594037927934"]},
]


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        monkeypatch.setenv(var, "1")
    monkeypatch.setenv("CODE_EVAL_CACHE", str(tmp_path / "cache"))


def _load() -> Any:
    import evaluate

    from code_eval_taskpack.utils.evaluate_metrics import CODE_EXEC_PATH

    return evaluate.load(str(CODE_EXEC_PATH))


def test_refuses_without_the_opt_in(offline: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from code_eval_taskpack.utils.evaluate_metrics import execution_passk

    judged: list[Any] = []
    monkeypatch.setattr(execution_passk, "judge_programs", lambda *a, **k: judged.append(a))
    metric = _load()
    refs = [{"language": "Python 3", "tests": LUCKY_TESTS}]
    for value in (None, "0", "true", "yes"):
        if value is None:
            monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
        else:
            monkeypatch.setenv("HF_ALLOW_CODE_EVAL", value)
        with pytest.raises(ValueError, match="HF_ALLOW_CODE_EVAL"):
            metric.compute(predictions=[[LUCKY["Python"]]], references=refs)
    assert judged == []  # nothing ran


def test_pass_at_k_and_verdicts_in_all_11_languages(
    offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtimes = {
        "C": "GNU C11", "C++": "GNU C++17", "C#": "Mono C#", "Go": "Go", "Java": "Java 17",
        "Javascript": "Node.js", "Kotlin": "Kotlin", "PHP": "PHP", "Python": "Python 3",
        "Ruby": "Ruby 3", "Rust": "Rust 2018",
    }  # fmt: skip
    for name in runtimes.values():
        require_runtime(name)
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "1")
    metric = _load()
    clusters = list(runtimes)
    predictions = [[LUCKY[c], wrong(c)] for c in clusters]
    references = [{"language": runtimes[c], "tests": LUCKY_TESTS} for c in clusters]
    out = metric.compute(predictions=predictions, references=references, k=[1, 2, 5])
    assert out["verdicts"] == [["PASSED", "WRONG_ANSWER"]] * len(clusters), out["details"]
    assert out["pass@1"] == pytest.approx(0.5)
    assert out["pass@2"] == pytest.approx(1.0)
    assert "pass@5" not in out  # k above the candidates per problem is not reported
    assert out["infra_errors"] == 0
    names = [recs[0]["runtime"]["name"] for recs in out["details"]]
    # ExecEval's `Kotlin` is the `Kotlin 1.7` runtime (-language-version 1.7)
    assert names == [{"Kotlin": "Kotlin 1.7"}.get(runtimes[c], runtimes[c]) for c in clusters]


def test_unbiased_estimator_limits_and_compile_errors(
    offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_runtime("Python 3")
    require_runtime("GNU C++17")
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "1")
    metric = _load()
    slow = "while True:\n    pass\n"
    out = metric.compute(
        predictions=[
            [LUCKY["Python"], wrong("Python"), slow],  # 1 of 3 correct
            [COMPILE_ERROR["C++"], LUCKY["C++"], LUCKY["C++"]],  # 2 of 3 correct
        ],
        references=[
            {"language": "Python 3", "tests": LUCKY_TESTS, "time_limit_s": 0.5},
            {"language": "GNU C++17", "tests": LUCKY_TESTS, "memory_limit_mb": 64},
        ],
        k=[1, 2],
    )
    assert out["verdicts"] == [
        ["PASSED", "WRONG_ANSWER", "TIME_LIMIT_EXCEEDED"],
        ["COMPILATION_ERROR", "PASSED", "PASSED"],
    ]
    # pass@k = 1 - C(n-c, k) / C(n, k), averaged over the two problems
    p1 = (1 / 3 + 2 / 3) / 2
    p2 = ((1 - math.comb(2, 2) / math.comb(3, 2)) + 1.0) / 2
    assert out["pass@1"] == pytest.approx(p1)
    assert out["pass@2"] == pytest.approx(p2)
    assert out["details"][0][2]["limits"]["time_s"] == 0.5
    assert out["details"][1][0]["limits"]["memory_mb"] == 64


def test_bad_references_name_the_row_and_field(
    offline: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from code_eval_taskpack.utils.evaluate_metrics.execution_passk import MetricInputError, compute

    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "1")
    good = {"language": "Python 3", "tests": LUCKY_TESTS}
    cases: list[tuple[Any, Any, str]] = [
        ([["x"], ["y"]], [good], "2 predictions for 1 references"),
        ([["x"]], [{"language": "Brainfuck", "tests": LUCKY_TESTS}], r"references\[0\].language"),
        ([["x"]], [{"language": "Python 3", "tests": []}], r"references\[0\].tests"),
        ([["x"]], [{**good, "time_limit_s": -1}], r"references\[0\].time_limit_s"),
        ([["x"]], [{**good, "tests": [{"input": "1", "output": []}]}], r"tests\[0\].output"),
        (["print(1)"], [good], r"predictions\[0\]"),
    ]
    for predictions, references, message in cases:
        with pytest.raises(MetricInputError, match=message):
            compute(predictions, references, k=[1])


def test_path_command_prints_the_loadable_folder() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "code_eval_taskpack.utils.evaluate_metrics"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    path = Path(done.stdout.strip())
    assert (path / "code_exec.py").is_file()
    assert path.name == "code_exec"
