"""The shared helpers every benchmark relies on: metrics, judging, code extraction, settings,
downloads."""

from __future__ import annotations

import io
import itertools
import math
from pathlib import Path

import pytest

from code_eval_taskpack.utils import download
from code_eval_taskpack.utils.code_extraction import extract_code
from code_eval_taskpack.utils.errors import DataError
from code_eval_taskpack.utils.judging import CaseBuilder, Program
from code_eval_taskpack.utils.metrics import pass_at_k, passk_from_verdicts
from code_eval_taskpack.utils.settings import (
    Frozen,
    Setting,
    as_bool,
    lookup,
    parse_settings,
    regroup,
)


def _pass_at_k_by_enumeration(n: int, c: int, k: int) -> float:
    """Probability that a random k-subset of n samples (c correct) contains a correct one."""
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 0, 1), (5, 1, 1), (5, 2, 3), (6, 3, 2), (7, 7, 4)])
def test_pass_at_k_matches_enumeration(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(_pass_at_k_by_enumeration(n, c, k))


def test_pass_at_k_closed_form_values() -> None:
    assert pass_at_k(20, 1, 1) == pytest.approx(0.05)
    assert pass_at_k(20, 1, 5) == pytest.approx(0.25)
    assert pass_at_k(20, 2, 5) == pytest.approx(1 - math.comb(18, 5) / math.comb(20, 5))
    assert pass_at_k(20, 16, 5) == 1.0


def test_pass_at_k_rejects_k_larger_than_n() -> None:
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(3, 1, 5)
    with pytest.raises(ValueError, match="c <= n"):
        pass_at_k(3, 4, 1)


def test_passk_from_verdicts_leaves_engine_failures_out_and_gives_nan_below_k() -> None:
    verdicts = ["PASSED", "WRONG_ANSWER", "INFRA_ERROR", "TIME_LIMIT_EXCEEDED"]
    table = passk_from_verdicts(verdicts, [1, 3, 4])
    assert table["pass@1"] == pytest.approx(1 / 3)  # 3 judged samples, 1 correct
    assert table["pass@3"] == 1.0
    assert math.isnan(table["pass@4"])  # only 3 judged samples: not estimated


def test_a_program_to_judge_is_the_engines_job_and_shares_its_test_cases() -> None:
    from code_eval_taskpack.execution.types import Job

    assert Program is Job
    cases = CaseBuilder()
    tests = [{"input": "1\n", "output": ["2"]}]
    first = cases(tests)
    assert first is cases(tests)  # one problem's samples share one tuple of cases
    assert first[0].input == "1\n" and first[0].output == ("2",)
    assert cases([dict(t) for t in tests]) is not first  # another list: its own cases


def test_extract_code_prefers_block_in_wanted_language() -> None:
    reply = "Explanation:\n```text\nnot code at all, but long prose line\n```\n```python\nprint(1)\n```\n"
    assert extract_code(reply, "python") == "print(1)"
    assert extract_code(reply, "Python") == "print(1)"


def test_extract_code_takes_longest_untagged_block_and_unterminated_fence() -> None:
    assert extract_code("```\na\n```\ntext\n```\nlonger\nblock\n```") == "longer\nblock"
    assert extract_code("Sure!\n```cpp\nint main(){}\n") == "int main(){}"
    assert extract_code("~~~rust\nfn main(){}\n~~~", "Rust") == "fn main(){}"


def test_extract_code_plain_reply() -> None:
    assert extract_code("Here is the code:\nprint(2)\n") == "print(2)"
    # a colon-terminated code line is code, not a lead-in
    assert extract_code("def f():\n    return 1\n") == "def f():\n    return 1"
    assert extract_code("print(3)") == "print(3)"


def test_extract_code_keeps_unusual_line_breaks_inside_the_program() -> None:
    program = 'print("a\x0cb\u2028c")\r\nprint(2)'
    assert extract_code(program) == program
    assert extract_code("Here is the code:\n" + program) == program


def test_settings_lookup_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_DIR", "/from/env")
    assert lookup({"bench_dir": "/from/kwargs"}, "bench_dir", env="BENCH_DIR") == "/from/kwargs"
    assert lookup({"metadata": {"bench_dir": "/nested"}}, "bench_dir", env="BENCH_DIR") == "/nested"
    assert lookup({}, "bench_dir", env="BENCH_DIR") == "/from/env"
    monkeypatch.delenv("BENCH_DIR")
    assert lookup({}, "bench_dir", env="BENCH_DIR", default=3) == 3


def test_as_bool() -> None:
    assert as_bool("1", "x") is True and as_bool("false", "x") is False and as_bool(True, "x")
    with pytest.raises(ValueError, match="'x'"):
        as_bool("maybe", "x")


def test_parse_settings_reads_key_then_env_then_alias_then_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decls = (
        Setting(
            "bench_grader",
            "choice",
            "a",
            "which",
            env="BENCH_GRADER",
            aliases=("grader",),
            choices=("a", "b"),
            lowercase=True,
        ),
        Setting(
            "bench_workers",
            "int",
            lambda: 3,
            "how many",
            env="BENCH_WORKERS",
            minimum=1,
            blank_is_unset=True,
        ),
        Setting("bench_cache", "dir_or_off", "default", "where", env="BENCH_CACHE"),
        Setting("bench_split", "choice", "test", "split", choices=("validation", "test")),
    )
    monkeypatch.delenv("BENCH_GRADER", raising=False)
    assert parse_settings(decls, {}) == {
        "bench_grader": "a",
        "bench_workers": 3,
        "bench_cache": "default",
        "bench_split": "test",
    }
    assert parse_settings(decls, {}, {"bench_split": "validation"})["bench_split"] == "validation"
    got = parse_settings(decls, {"grader": "B", "bench_workers": "", "bench_cache": "none"})
    assert (got["bench_grader"], got["bench_workers"], got["bench_cache"]) == ("b", 3, None)
    monkeypatch.setenv("BENCH_GRADER", "a")
    assert parse_settings(decls, {"grader": "b"})["bench_grader"] == "a"  # env before alias
    got = parse_settings(decls, {"metadata": {"bench_grader": "b"}, "bench_workers": "2"})
    assert got["bench_grader"] == "b" and got["bench_workers"] == 2  # nested metadata, digits
    with pytest.raises(ValueError, match=r"'bench_grader \(or grader\)'.*\$BENCH_GRADER"):
        parse_settings(decls, {"bench_grader": "c"})
    with pytest.raises(ValueError, match=r"'bench_workers'.*at least 1"):
        parse_settings(decls, {"bench_workers": 0})
    with pytest.raises(ValueError, match="unknown kind"):
        Setting("bad", "number", 1, "doc")


def test_frozen_settings_travel_in_documents_and_regroup_in_order() -> None:
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Knobs(Frozen):
        workers: int = 1
        cache: str | None = None

    a, b = Knobs(1, "x"), Knobs(2)
    docs = [{"s": a.freeze()}, {"s": b.freeze()}, {"s": a.freeze()}]
    assert regroup(docs, "s", Knobs.thaw) == [(a, [0, 2]), (b, [1])]


def test_readme_settings_tables_are_rendered_from_the_declarations() -> None:
    from lm_eval_tasks import _settings_tables

    stale = [p for p, (old, new) in _settings_tables.rendered().items() if old != new]
    assert not stale, f"run python -m lm_eval_tasks._settings_tables: {stale}"
    assert _settings_tables.main(["--check"]) == 0


def test_declared_defaults_are_the_settings_classes_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A default lives in the declaration; the settings dataclasses must not say otherwise."""
    import dataclasses

    from lm_eval_tasks.code_infilling.grading import GradingSettings
    from lm_eval_tasks.code_infilling.settings import GRADING_SETTINGS
    from lm_eval_tasks.xcodeeval import settings as xs
    from lm_eval_tasks.xcodeeval.judging import ExecSettings, settings_from

    fields = {f.name: f.default for f in dataclasses.fields(GradingSettings)}
    assert set(fields) == {s.key.removeprefix("sg_infilling_") for s in GRADING_SETTINGS}
    for setting in GRADING_SETTINGS:
        if setting.env:
            monkeypatch.delenv(setting.env, raising=False)
        if not callable(setting.default):
            assert fields[setting.key.removeprefix("sg_infilling_")] == setting.default
    assert GradingSettings.from_kwargs({}).grader == "swebench"
    for setting in xs.SETTINGS:
        monkeypatch.delenv(str(setting.env), raising=False)
    assert settings_from({}) == ExecSettings()


def test_data_error_names_file_row_field() -> None:
    err = DataError("data/a.jsonl", "not a list", row=7, field="tags")
    assert str(err) == "data/a.jsonl, row 7, field 'tags': not a list"


def test_fetch_url_downloads_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODE_EVAL_CACHE", str(tmp_path))
    calls: list[str] = []

    def fake_open(url: str, timeout: float = 60.0) -> io.BytesIO:
        calls.append(url)
        return io.BytesIO(b"payload")

    monkeypatch.setattr(download, "_open_url", fake_open)
    url = "https://example.invalid/x/clozeTest.json"
    first = download.fetch_url(url)
    second = download.fetch_url(url)
    assert first == second and first.read_bytes() == b"payload" and first.name == "clozeTest.json"
    assert calls == [url]


def test_backend_options_table_feeds_the_cli_and_the_xcodeeval_settings() -> None:
    """One row of `execution.backends.options` is a CLI flag and an xCodeEval setting; the
    token file goes to remote and ray on the command line, to remote only as a setting."""
    import argparse

    from code_eval_taskpack.execution.backends import backend_names
    from code_eval_taskpack.execution.backends.options import BACKEND_OPTIONS, BackendOption
    from code_eval_taskpack.execution.cli.main import add_backend_options, backend_options
    from lm_eval_tasks.xcodeeval import settings as xs
    from lm_eval_tasks.xcodeeval.judging import ExecSettings

    parser = argparse.ArgumentParser()
    add_backend_options(parser)
    flags = {a for action in parser._actions for a in action.option_strings}
    by_setting = {
        s.key: (s, option, backends) for s, option, backends in xs.BACKEND_OPTION_SETTINGS
    }
    for opt in BACKEND_OPTIONS:
        assert opt.flag in flags
        assert set(opt.backends) <= set(backend_names()), opt.key
        setting, option, _ = by_setting[opt.setting]
        assert (setting.env, option, setting.default) == (opt.env, opt.key, None)
        assert str(setting.env).startswith("CODE_EVAL_") and setting in xs.SETTINGS
    assert len(by_setting) == len(BACKEND_OPTIONS)

    args = parser.parse_args(["--backend", "ray", "--token-file", "/t"])
    assert backend_options(args) == {"token_file": "/t"}
    with pytest.raises(ValueError, match="applies to exec_backend 'remote', not 'ray'"):
        ExecSettings(exec_backend="ray", exec_options={"exec_token_file": "/t"}).backend_options()
    with pytest.raises(ValueError, match="setting_backends outside backends"):
        BackendOption("x", "--x", "X", ("remote",), "h", "exec_x", "d", setting_backends=("ray",))
