"""ClozeTest-maxmin scoring end to end through lm-eval with scripted models: oracle 100%, always
wrong 0%, the two answer parses, predict-only NaN, chat and base prompts, and the
log-likelihood variant deciding on evidence after the mask."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from lm_eval_tasks.clozetest_maxmin.scoring import first_capital, letter
from tests import clozetest_support
from tests.clozetest_support import (
    GEN_TASKS,
    LANGUAGES,
    REAL_COUNTS,
    user_text,
    write_answers,
)
from tests.lm_fakes import evaluate

real_dir = clozetest_support.real_dir  # the shared fixture, visible to this module


@pytest.fixture(scope="module")
def answers(
    real_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, str]]:
    """Made-up answers for the real inputs, written for the tests only: (answers dir, prompt->gold)."""
    root = tmp_path_factory.mktemp("clozetest_answers")
    return root, write_answers(root, real_dir)


def metadata(real_dir: Path, answers_dir: Path) -> dict[str, Any]:
    return {"clozetest_data_dir": str(real_dir), "clozetest_answers": str(answers_dir)}


@pytest.mark.parametrize(
    ("reply", "capital", "robust"),
    [
        ("The answer is B.", "T", "B"),
        ("A", "A", "A"),
        (" B. min", "B", "B"),
        ("answer: b", "", ""),
        ("it should be min", "", "B"),
        ("Max.", "M", "A"),
        ("a max(x, y)", "", "A"),
        ("maximum or minimum", "", ""),
        ("", "", ""),
        ("Éa", "É", ""),
    ],
)
def test_answer_parses(reply: str, capital: str, robust: str) -> None:
    assert first_capital(reply) == capital
    assert letter(reply) == robust


def test_oracle_scores_100_and_always_wrong_0_on_all_languages(
    real_dir: Path, answers: tuple[Path, dict[str, str]]
) -> None:
    answers_dir, gold = answers
    flip = {"A": "B", "B": "A"}

    def oracle(kind: str, context: str, extra: Any) -> str:
        return gold.get(user_text(context), "?")

    out, lm = evaluate(oracle, ["clozetest_maxmin"], metadata(real_dir, answers_dir))
    results = out["results"]
    assert len(lm.generate_calls) == sum(REAL_COUNTS.values())
    assert all(user_text(ctx) in gold and ctx == user_text(ctx) for ctx, _ in lm.generate_calls)
    for name in [*GEN_TASKS, "clozetest_maxmin"]:
        assert results[name]["exact_match,first_capital"] == 1.0, name
        assert results[name]["exact_match,letter"] == 1.0, name
    share = sum(g == "A" for g in gold.values()) / len(gold)
    assert results["clozetest_maxmin"]["gold_max_share,letter"] == pytest.approx(share)

    def wrong(kind: str, context: str, extra: Any) -> str:
        return flip[gold[user_text(context)]]

    out, _ = evaluate(wrong, ["clozetest_maxmin_macro"], metadata(real_dir, answers_dir), limit=40)
    for name in [*GEN_TASKS, "clozetest_maxmin_macro"]:
        assert out["results"][name]["exact_match,first_capital"] == 0.0, name
        assert out["results"][name]["exact_match,letter"] == 0.0, name


def test_micro_and_macro_averages(tmp_path: Path) -> None:
    """Unequal sizes (ruby 1 item, the rest 3 each); right only on ruby: micro 1/16, macro 1/6."""
    for lang in LANGUAGES:
        count = 1 if lang == "ruby" else 3
        items = [
            {
                "idx": f"maxmin-{n}",
                "nl_tokens": [lang],
                "pl_tokens": ["f", "(", "<mask>", ")", str(n)],
            }
            for n in range(1, count + 1)
        ]
        (tmp_path / lang).mkdir()
        (tmp_path / lang / "clozeTest.json").write_text(json.dumps(items))
    gold = write_answers(tmp_path, tmp_path)

    def ruby_only(kind: str, context: str, extra: Any) -> str:
        prompt = user_text(context)
        right = gold[prompt]
        return right if "aim of the code: ruby\n" in prompt else {"A": "B", "B": "A"}[right]

    meta = {"clozetest_data_dir": str(tmp_path)}
    micro, _ = evaluate(ruby_only, ["clozetest_maxmin"], meta)
    macro, _ = evaluate(ruby_only, ["clozetest_maxmin_macro"], meta)
    assert micro["results"]["clozetest_maxmin_ruby"]["exact_match,letter"] == 1.0
    assert micro["results"]["clozetest_maxmin_java"]["exact_match,letter"] == 0.0
    assert micro["results"]["clozetest_maxmin"]["exact_match,letter"] == pytest.approx(1 / 16)
    assert macro["results"]["clozetest_maxmin_macro"]["exact_match,letter"] == pytest.approx(1 / 6)


def test_the_answer_is_b_under_both_filters_with_chat_template(
    real_dir: Path, answers: tuple[Path, dict[str, str]]
) -> None:
    answers_dir, gold = answers
    out, lm = evaluate(
        lambda kind, ctx, extra: "The answer is B.",
        ["clozetest_maxmin_ruby"],
        metadata(real_dir, answers_dir),
        apply_chat_template=True,
        log_samples=True,
    )
    context = lm.generate_calls[0][0]
    assert context.startswith("<|user|>\nCode:") and context.endswith("Answer:\n<|assistant|>\n")
    assert all(user_text(ctx) in gold for ctx, _ in lm.generate_calls)
    samples = out["samples"]["clozetest_maxmin_ruby"]
    by_filter: dict[str, set[str]] = {}
    for sample in samples:
        by_filter.setdefault(sample["filter"], set()).add(sample["filtered_resps"][0])
    assert by_filter == {"first_capital": {"T"}, "letter": {"B"}}
    result = out["results"]["clozetest_maxmin_ruby"]
    ruby_golds = [s["target"] for s in samples if s["filter"] == "letter"]
    assert result["exact_match,first_capital"] == 0.0
    assert result["exact_match,letter"] == pytest.approx(ruby_golds.count("B") / 38)
    assert 0 < result["exact_match,letter"] < 1


def test_predict_only_reports_nan_never_zero(real_dir: Path, tmp_path: Path) -> None:
    meta = {"clozetest_data_dir": str(real_dir), "clozetest_predict_only": True}
    out, lm = evaluate(
        lambda kind, ctx, extra: "A", ["clozetest_maxmin"], meta, limit=3, log_samples=True
    )
    assert len(lm.generate_calls) == 18
    results = out["results"]
    for name in [*GEN_TASKS, "clozetest_maxmin"]:
        for key in ("exact_match,first_capital", "exact_match,letter", "gold_max_share,letter"):
            assert math.isnan(results[name][key]), (name, key)
    # predictions are kept for later scoring
    assert {s["filtered_resps"][0] for s in out["samples"]["clozetest_maxmin_go"]} == {"A"}
    # and NaN survives lm-eval's JSON serialisation
    dumped = json.loads(json.dumps(results, default=str))
    assert math.isnan(dumped["clozetest_maxmin"]["exact_match,letter"])


# ---------------------------------------------------------------------------------------------
# Log-likelihood variant


def _suffix_fixture(root: Path) -> None:
    """Two ruby items whose text BEFORE the mask is identical: only the suffix tells them apart."""
    prefix = "def pick ( a , b )"
    items = [
        ("maxmin-1", f"{prefix} <mask> ( a , b ) # the larger end", "max"),
        ("maxmin-2", f"{prefix} <mask> ( a , b ) # the smaller end", "min"),
        ("maxmin-3", f"{prefix} <mask> ( a , b ) # the smaller end", "min"),
    ]
    (root / "ruby").mkdir(parents=True)
    (root / "ruby" / "clozeTest.json").write_text(
        json.dumps(
            [
                {"idx": i, "nl_tokens": ["Pick", "."], "pl_tokens": code.split(" ")}
                for i, code, _ in items
            ]
        )
    )
    (root / "ruby" / "answers.txt").write_text(
        "".join(f"{i}<CODESPLIT>{lab}\n" for i, _, lab in items)
    )


def whole_text_scorer(kind: str, context: str, extra: Any) -> float:
    """A 'model' that can only judge the completed function as a whole."""
    text = context + extra
    consistent = "max ( a , b ) # the larger" in text or "min ( a , b ) # the smaller" in text
    return -1.0 if consistent else -9.0


def test_ll_variant_decides_on_text_after_the_mask(tmp_path: Path) -> None:
    _suffix_fixture(tmp_path)
    out, lm = evaluate(
        whole_text_scorer, ["clozetest_maxmin_ll_ruby"], {"clozetest_data_dir": str(tmp_path)}
    )
    assert out["results"]["clozetest_maxmin_ll_ruby"]["acc,none"] == 1.0
    assert lm.loglikelihood_calls[:2] == [
        ("Pick . def pick ( a , b )", " max ( a , b ) # the larger end"),
        ("Pick . def pick ( a , b )", " min ( a , b ) # the larger end"),
    ]
    assert out["results"]["clozetest_maxmin_ll_ruby"]["gold_max_share,none"] == pytest.approx(1 / 3)


def test_ll_group_always_wrong_and_predict_only(tmp_path: Path) -> None:
    _suffix_fixture(tmp_path)

    def inverted(kind: str, context: str, extra: Any) -> float:
        return -whole_text_scorer(kind, context, extra)

    out, _ = evaluate(inverted, ["clozetest_maxmin_ll_ruby"], {"clozetest_data_dir": str(tmp_path)})
    assert out["results"]["clozetest_maxmin_ll_ruby"]["acc,none"] == 0.0
    meta = {"clozetest_data_dir": str(tmp_path), "clozetest_predict_only": True}
    out, _ = evaluate(whole_text_scorer, ["clozetest_maxmin_ll_ruby"], meta)
    assert math.isnan(out["results"]["clozetest_maxmin_ll_ruby"]["acc,none"])
