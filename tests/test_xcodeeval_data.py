"""xCodeEval data access, task loading, prompts, parsing and non-execution metrics (no toolchains)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.utils.errors import DataError
from code_eval_taskpack.utils.metrics import binary_scores, multilabel_macro_f1, rank_of_positive
from lm_eval_tasks.xcodeeval import _generate_configs, documents, kinds
from lm_eval_tasks.xcodeeval import data as xd
from lm_eval_tasks.xcodeeval.parsing import parse_compile_answer, parse_tags
from tests.conftest import TASKS_DIR, serve_hub
from tests.task_configs import hook_files
from tests.xcodeeval_support import (
    DEFAULT_META,
    FIXTURES,
    fx,
    problem_of,
    run_tasks,
    task_manager,
)

# --------------------------------------------------------------------------- config files


def test_every_task_and_group_loads_through_lm_eval() -> None:
    generated = _generate_configs.documents().values()
    names = {str(doc.get("group") or doc["task"]) for doc in generated if "task" in doc}
    tm = task_manager()
    missing = names - set(tm.all_tasks)
    assert not missing, f"not found by lm-eval (broken YAML?): {sorted(missing)}"
    slugs = list(xd.SLUGS)
    for family in ("synth", "synth_greedy", "translate", "translate_greedy", "apr", "apr_greedy"):
        assert {f"xcodeeval_{family}_{s}" for s in slugs} <= names
        assert f"xcodeeval_{family}" in tm.all_groups
    for base in ("tag", "tag_desc", "compile"):
        assert {f"xcodeeval_{base}", *(f"xcodeeval_{base}_{s}" for s in slugs)} <= names
    assert {"xcodeeval_retrieval_nl_code", "xcodeeval_retrieval_code_code"} <= names
    task_names = sorted(n for n in names if n not in tm.all_groups)
    tasks = _load(tm, task_names)
    assert sorted(tasks) == task_names
    for name, task in tasks.items():
        assert len(task.test_docs()) > 0, name
        executes = any(name.startswith(f"xcodeeval_{f}_") for f in ("synth", "translate", "apr"))
        assert bool(task.config.unsafe_code) == executes, name
        # templates name `!function utils.x` next to them, never from a task's subfolder
        hooks = hook_files(task.config, TASKS_DIR)
        assert hooks and all(f.startswith("tasks:xcodeeval/") for f in hooks), (name, hooks)


def test_every_generated_task_is_of_a_declared_kind() -> None:
    """The kinds table (`kinds.KINDS`) is what the generator, the document builder and the raw
    readers share: each kind has its template, its tasks sit in its folder under its stem."""
    seen: set[str] = set()
    for path, doc in _generate_configs.documents().items():
        if "dataset_kwargs" not in doc:
            continue
        kind = kinds.BY_STEM[doc["dataset_kwargs"]["xce_kind"]]
        seen.add(kind.stem)
        assert path.startswith(f"{kind.yaml_folder}/") and doc["task"].startswith(kind.task())
        assert (TASKS_DIR / "xcodeeval" / f"_{kind.stem}_template_yaml").is_file()
    assert seen == set(kinds.BY_STEM)
    assert [k.stem for k in kinds.KINDS if k.executed] == ["synth", "translate", "apr"]
    assert kinds.SYNTH.task("greedy", "cpp") == "xcodeeval_synth_greedy_cpp"
    assert set(xd.CLUSTER_TASKS) == {
        "tag_classification", "code_compilation", "code_translation", "apr",
        "retrieval_nl_code", "retrieval_code_code",
    }  # fmt: skip
    with pytest.raises(ValueError, match="t: unknown xCodeEval task kind 'bogus'"):
        documents.build_docs("bogus", "t", ["C"], "validation", xd.DataSource(FIXTURES), {})


def _load(tm: Any, names: list[str]) -> dict[str, Any]:
    return dict(tm.load(names)["tasks"])


def test_paper_protocol_and_greedy_variant_settings() -> None:
    tasks = _load(task_manager(), ["xcodeeval_synth_rust", "xcodeeval_synth_greedy_rust"])
    paper = tasks["xcodeeval_synth_rust"].config
    assert paper.repeats == 20
    assert paper.generation_kwargs["temperature"] == 0.3157894736842105
    assert paper.generation_kwargs["top_p"] == 1.0 and paper.generation_kwargs["do_sample"] is True
    assert [m["metric"] for m in paper.metric_list][:4] == [
        "pass@1",
        "pass@5",
        "pass@10",
        "pass@20",
    ]
    greedy = tasks["xcodeeval_synth_greedy_rust"].config
    assert greedy.repeats == 1 and greedy.generation_kwargs["do_sample"] is False
    assert greedy.metric_list[0]["metric"] == "pass@1"


# --------------------------------------------------------------------------- prompts


def _authors_prompt(p: dict[str, Any], lang: str) -> str:
    text = (
        f"Write a program in {lang} to solve this programming problem:\nDescription: {p['description']}\n"
        f"Input Specification: {p['input_spec']}\nOutput Specification: {p['output_spec']}\n"
    )
    for i, o in zip(p["sample_inputs"], p["sample_outputs"], strict=True):
        text += f"\nSample Input:\n{i}\nSample Output:\n{o}"
    text += (
        f"\nNotes: {p['notes']}\nTake input from {p['input_from']} and output to {p['output_to']}\n"
        f"Provide the {lang} code without any extra description or tokens. Target code: "
    )
    return text


@pytest.mark.parametrize(
    ("task", "lang"), [("xcodeeval_synth_greedy_csharp", "C#"), ("xcodeeval_synth_cpp", "C++")]
)
def test_synthesis_prompt_is_the_authors_prompt_verbatim(task: str, lang: str) -> None:
    t = _load(task_manager(), [task])[task]
    problems = {p["src_uid"]: p for p in fx.PROBLEMS}
    docs_ = list(t.test_docs())
    assert docs_
    for doc in docs_:
        assert t.doc_to_text(doc) == _authors_prompt(problems[doc["src_uid"]], lang)


# --------------------------------------------------------------------------- data loading


def test_default_source_is_the_hub_through_fetch_hub_file(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = serve_hub(monkeypatch, FIXTURES)

    def asked() -> list[tuple[str, str]]:
        return [(c.repo_id, c.filename) for c in calls]

    monkeypatch.delenv("XCODEEVAL_DATA", raising=False)
    source = xd.source_from_settings({})
    assert source.local_dir is None
    rows, report = xd.synthesis_rows(source, "test", "xcodeeval_synth_python")
    assert [r.problem.src_uid for r in rows] == [fx.SUM, fx.MELON]
    assert report.total == 3 and report.missing_tests == [fx.NOTESTS]
    assert ("NTU-NLP-sg/xCodeEval", "program_synthesis/test/prog_syn_test.jsonl") in asked()
    assert ("NTU-NLP-sg/xCodeEval", "unittest_db.json") in asked()
    # the same through lm-eval: no data dir given, documents come from the (fake) Hub
    t = _load(task_manager({}), ["xcodeeval_apr_greedy_python"])["xcodeeval_apr_greedy_python"]
    assert "apr-Python-1" in {d["apr_id"] for d in t.test_docs()}
    assert ("NTU-NLP-sg/xCodeEval", "apr/test/Python.jsonl") in asked()
    # a file the Hub does not have: the error names it and the task
    with pytest.raises(
        DataError, match=r"xCodeEval/nope/validation/Kotlin\.jsonl.*xcodeeval_x needs it"
    ):
        xd.DataSource().path("nope/validation/Kotlin.jsonl", "xcodeeval_x")


def test_split_folders_follow_the_authors_published_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Hub's tree: the retrieval validation files live in `validation/` (the dataset's May
    2023 fix moved them there from `dev/`, the stale first upload) and keep their `dev` names."""
    expected = {
        (
            "retrieval_nl_code",
            "validation",
            "C#",
        ): "retrieval_nl_code/validation/C#_nl_code_dev_file.jsonl",
        ("retrieval_nl_code", "test", "C++"): "retrieval_nl_code/test/C++_nl_code_test_file.jsonl",
        ("retrieval_code_code", "validation", "Python"): (
            "retrieval_code_code/validation/Python_code_code_dev_file.jsonl"
        ),
        ("retrieval_code_code", "test", "Rust"): (
            "retrieval_code_code/test/Rust_code_code_test_file.jsonl"
        ),
    }
    for task in ("tag_classification", "code_compilation", "code_translation", "apr"):
        expected[(task, "validation", "Go")] = f"{task}/validation/Go.jsonl"
        expected[(task, "test", "PHP")] = f"{task}/test/PHP.jsonl"
    for (task, split, cluster), path in expected.items():
        assert xd.cluster_file(task, split, cluster) == path
    assert xd.SYNTHESIS_FILES == {
        "validation": "program_synthesis/validation/prog_syn_val.jsonl",
        "test": "program_synthesis/test/prog_syn_test.jsonl",
    }
    # the fixtures are in that layout, and the retrieval task asks the Hub for those files
    assert (FIXTURES / expected[("retrieval_nl_code", "validation", "C#")]).is_file()
    assert not (FIXTURES / "retrieval_nl_code" / "dev").exists()
    calls = serve_hub(monkeypatch, FIXTURES)
    monkeypatch.delenv("XCODEEVAL_DATA", raising=False)
    tasks = ["xcodeeval_retrieval_nl_code", "xcodeeval_retrieval_code_code"]
    loaded = _load(task_manager({}), tasks)
    assert all(len(list(loaded[t].test_docs())) == 22 for t in tasks)
    asked = [c.filename for c in calls]
    assert "retrieval_code_code/validation/Kotlin_code_code_dev_file.jsonl" in asked
    assert not [f for f in asked if "/dev/" in f]


def test_hub_error_names_the_file_and_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    serve_hub(monkeypatch, None)
    with pytest.raises(
        DataError, match=r"hf://datasets/NTU-NLP-sg/xCodeEval/unittest_db\.json.*xcodeeval_apr_c"
    ):
        xd.DataSource().path("unittest_db.json", "xcodeeval_apr_c")


def test_local_copy_by_environment_and_missing_file_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "xce"
    shutil.copytree(FIXTURES, copy)
    (copy / "unittest_db.json").unlink()
    monkeypatch.setenv("XCODEEVAL_DATA", str(copy))
    source = xd.source_from_settings({})
    assert source.local_dir == copy.resolve()
    with pytest.raises(DataError) as err:
        xd.synthesis_rows(source, "validation", "xcodeeval_synth_go")
    assert str(copy / "unittest_db.json") in str(err.value)
    assert "xcodeeval_synth_go" in str(err.value)
    # metadata wins over the environment
    assert (
        xd.source_from_settings({"metadata": {"xcodeeval_data_dir": str(FIXTURES)}}).local_dir
        == FIXTURES.resolve()
    )


def test_unjoinable_rows_are_counted_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    source = xd.DataSource(FIXTURES)
    rows, report = xd.joined_exec_rows(
        source, kinds.TRANSLATE, "validation", list(xd.CLUSTERS), "xcodeeval_translate_x"
    )
    assert report.total == 23 and len(rows) == 22
    assert report.missing_problem == [fx.UNKNOWN] and report.unscored == 1
    with caplog.at_level("WARNING", logger="xcodeeval"):
        report.log()
    assert "1 not scored" in caplog.text and fx.UNKNOWN in caplog.text
    # and the count reaches lm-eval's results table
    t = _load(task_manager(), ["xcodeeval_translate_greedy_rust"])[
        "xcodeeval_translate_greedy_rust"
    ]
    docs_ = list(t.test_docs())
    assert len(docs_) == 20 and {d["_unscored_rows"] for d in docs_} == {1}
    # round-robin order: the first 10 documents cover the 10 source languages
    assert len({d["source_lang_cluster"] for d in docs_[:10]}) == 10


def test_bad_rows_are_errors_naming_file_row_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "rows.jsonl"
    bad.write_text('{"a": 1}\n{not json\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"rows\.jsonl, row 2"):
        xd.read_jsonl(bad)
    row = dict(fx.PROBLEMS[0])
    del row["time_limit"]
    with pytest.raises(DataError, match=r"row 7, field 'time_limit'"):
        xd.Problem.from_row(row, "p.jsonl", 7)
    # an unreadable limit in one row: the problem has none (its rows are counted when judged)
    assert xd.Problem.from_row(dict(fx.PROBLEMS[0], time_limit="fast"), "p", 7).time_limit_s is None
    assert xd.parse_time_limit("2 seconds") == 2.0 and xd.parse_time_limit("0.5 seconds") == 0.5
    assert xd.parse_memory_limit("256 megabytes") == 256
    db = {"u": [{"input": "1", "output": "x", "extra": 5}], "v": [{"input": "1"}]}
    assert xd.tests_for(db, "u") == [{"input": "1", "output": ["x"]}]
    assert xd.tests_for(db, "missing") is None
    with pytest.raises(DataError, match="field 'v'"):
        xd.tests_for(db, "v")


def test_split_and_sample_test_settings(shared_data: Path) -> None:
    sample_dir = shared_data / "xcodeeval_sample"
    built = documents.build_dataset(
        xce_task="xcodeeval_synth_greedy_python",
        xce_kind="synth",
        xce_cluster="Python",
        xcodeeval_data_dir=str(sample_dir),
        xcodeeval_sample_tests=True,
        xcodeeval_split="validation",
    )["test"]
    assert len(built) == 106
    assert set(built["_tests"]) == {"sample"} and set(built["_split"]) == {"validation"}
    # without the switch, the missing hidden tests are an error, not a silent fallback
    with pytest.raises(DataError, match="xcodeeval_synth_greedy_python"):
        documents.build_dataset(
            xce_task="xcodeeval_synth_greedy_python",
            xce_kind="synth",
            xce_cluster="Python",
            xcodeeval_data_dir=str(sample_dir),
        )
    with pytest.raises(ValueError, match="split"):
        documents.build_dataset(
            xce_task="t",
            xce_kind="synth",
            xce_cluster="Python",
            xcodeeval_split="train",
            **DEFAULT_META,
        )
    val = documents.build_dataset(
        xce_task="t",
        xce_kind="synth",
        xce_cluster="Go",
        xcodeeval_split="validation",
        **DEFAULT_META,
    )
    assert len(val["test"]) == 2


# --------------------------------------------------------------------------- parsing and metrics

VOCAB = [
    "2-sat",
    "brute force",
    "dp",
    "graph matchings",
    "graphs",
    "math",
    "string suffix structures",
    "strings",
    "*special",
]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("dp, math", ["dp", "math"]),
        ('Tags: ["Math", "Brute_Force"]', ["brute force", "math"]),
        ("- graph matchings\n- 2 SAT", ["2-sat", "graph matchings"]),
        ("string suffix structures and strings", ["string suffix structures", "strings"]),
        ("string suffix structures", ["string suffix structures"]),
        ("dpq mathematics graph", []),
        ("*special problem", ["*special"]),
        ("", []),
    ],
)
def test_parse_tags(reply: str, expected: list[str]) -> None:
    assert parse_tags(reply, VOCAB) == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("YES", "compiles"),
        ("no.", "error"),
        ("  Yes, it compiles", "compiles"),
        ("It does not compile.", "error"),
        ("There is a compilation error", "error"),
        ("It compiles fine", "compiles"),
        ("maybe", None),
        ("Nobody knows", None),
    ],
)
def test_parse_compile_answer(reply: str, expected: str | None) -> None:
    assert parse_compile_answer(reply) == expected


def test_metric_arithmetic() -> None:
    pairs = [({"a"}, {"a", "b"}), ({"b", "c"}, {"b"})]
    # a: tp1 -> 1; b: tp1 fn1 -> 2/3; c: fp1 -> 0; d: never seen -> left out
    assert multilabel_macro_f1(pairs, ["a", "b", "c", "d"]) == pytest.approx((1 + 2 / 3 + 0) / 3)
    s = binary_scores([("x", "x"), ("y", "x"), (None, "y"), ("y", "y")], ["x", "y"])
    assert s["accuracy"] == 0.5
    # x: tp1 fn1 -> 2/3; y: tp1 fp1 fn1 -> 1/2
    assert s["macro_f1"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert rank_of_positive([0.0, -1.0, -2.0], 1) == 1
    assert rank_of_positive([-1.0, 0.0, -1.0], 1) == 3  # ties count against the positive
    assert rank_of_positive([-5.0, -1.0, -3.0, -2.0], 2) == 1


TAG_REPLIES = {
    fx.SUM: "math, dp",
    fx.MELON: "Tags: brute force",
    fx.NOTESTS: "greedy, strings and math",
}


def _tag_script(kind: str, context: str, extra: Any) -> str:
    for p in fx.PROBLEMS:
        uid = p["src_uid"]
        code = fx.SOLUTIONS.get(uid, {}).get("Python", "s = input()\nprint(s[:1])\n")
        if code in context:
            return TAG_REPLIES[uid]
    raise AssertionError("unknown program")


def test_tag_macro_f1_against_hand_computed_value() -> None:
    out = run_tasks(["xcodeeval_tag_python"], _tag_script)
    # rows: sum {implementation, math}, melon {brute force, math}, notests {dp, greedy, strings},
    # and a second copy of the sum program (src_uid unknown to the problems file) with sum's tags.
    # vocabulary = tags of problem_descriptions.jsonl; per tag (tp, fp, fn):
    # brute force (1,0,0)=1; dp (0,2,1)=0; greedy (1,0,0)=1; implementation (0,0,2)=0;
    # math (2,1,1)=2*2/(4+1+1)=2/3; strings (1,0,0)=1  -> macro = (1+0+1+0+2/3+1)/6
    res = out["results"]["xcodeeval_tag_python"]
    assert res["macro_f1,none"] == pytest.approx((1 + 0 + 1 + 0 + 2 / 3 + 1) / 6)
    assert res["exact_match,none"] == 0.0
    sample = out["samples"]["xcodeeval_tag_python"][0]
    assert sample["macro_f1"]["pred"] == ["dp", "math"]


def test_tag_with_description_reports_rows_without_a_problem() -> None:
    out = run_tasks(["xcodeeval_tag_desc_python"], _tag_script)
    res = out["results"]["xcodeeval_tag_desc_python"]
    assert {k for k in res if "," in k} == {
        "macro_f1,none", "macro_f1_stderr,none", "exact_match,none", "exact_match_stderr,none"
    }  # fmt: skip
    assert out["configs"]["xcodeeval_tag_desc_python"]["metadata"]["protocol"]["unscored_rows"] == 1
    assert out["samples"]["xcodeeval_tag_desc_python"][0]["doc"]["description"]
    assert len(out["samples"]["xcodeeval_tag_desc_python"]) == 3


def test_compile_accuracy_and_macro_f1_against_hand_computed_values() -> None:
    def always_yes(kind: str, context: str, extra: Any) -> str:
        return "YES, it compiles."

    res = run_tasks(["xcodeeval_compile"], always_yes)["results"]["xcodeeval_compile"]
    # 11 compiling + 11 broken programs; "compiles": tp 11, fp 11 -> F1 2/3; "error": F1 0
    assert res["accuracy,none"] == pytest.approx(0.5)
    assert res["macro_f1,none"] == pytest.approx((2 / 3 + 0) / 2)

    broken = set(fx.BROKEN.values())

    def mostly_right(kind: str, context: str, extra: Any) -> str:
        if "Does the following Kotlin" in context:
            return "I am not sure."  # unreadable: wrong for both classes
        return "NO" if any(b in context for b in broken) else "Yes"

    res = run_tasks(["xcodeeval_compile"], mostly_right)["results"]["xcodeeval_compile"]
    # Kotlin rows unreadable: compiles tp 10 fn 1 -> 20/21; error tp 10 fn 1 -> 20/21
    assert res["accuracy,none"] == pytest.approx(20 / 22)
    assert res["macro_f1,none"] == pytest.approx(20 / 21)


def _is_positive(context: str, continuation: str) -> bool:
    """Whether `continuation` solves the problem the retrieval query is about."""
    return continuation in fx.SOLUTIONS[problem_of(context)].values()


def test_retrieval_model_preferring_the_positive_scores_one() -> None:
    def prefers_positive(kind: str, context: str, continuation: Any) -> float:
        assert kind == "loglikelihood"
        return -1.0 if _is_positive(context, continuation) else -50.0

    out = run_tasks(
        ["xcodeeval_retrieval_nl_code", "xcodeeval_retrieval_code_code"], prefers_positive
    )
    for task in ("xcodeeval_retrieval_nl_code", "xcodeeval_retrieval_code_code"):
        assert out["results"][task]["accuracy,none"] == 1.0
        assert out["results"][task]["mrr,none"] == 1.0
        assert len(out["samples"][task]) == 22

    def prefers_negative(kind: str, context: str, continuation: Any) -> float:
        return -50.0 if _is_positive(context, continuation) else -1.0

    res = run_tasks(["xcodeeval_retrieval_nl_code"], prefers_negative)["results"][
        "xcodeeval_retrieval_nl_code"
    ]
    assert res["accuracy,none"] == 0.0
    assert res["mrr,none"] == pytest.approx(1 / 3)  # two negatives per query, ties count against


def test_rows_are_interleaved_across_languages() -> None:
    built = documents.build_dataset(
        xce_task="xcodeeval_compile", xce_kind="compile", **DEFAULT_META
    )["test"]
    assert list(built["lang_cluster"][:11]) == list(xd.CLUSTERS)
    assert json.loads(json.dumps(built[0]))["gold"] in ("compiles", "error")


def test_fixture_files_are_what_the_builder_writes(tmp_path: Path) -> None:
    fx.main(tmp_path)
    built = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(FIXTURES): p.read_bytes()
        for p in FIXTURES.rglob("*")
        if p.is_file() and p.suffix in (".jsonl", ".json")
    }
    assert built == committed
    # every task folder in the raw layout, both splits, all 11 languages
    for task in xd.CLUSTER_TASKS:
        for split in xd.SPLITS:
            for cluster in xd.CLUSTERS:
                assert Path(xd.cluster_file(task, split, cluster)) in built


def test_score_cli_names_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from lm_eval_tasks.xcodeeval import score as xcodeeval_score

    copy = tmp_path / "xce"
    copy.mkdir()
    shutil.copy(FIXTURES / "problem_descriptions.jsonl", copy)
    preds = tmp_path / "p.jsonl"
    preds.write_text(
        json.dumps({"src_uid": fx.SUM, "lang_cluster": "Go", "source_code": ""}) + "\n"
    )
    assert xcodeeval_score.main([str(preds), "--data-dir", str(copy)]) == 2
    err = capsys.readouterr().err
    assert str(copy / "unittest_db.json") in err and "xcodeeval_score" in err
    # the advice names this command's flags, not the lm-eval tasks' --metadata keys
    assert "--sample-tests" in err and "--data-dir" in err and "--metadata" not in err
    assert err.startswith("code-eval score xcodeeval: error: ") and err.count("\n") == 1
    assert xcodeeval_score.main([str(preds), "--data-dir", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "set by --data-dir or $XCODEEVAL_DATA" in err and "--metadata" not in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"src_uid": fx.SUM, "source_code": ""}) + "\n")
    assert xcodeeval_score.main([str(bad), "--data-dir", str(FIXTURES), "--sample-tests"]) == 2
    assert "bad.jsonl, row 1" in capsys.readouterr().err
