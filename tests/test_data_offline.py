"""One error shape for failed downloads, settings that name themselves, and the data layout.

Every benchmark's failed download must say what was fetched (URL), for which task, and which
setting points at a local copy. The real urllib failure path is exercised against a closed local
port, and the Hub path with huggingface_hub forced offline; no test reaches the network.
"""

from __future__ import annotations

import json
import shutil
import socket
import urllib.error
from pathlib import Path
from typing import Any

import pytest

from code_eval_taskpack.utils import download
from code_eval_taskpack.utils.errors import DataError
from code_eval_taskpack.utils.settings import as_float, as_int, choice
from lm_eval_tasks.clozetest_maxmin import data as cloze
from lm_eval_tasks.code_infilling import data as infill
from lm_eval_tasks.code_infilling.documents import build_docs as infill_docs
from lm_eval_tasks.code_infilling.grading import GradingSettings
from lm_eval_tasks.xcodeeval import data as xd
from lm_eval_tasks.xcodeeval import documents as xdocs
from lm_eval_tasks.xcodeeval.judging import settings_from
from tests.conftest import serve_hub
from tests.xcodeeval_support import FIXTURES


def _closed_port_url(path: str) -> str:
    """An http URL on 127.0.0.1 where nothing listens: urllib fails for real, at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/{path}"


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODE_EVAL_CACHE", str(tmp_path / "cache"))
    for name in (
        "CLOZETEST_MAXMIN_DATA",
        "CLOZETEST_MAXMIN_ANSWERS",
        "XCODEEVAL_DATA",
        "XCODEEVAL_SPLIT",
        "SG_INFILLING_DATA",
    ):
        monkeypatch.delenv(name, raising=False)


def _offline_urlopen(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(url: str, timeout: float = 60.0) -> Any:
        raise urllib.error.URLError(OSError(-2, "Name or service not known"))

    monkeypatch.setattr(download, "_open_url", fail)


# --------------------------------------------------------------------------- ClozeTest


def test_cloze_offline_names_url_task_and_local_copy_settings(
    no_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _offline_urlopen(monkeypatch)
    with pytest.raises(download.DownloadError) as err:
        cloze.load_items("go", {"clozetest_predict_only": True})
    text = str(err.value)
    assert text.startswith(f"{cloze.REMOTE_BASE}/go/clozeTest.json: could not download")
    assert "clozetest_maxmin_go" in text and "URLError" in text
    assert "clozetest_data_dir" in text and "$CLOZETEST_MAXMIN_DATA" in text
    assert isinstance(err.value, DataError)


def test_cloze_real_urllib_failure_has_the_same_shape(
    no_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = _closed_port_url("cloze-maxmin")
    monkeypatch.setattr(cloze, "REMOTE_BASE", base)
    with pytest.raises(download.DownloadError) as err:
        cloze.load_items("ruby", {"clozetest_predict_only": True})
    text = str(err.value)
    assert text.startswith(f"{base}/ruby/clozeTest.json: could not download")
    assert "URLError" in text and "clozetest_maxmin_ruby" in text
    assert "clozetest_data_dir (--metadata) or $CLOZETEST_MAXMIN_DATA" in text
    assert not list((Path(download.cache_root()) / "urls").rglob("clozeTest.json"))


def test_cloze_answers_url_offline_names_the_answers_setting(
    no_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    (data / "python").mkdir(parents=True)
    (data / "python" / "clozeTest.json").write_text(json.dumps(cloze_items()), encoding="utf-8")
    url = _closed_port_url("answers/python/answers.txt")
    with pytest.raises(download.DownloadError) as err:
        cloze.load_items("python", {"clozetest_data_dir": str(data), "clozetest_answers": url})
    text = str(err.value)
    assert text.startswith(f"{url}: could not download")
    assert "clozetest_answers (--metadata) or $CLOZETEST_MAXMIN_ANSWERS" in text


def cloze_items() -> list[dict[str, Any]]:
    return [
        {"idx": "maxmin-1", "nl_tokens": ["largest"], "pl_tokens": ["return", "<mask>", "(x)"]},
        {"idx": "maxmin-2", "nl_tokens": ["smallest"], "pl_tokens": ["return", "<mask>", "(x)"]},
    ]


# --------------------------------------------------------------------------- xCodeEval / infilling


def test_xcodeeval_offline_names_hub_file_task_and_settings(no_env: None, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    serve_hub(monkeypatch, None)
    with pytest.raises(download.DownloadError) as err:
        xd.DataSource().path("apr/test/Go.jsonl", "xcodeeval_apr_go")
    text = str(err.value)
    assert text.startswith(
        "hf://datasets/NTU-NLP-sg/xCodeEval/apr/test/Go.jsonl: could not download"
    )
    assert "xcodeeval_apr_go needs it" in text
    assert "xcodeeval_data_dir (--metadata) or $XCODEEVAL_DATA" in text
    assert "xcodeeval_sample_tests" not in text  # that hint belongs to unittest_db.json only


def test_missing_unittests_point_at_sample_test_mode(
    no_env: None, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    copy = tmp_path / "xce"
    shutil.copytree(FIXTURES, copy)
    (copy / "unittest_db.json").unlink()
    with pytest.raises(DataError) as local:
        xd.load_unittests(xd.DataSource(copy), "xcodeeval_synth_go")
    assert '"xcodeeval_sample_tests": true' in str(local.value)
    assert str(copy / "unittest_db.json") in str(local.value)
    serve_hub(monkeypatch, None)
    with pytest.raises(download.DownloadError) as hub:
        xd.load_unittests(xd.DataSource(), "xcodeeval_synth_go")
    assert '"xcodeeval_sample_tests": true' in str(hub.value)
    assert "at a local copy; or run on the public sample tests" in str(hub.value)
    assert "XCODEEVAL_SAMPLE_TESTS=1" in str(hub.value)


def test_infilling_offline_names_hub_file_and_local_file_setting(no_env: None, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    serve_hub(monkeypatch, None)
    with pytest.raises(download.DownloadError) as err:
        infill_docs(sg_infilling_variant="qwen")
    text = str(err.value)
    assert text.startswith(f"hf://datasets/{infill.HUB_REPO}/{infill.HUB_FILE}: could not download")
    assert "sg_infilling" in text
    assert "sg_infilling_data (--metadata) or $SG_INFILLING_DATA" in text


def test_real_hub_failure_offline_has_the_same_shape(
    no_env: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """huggingface_hub itself, forced offline with an empty cache (no fake seam)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    with pytest.raises(download.DownloadError) as err:
        download.download_hub_file(
            "NTU-NLP-sg/xCodeEval",
            "problem_descriptions.jsonl",
            needed_by="xcodeeval_synth_c",
            local_copy="xcodeeval_data_dir",
            revision="main",
        )
    text = str(err.value)
    assert text.startswith(
        "hf://datasets/NTU-NLP-sg/xCodeEval@main/problem_descriptions.jsonl: could not download"
    )
    assert "xcodeeval_synth_c needs it" in text and "point xcodeeval_data_dir at" in text


def test_download_url_real_failure_and_success(no_env: None, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    url = _closed_port_url("f.json")
    with pytest.raises(download.DownloadError) as err:
        download.download_url(url, needed_by="task t", local_copy="key k")
    assert err.value.location == url and err.value.needed_by == "task t"
    assert isinstance(err.value.__cause__, urllib.error.URLError)


# --------------------------------------------------------------------------- settings


def test_xcodeeval_split_dev_names_the_key_and_accepted_values(no_env: None) -> None:
    with pytest.raises(ValueError) as err:
        xdocs.build_dataset(
            xce_task="xcodeeval_tag_c",
            xce_kind="tag",
            xce_cluster="C",
            xcodeeval_data_dir=str(FIXTURES),
            xcodeeval_split="dev",
        )
    text = str(err.value)
    assert "'xcodeeval_split'" in text and "$XCODEEVAL_SPLIT" in text
    assert "'validation', 'test'" in text and "'dev'" in text


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: settings_from({"xcodeeval_workers": "four"}), r"'xcodeeval_workers'.*'four'"),
        (lambda: settings_from({"xcodeeval_workers": 0}), r"'xcodeeval_workers'.*at least 1"),
        (
            lambda: GradingSettings.from_kwargs({"sg_infilling_grader": "docker"}),
            r"'sg_infilling_grader \(or grader\)'.*'swebench', 'local'.*'docker'",
        ),
        (
            lambda: GradingSettings.from_kwargs({"sg_infilling_test_cpu_s": "fast"}),
            r"'sg_infilling_test_cpu_s'.*\$SG_INFILLING_TEST_CPU_S.*'fast'",
        ),
        (
            lambda: GradingSettings.from_kwargs({"sg_infilling_workers": "2.5"}),
            r"'sg_infilling_workers'.*whole number",
        ),
    ],
)
def test_bad_setting_values_name_the_setting(call: Any, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        call()


def test_infilling_limit_must_be_a_whole_number(no_env: None) -> None:
    rows = Path(__file__).parent / "fixtures" / "infilling" / "rows.jsonl"
    with pytest.raises(ValueError, match=r"'sg_infilling_limit'.*'ten'"):
        infill_docs(
            sg_infilling_variant="qwen", sg_infilling_data=str(rows), sg_infilling_limit="ten"
        )
    assert (
        len(
            infill_docs(
                sg_infilling_variant="qwen", sg_infilling_data=str(rows), sg_infilling_limit="1"
            )
        )
        == 1
    )


def test_setting_parsers() -> None:
    assert as_int(" 3 ", "k") == 3 and as_int(4.0, "k") == 4
    for bad in (True, 2.5, "x", None, [1]):
        with pytest.raises(ValueError, match="'k'"):
            as_int(bad, "k")
    assert as_float("1.5", "t") == 1.5
    for bad in ("0", -1, "nan", "inf", True, None):
        with pytest.raises(ValueError, match="'t'"):
            as_float(bad, "t")
    assert choice("a", "c", ("a", "b")) == "a"
    for bad in ("A", 1, None):
        with pytest.raises(ValueError, match=r"'c'.*'a', 'b'"):
            choice(bad, "c", ("a", "b"))


# --------------------------------------------------------------------------- layout


def test_translation_lists_every_missing_source_language_file(tmp_path: Path) -> None:
    copy = tmp_path / "xce"
    shutil.copytree(FIXTURES, copy)
    (copy / "code_translation/validation/Go.jsonl").unlink()
    (copy / "code_translation/validation/Rust.jsonl").unlink()
    (copy / "code_translation/validation/C.jsonl").write_text("")  # empty is fine
    with pytest.raises(DataError) as err:
        xdocs.build_docs(
            "translate",
            "xcodeeval_translate_python",
            ["Python"],
            "validation",
            xd.DataSource(copy),
            {},
        )
    text = str(err.value)
    assert "xcodeeval_translate_python reads 10 files and 2 are missing" in text
    assert "code_translation/validation/Go.jsonl" in text
    assert "code_translation/validation/Rust.jsonl" in text
    assert "README" in text


def test_retrieval_lists_every_missing_cluster_file(tmp_path: Path) -> None:
    copy = tmp_path / "xce"
    shutil.copytree(FIXTURES, copy)
    for name in ("C#", "Kotlin", "PHP"):
        (copy / f"retrieval_nl_code/validation/{name}_nl_code_dev_file.jsonl").unlink()
    with pytest.raises(DataError) as err:
        xdocs.build_docs(
            "retrieval_nl_code",
            "xcodeeval_retrieval_nl_code",
            list(xd.CLUSTERS),
            "validation",
            xd.DataSource(copy),
            {},
        )
    text = str(err.value)
    assert "reads 11 files and 3 are missing" in text
    for name in ("C#", "Kotlin", "PHP"):
        assert f"retrieval_nl_code/validation/{name}_nl_code_dev_file.jsonl" in text
