"""ClozeTest-maxmin data loading: settings, the answers join, every bad-data error, and the
default download path (served from fixture files through a fake network call)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.utils import download
from code_eval_taskpack.utils.errors import DataError
from lm_eval_tasks.clozetest_maxmin import utils as hooks
from lm_eval_tasks.clozetest_maxmin.data import answers_location
from tests.clozetest_support import FIXTURE_REMOTE, GITHUB_RAW, LANGUAGES
from tests.conftest import TASKS_DIR
from tests.lm_fakes import task_manager

FIXTURE_DATA = (
    FIXTURE_REMOTE / "microsoft/CodeXGLUE/main/Code-Code/ClozeTesting-maxmin/data/cloze-maxmin"
)


def write_inputs(root: Path, language: str, items: list[dict[str, Any]]) -> Path:
    path = root / language / "clozeTest.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(items, indent=1), encoding="utf-8")
    return path


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def item(idx: str, code: str, nl: str = "Pick one .") -> dict[str, Any]:
    return {"idx": idx, "nl_tokens": nl.split(" "), "pl_tokens": code.split(" ")}


THREE = [
    item("maxmin-1", "def a ( x ) : return <mask> ( x )"),
    item("maxmin-2", "def b ( x ) : return <mask> ( x )"),
    item("maxmin-3", "def c ( x ) : return <mask> ( x )"),
]


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A data dir with three python items and a matching answers file."""
    root = tmp_path / "data"
    write_inputs(root, "python", THREE)
    write_text(
        root / "python" / "answers.txt",
        "maxmin-1<CODESPLIT>max\nmaxmin-2<CODESPLIT>min\r\nmaxmin-3<CODESPLIT>max\n\n",
    )
    return root


def load(**settings: Any) -> list[dict[str, Any]]:
    """Through the real `custom_dataset` hook, with lm-eval-like extra kwargs."""
    out = hooks.load(
        clozetest_language=settings.pop("language", "python"),
        config_source="x.yaml",
        version=1.0,
        **settings,
    )
    return list(out["test"])


def test_join_labels_and_doc_fields(tiny: Path) -> None:
    docs = load(clozetest_data_dir=str(tiny))
    assert [(d["idx"], d["label"], d["gold"]) for d in docs] == [
        ("maxmin-1", "max", "A"),
        ("maxmin-2", "min", "B"),
        ("maxmin-3", "max", "A"),
    ]
    assert docs[0]["pl_text"] == "def a ( x ) : return <mask> ( x )"
    assert docs[0]["nl_text"] == "Pick one ."
    assert (docs[0]["code_prefix"], docs[0]["code_suffix"]) == ("def a ( x ) : return", "( x )")


def test_byte_order_marks_are_tolerated(tiny: Path) -> None:
    answers = tiny / "python" / "answers.txt"
    answers.write_text("\ufeff" + answers.read_text(), encoding="utf-8")
    assert [d["label"] for d in load(clozetest_data_dir=str(tiny))] == ["max", "min", "max"]


def test_hook_accepts_model_args_as_kwargs(tiny: Path) -> None:
    docs = load(
        clozetest_data_dir=str(tiny), pretrained="some/model", gguf_file="m.gguf", script="m:f"
    )
    assert len(docs) == 3


def test_label_balance_is_logged(tiny: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="lm_eval.tasks.clozetest_maxmin"):
        load(clozetest_data_dir=str(tiny))
    assert "share of max labels 0.667" in caplog.text


def test_environment_selects_data_dir_and_metadata_wins(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLOZETEST_MAXMIN_DATA", str(tiny))
    assert len(load()) == 3
    other = tmp_path / "other"
    write_inputs(other, "python", THREE[:1])
    write_text(other / "python" / "answers.txt", "maxmin-1<CODESPLIT>min\n")
    assert [d["label"] for d in load(clozetest_data_dir=str(other))] == ["min"]


def test_keys_are_unique_only_within_a_language(tmp_path: Path) -> None:
    root = tmp_path / "data"
    for lang, label in (("ruby", "max"), ("java", "min")):
        write_inputs(root, lang, [item("maxmin-1", "x = <mask> ( y )")])
        write_text(root / lang / "answers.txt", f"maxmin-1<CODESPLIT>{label}\n")
    assert load(language="ruby", clozetest_data_dir=str(root))[0]["label"] == "max"
    assert load(language="java", clozetest_data_dir=str(root))[0]["label"] == "min"


# ---------------------------------------------------------------------------------------------
# clozetest_answers forms


def test_answers_directory_overrides_data_dir_answers(tiny: Path, tmp_path: Path) -> None:
    answers = tmp_path / "answers"
    write_text(
        answers / "python" / "answers.txt",
        "maxmin-3<CODESPLIT>min\nmaxmin-2<CODESPLIT>min\nmaxmin-1<CODESPLIT>min\n",
    )
    docs = load(clozetest_data_dir=str(tiny), clozetest_answers=str(answers))
    assert [d["label"] for d in docs] == ["min", "min", "min"]


def test_answers_mapping_and_template(tiny: Path, tmp_path: Path) -> None:
    single = write_text(
        tmp_path / "py.txt",
        "maxmin-1<CODESPLIT>min\nmaxmin-2<CODESPLIT>max\nmaxmin-3<CODESPLIT>min\n",
    )
    by_map = load(clozetest_data_dir=str(tiny), clozetest_answers={"python": str(single)})
    assert [d["label"] for d in by_map] == ["min", "max", "min"]
    write_text(tmp_path / "t" / "python.answers", single.read_text())
    by_template = load(
        clozetest_data_dir=str(tiny), clozetest_answers=str(tmp_path / "t" / "{lang}.answers")
    )
    assert [d["label"] for d in by_template] == ["min", "max", "min"]


def test_answers_mapping_from_environment(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    single = write_text(
        tmp_path / "py.txt",
        "maxmin-1<CODESPLIT>min\nmaxmin-2<CODESPLIT>min\nmaxmin-3<CODESPLIT>min\n",
    )
    monkeypatch.setenv("CLOZETEST_MAXMIN_ANSWERS", json.dumps({"python": str(single)}))
    assert {d["label"] for d in load(clozetest_data_dir=str(tiny))} == {"min"}


def test_missing_answers_error_points_at_the_configured_place(tiny: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        load(clozetest_data_dir=str(tiny), clozetest_answers=str(tmp_path))
    assert str(err.value).startswith(f"{tmp_path / 'python' / 'answers.txt'}: no gold answers")
    with pytest.raises(DataError) as err:
        load(clozetest_data_dir=str(tiny), clozetest_answers={"java": str(tmp_path / "j.txt")})
    assert str(err.value).startswith("clozetest_answers (no entry for python): no gold answers")
    assert "(also none for: ruby, javascript, go, java, php)" in str(err.value)


def test_single_answers_file_without_a_language_folder_is_rejected(
    tiny: Path, tmp_path: Path
) -> None:
    loose = tmp_path / "answers.txt"
    loose.write_text((tiny / "python" / "answers.txt").read_text())
    with pytest.raises(DataError, match="ids repeat across languages"):
        load(clozetest_data_dir=str(tiny), clozetest_answers=str(loose))


def test_single_answers_file_in_a_language_folder_answers_that_language_only(
    tiny: Path, tmp_path: Path
) -> None:
    oc = tmp_path / "OpenCompassData-core" / "data" / "clozeTest-maxmin" / "python"
    oc.mkdir(parents=True)
    (oc / "answers.txt").write_text((tiny / "python" / "answers.txt").read_text())
    settings = {"clozetest_data_dir": str(tiny), "clozetest_answers": str(oc / "answers.txt")}
    assert answers_location("python", settings) == str(oc / "answers.txt")
    assert answers_location("java", settings) is None
    assert [d["gold"] for d in load(**settings)] == ["A", "B", "A"]


def test_configured_answers_file_that_does_not_exist(tiny: Path, tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load(clozetest_data_dir=str(tiny), clozetest_answers={"python": str(tmp_path / "nope.txt")})
    with pytest.raises(DataError, match="unknown language"):
        load(clozetest_data_dir=str(tiny), clozetest_answers={"cobol": str(tmp_path / "nope.txt")})


def test_missing_answers_error_names_languages_and_where_to_get_python(tmp_path: Path) -> None:
    root = tmp_path / "data"
    for lang in LANGUAGES:
        write_inputs(root, lang, THREE)
    write_text(
        root / "go" / "answers.txt",
        "maxmin-1<CODESPLIT>max\nmaxmin-2<CODESPLIT>max\nmaxmin-3<CODESPLIT>max\n",
    )
    with pytest.raises(DataError) as err:
        load(language="ruby", clozetest_data_dir=str(root))
    message = str(err.value)
    assert message.startswith(str(root / "ruby" / "answers.txt"))
    assert "language(s) ruby (also none for: javascript, python, java, php)" in message
    assert "OpenCompassData-core" in message
    assert "data/clozeTest-maxmin/python/answers.txt" in message
    assert "clozetest_predict_only" in message


def test_predict_only_without_answers(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tiny / "python" / "answers.txt").unlink()
    docs = load(clozetest_data_dir=str(tiny), clozetest_predict_only=True)
    assert [(d["label"], d["gold"]) for d in docs] == [("", "")] * 3
    monkeypatch.setenv("CLOZETEST_MAXMIN_PREDICT_ONLY", "1")
    assert len(load(clozetest_data_dir=str(tiny))) == 3
    with pytest.raises(ValueError, match="expected true/false"):
        load(clozetest_data_dir=str(tiny), clozetest_predict_only="maybe")


def test_predict_only_ignores_available_answers(tiny: Path) -> None:
    docs = load(clozetest_data_dir=str(tiny), clozetest_predict_only="true")
    assert {d["gold"] for d in docs} == {""}


# ---------------------------------------------------------------------------------------------
# Bad data: file, line and field in every message


def test_answer_ids_not_matching_inputs(tiny: Path) -> None:
    answers = write_text(
        tiny / "python" / "answers.txt",
        "maxmin-1<CODESPLIT>max\nmaxmin-9<CODESPLIT>min\nmaxmin-3<CODESPLIT>max\n",
    )
    with pytest.raises(DataError) as err:
        load(clozetest_data_dir=str(tiny))
    message = str(err.value)
    assert message.startswith(f"{answers}, row 2, field 'idx'")
    assert "1 input id(s) missing from the answers (maxmin-2 (line " in message
    assert "1 answer id(s) not in" in message and "maxmin-9 (line 2)" in message


def test_answers_missing_ids_only(tiny: Path) -> None:
    write_text(tiny / "python" / "answers.txt", "maxmin-1<CODESPLIT>max\n")
    with pytest.raises(DataError, match=r"2 input id\(s\) missing from the answers") as err:
        load(clozetest_data_dir=str(tiny))
    assert "not in" not in str(err.value)


@pytest.mark.parametrize(
    ("text", "line", "pattern"),
    [
        (
            "maxmin-1<CODESPLIT>max\nmaxmin-2<CODESPLIT>MAX\n",
            2,
            r"field 'label': label 'MAX' for maxmin-2 is neither max nor min",
        ),
        ("maxmin-1<CODESPLIT>max\n\nmaxmin-2<CODESPLIT>\n", 3, r"label '' for maxmin-2 is neither"),
        ("maxmin-1 max\n", 1, r"expected idx<CODESPLIT>max\|min"),
        ("maxmin-1<CODESPLIT>max<CODESPLIT>min\n", 1, r"expected idx<CODESPLIT>max\|min"),
        (
            "maxmin-1<CODESPLIT>max\nmaxmin-1<CODESPLIT>min\n",
            2,
            r"duplicate idx 'maxmin-1' \(first at line 1\)",
        ),
    ],
)
def test_bad_answer_lines(tiny: Path, text: str, line: int, pattern: str) -> None:
    answers = write_text(tiny / "python" / "answers.txt", text)
    with pytest.raises(DataError, match=pattern) as err:
        load(clozetest_data_dir=str(tiny))
    assert str(err.value).startswith(f"{answers}, row {line}")


@pytest.mark.parametrize(
    "code", ["def a ( x ) : return max ( x )", "def a ( <mask> ) : return <mask> ( x )"]
)
def test_function_without_exactly_one_mask(tmp_path: Path, code: str) -> None:
    bad = [*THREE[:1], item("maxmin-2", code), THREE[2]]
    path = write_inputs(tmp_path / "data", "python", bad)
    text = path.read_text()
    line = text[: text.index('"maxmin-2"')].count("\n") + 1
    with pytest.raises(DataError) as err:
        load(clozetest_data_dir=str(tmp_path / "data"), clozetest_predict_only=True)
    message = str(err.value)
    assert message.startswith(f"{path}, row {line}, field 'pl_tokens'")
    assert (
        f"item 2 (idx maxmin-2) has {code.count('<mask>')} <mask> tokens, expected exactly one"
        in message
    )


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ("[", r"invalid JSON"),
        ("[]", r"non-empty JSON list"),
        (
            '[{"idx": "maxmin-1", "nl_tokens": [], "pl_tokens": "<mask>"}]',
            r"field 'pl_tokens': expected a list of strings",
        ),
        ('[{"nl_tokens": [], "pl_tokens": ["<mask>"]}]', r"field 'idx'"),
        (json.dumps([THREE[0], THREE[0]]), r"duplicate idx 'maxmin-1'"),
    ],
)
def test_malformed_inputs(tmp_path: Path, content: str, pattern: str) -> None:
    path = write_text(tmp_path / "data" / "python" / "clozeTest.json", content)
    with pytest.raises(DataError, match=pattern) as err:
        load(clozetest_data_dir=str(tmp_path / "data"), clozetest_predict_only=True)
    assert str(err.value).startswith(str(path))


def test_data_dir_problems(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is not a directory"):
        load(clozetest_data_dir=str(tmp_path / "absent"), clozetest_predict_only=True)
    with pytest.raises(DataError, match="missing inputs for python"):
        load(clozetest_data_dir=str(tmp_path), clozetest_predict_only=True)


def test_bad_data_surfaces_through_lm_eval(tiny: Path) -> None:
    write_text(tiny / "python" / "answers.txt", "maxmin-1<CODESPLIT>maximum\n")
    tm = task_manager(TASKS_DIR, {"clozetest_data_dir": str(tiny)})
    with pytest.raises(DataError, match="neither max nor min"):
        tm.load(["clozetest_maxmin_python"])


# ---------------------------------------------------------------------------------------------
# Default: download from CodeXGLUE (faked), cached


class FakeGitHub:
    """Serves files from `tests/fixtures/clozetest/remote/<owner>/<repo>/<branch>/<path>`."""

    def __init__(self, extra: dict[str, bytes] | None = None) -> None:
        self.requests: list[str] = []
        self.extra = extra or {}

    def __call__(self, url: str, timeout: float = 60.0) -> io.BytesIO:
        self.requests.append(url)
        if url in self.extra:
            return io.BytesIO(self.extra[url])
        assert url.startswith(GITHUB_RAW), f"unexpected URL {url}"
        path = FIXTURE_REMOTE / url[len(GITHUB_RAW) :]
        if not path.is_file():
            raise OSError(f"HTTP Error 404: Not Found ({url})")
        return io.BytesIO(path.read_bytes())


@pytest.fixture
def fake_github(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    fake = FakeGitHub()
    monkeypatch.setenv("CODE_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CLOZETEST_MAXMIN_DATA", raising=False)
    monkeypatch.delenv("CLOZETEST_MAXMIN_ANSWERS", raising=False)
    monkeypatch.setattr(download, "_open_url", fake)
    return fake


def test_default_inputs_are_downloaded_from_codexglue_and_cached(fake_github: FakeGitHub) -> None:
    for lang in LANGUAGES:
        docs = load(language=lang, clozetest_predict_only=True)
        assert [d["idx"] for d in docs] == ["maxmin-1", "maxmin-2"]
        assert docs[0]["pl_text"].count("<mask>") == 1
    expected = [
        f"https://raw.githubusercontent.com/microsoft/CodeXGLUE/main/Code-Code/ClozeTesting-maxmin/data/cloze-maxmin/{lang}/clozeTest.json"
        for lang in LANGUAGES
    ]
    assert fake_github.requests == expected
    load(language="go", clozetest_predict_only=True)
    assert len(fake_github.requests) == len(LANGUAGES), "second load must come from the cache"


def test_downloaded_inputs_with_answers_from_url(fake_github: FakeGitHub) -> None:
    url = "https://example.org/answers/{lang}/answers.txt"
    fake_github.extra[url.replace("{lang}", "python")] = (
        b"maxmin-1<CODESPLIT>min\nmaxmin-2<CODESPLIT>max\n"
    )
    docs = load(clozetest_answers=url)
    assert [d["gold"] for d in docs] == ["B", "A"]
    assert docs[0]["nl_text"] == "Return the top value ."


def test_default_download_without_answers_fails_clearly(fake_github: FakeGitHub) -> None:
    with pytest.raises(
        DataError, match=r"clozetest_answers \(not set\): no gold answers .* python"
    ):
        load()


def test_group_loads_from_download_in_predict_only_mode(fake_github: FakeGitHub) -> None:
    tm = task_manager(TASKS_DIR, {"clozetest_predict_only": True})
    loaded = tm.load(["clozetest_maxmin"])
    assert {name: len(list(t.test_docs())) for name, t in loaded["tasks"].items()} == {
        f"clozetest_maxmin_{lang}": 2 for lang in LANGUAGES
    }


def test_fixture_layout_matches_the_real_files(shared_data: Path) -> None:
    """The fixture mirrors the real files' shape (keys, list of tokens), not their content."""
    real = json.loads(
        (shared_data / "codexglue_clozetest_maxmin" / "ruby" / "clozeTest.json").read_text()
    )
    fixture = json.loads((FIXTURE_DATA / "ruby" / "clozeTest.json").read_text())
    assert set(real[0]) == set(fixture[0]) == {"idx", "nl_tokens", "pl_tokens"}
    assert real[0]["idx"] == fixture[0]["idx"] == "maxmin-1"
