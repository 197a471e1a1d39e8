"""The lm-eval tasks: variants differ only in data, every variant loads, and full runs score right
(that the generated YAML is current is checked for every benchmark in test_task_yaml.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lm_eval_tasks.code_infilling import fim
from tests.conftest import load_yaml
from tests.infilling_support import (
    ROWS_FILE,
    TASK_DIR,
    any_format_oracle,
    evaluate,
    load_rows,
    oracle,
    wrong,
)
from tests.lm_fakes import run_cli, task_manager

FORMATS = ["starcoder", "codellama", "deepseek", "qwen", "chat"]


def test_variants_differ_only_in_data() -> None:
    formats = fim.builtin_formats()
    for name in [*FORMATS, "custom"]:
        for suffix in ("", "_exec"):
            doc = load_yaml(TASK_DIR / f"sg_infilling_{name}{suffix}.yaml")
            assert set(doc) == {"include", "task", "generation_kwargs", "metadata"}
            expected_stop = list(formats[name].stop) if name in formats else []
            assert doc["generation_kwargs"]["until"] == expected_stop
            assert doc["metadata"]["sg_infilling_variant"] == name
            assert doc["metadata"].get("sg_infilling_exec", False) == (suffix == "_exec")
    exec_template = load_yaml(TASK_DIR / "_exec_template.yaml")
    assert exec_template["unsafe_code"] is True
    assert "unsafe_code" not in load_yaml(TASK_DIR / "_template.yaml")


def test_every_variant_loads_and_cuts_its_stop_strings() -> None:
    tasks = [f"sg_infilling_{name}" for name in FORMATS]
    assert set(tasks) | {f"{t}_exec" for t in tasks} <= set(task_manager(TASK_DIR).all_tasks)
    out, lm = evaluate(any_format_oracle, tasks)
    results = out["results"]
    # Each request carries its format's stop strings, whatever the format.
    sent = {tuple(gen_kwargs["until"]) for _, gen_kwargs in lm.generate_calls}
    assert sent == {fmt.stop for fmt in fim.builtin_formats().values()}
    for task in tasks:
        assert results[task]["exact_match,middle"] == 1.0, task
        assert results[task]["edit_similarity,middle"] == 1.0, task


def test_exec_task_oracle_resolves_and_logs_outcomes(repos: Path) -> None:
    out, _ = evaluate(oracle, ["sg_infilling_starcoder_exec"], grader="local", repos_dir=str(repos))
    result = out["results"]["sg_infilling_starcoder_exec"]
    assert result["pass@1,graded"] == 1.0 and result["grading_error,graded"] == 0.0
    assert result["exact_match,graded"] == 1.0
    for sample in out["samples"]["sg_infilling_starcoder_exec"]:
        outcome = json.loads(sample["filtered_resps"][0])
        assert outcome["patch_applied"] and outcome["resolved"] and outcome["tests_run"] == 5
        assert sample["pass@1"] == 1.0


def test_exec_task_wrong_model_fails(repos: Path) -> None:
    out, _ = evaluate(wrong, ["sg_infilling_qwen_exec"], grader="local", repos_dir=str(repos))
    result = out["results"]["sg_infilling_qwen_exec"]
    assert result["pass@1,graded"] == 0.0 and result["grading_error,graded"] == 0.0
    assert result["exact_match,graded"] == 0.0
    outcomes = [
        json.loads(s["filtered_resps"][0]) for s in out["samples"]["sg_infilling_qwen_exec"]
    ]
    assert all(o["patch_applied"] and not o["resolved"] for o in outcomes)


# A format defined only by the user: none of its text or stop strings is built in.
USER_FORMAT = {
    "name": "my-coder",
    "template": (
        "<|repo|>{repo}\n{context}<|file|>{file_path} ({language})\n"
        "<|fim_prefix|>{prefix}<|fim_suffix|>{suffix}<|fim_middle|>"
    ),
    "context_intro": "<|ctx|>\n",
    "context_item": "<|file_separator|>{file_path}\n{content}\n",
    "sentinels": ["<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"],
    "stop": ["<|file_separator|>", "<END>"],
}


def _user_format_prompt(row: dict[str, Any]) -> str:
    """The prompt USER_FORMAT must give for a fixture row (snippets worst-ranked first)."""
    snippets = sorted(row["context"], key=lambda s: s["rank"], reverse=True)
    context = "".join(f"<|file_separator|>{s['file_path']}\n{s['content']}\n" for s in snippets)
    return (
        f"<|repo|>{row['repo']}\n"
        + ("<|ctx|>\n" + context if snippets else "")
        + f"<|file|>{row['file_path']} (Python)\n"
        + f"<|fim_prefix|>{row['prefix']}<|fim_suffix|>{row['suffix']}<|fim_middle|>"
    )


def test_custom_tasks_use_a_format_given_in_metadata(repos: Path) -> None:
    rows = load_rows()
    assert rows[0]["context"] and not rows[1]["context"]  # with and without snippets
    # The gold middle, then the format's second stop string before its first, then junk: both
    # stops must be applied, whichever comes first.
    out, lm = evaluate(
        lambda kind, context, extra: (
            any_format_oracle(kind, context, {}) + "<END>junk()\n<|file_separator|>other.py\n"
        ),
        ["sg_infilling_custom", "sg_infilling_custom_exec"],
        sg_infilling_format=USER_FORMAT,
        grader="local",
        repos_dir=str(repos),
    )
    expected = sorted(_user_format_prompt(row) for row in rows)
    assert sorted(context for context, _ in lm.generate_calls) == sorted(expected * 2)
    for _, gen_kwargs in lm.generate_calls:
        # The user's stop strings reach the model (not lm-eval's default "\n\n", which would
        # cut multi-line middles), as the built-in formats' stops do from their YAML.
        assert gen_kwargs["until"] == USER_FORMAT["stop"]
    cheap = out["results"]["sg_infilling_custom"]
    assert cheap["exact_match,middle"] == 1.0 and cheap["edit_similarity,middle"] == 1.0
    for sample in out["samples"]["sg_infilling_custom"]:
        assert sample["filtered_resps"][0] == sample["doc"]["middle"]
        assert json.loads(sample["doc"]["fim_format"])["name"] == "my-coder"
    graded = out["results"]["sg_infilling_custom_exec"]
    assert graded["pass@1,graded"] == 1.0 and graded["grading_error,graded"] == 0.0
    for sample in out["samples"]["sg_infilling_custom_exec"]:
        outcome = json.loads(sample["filtered_resps"][0])
        assert outcome["middle"] == sample["doc"]["middle"] and outcome["resolved"]


def test_unavailable_grader_stops_the_run_before_generation(tmp_path: Path) -> None:
    from lm_eval_tasks.code_infilling.grading import GradingUnavailable

    calls: list[str] = []

    def counting(kind: str, context: str, extra: Any) -> str:
        calls.append(context)
        return ""

    with pytest.raises(GradingUnavailable, match="no git checkout"):
        evaluate(counting, ["sg_infilling_deepseek_exec"], grader="local", repos_dir=str(tmp_path))
    assert calls == []


def test_unavailable_docker_stops_a_swebench_run_before_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lm_eval_tasks.code_infilling.grading import GradingUnavailable

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    monkeypatch.setenv("PATH", str(tmp_path))  # and no docker CLI either
    calls: list[str] = []

    def counting(kind: str, context: str, extra: Any) -> str:
        calls.append(context)
        return ""

    with pytest.raises(GradingUnavailable, match="docker"):
        evaluate(counting, ["sg_infilling_codellama_exec"], grader="swebench")
    assert calls == []


@pytest.mark.slow
def test_cli_end_to_end_with_an_offline_model(repos: Path, tmp_path: Path) -> None:
    metadata = {
        "sg_infilling_data": str(ROWS_FILE),
        "grader": "local",
        "repos_dir": str(repos),
        "test_cmd": "python -m pytest -rA",
    }
    run = run_cli(
        "tests.infilling_support:any_format_oracle",
        "sg_infilling_chat_exec",
        tmp_path / "out",
        "--confirm_run_unsafe_code",
        "--apply_chat_template",
        include_path=TASK_DIR,
        metadata=metadata,
    )
    result = run.report["results"]["sg_infilling_chat_exec"]
    assert result["pass@1,graded"] == 1.0 and result["exact_match,graded"] == 1.0
    samples = run.samples("sg_infilling_chat_exec")
    assert len(samples) == 2
    for sample in samples:
        outcome = json.loads(sample["filtered_resps"][0])
        assert outcome["resolved"] and outcome["patch_applied"] and outcome["tests_run"] == 5
        assert "<|user|>" in sample["arguments"]["gen_args_0"]["arg_0"]  # chat template applied
