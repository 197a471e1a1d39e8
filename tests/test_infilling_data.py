"""Loading rows: Hub download (faked, real layout), local parquet/JSONL, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from code_eval_taskpack.utils.errors import DataError
from lm_eval_tasks.code_infilling import data
from lm_eval_tasks.code_infilling.documents import build_docs
from tests.conftest import serve_hub, write_jsonl
from tests.infilling_support import ROWS_FILE, load_rows


def _parquet(rows: list[dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def test_hub_download_is_the_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    served = _parquet(load_rows(), tmp_path / "hub" / data.HUB_FILE)
    calls = serve_hub(monkeypatch, tmp_path / "hub")
    monkeypatch.delenv("SG_INFILLING_DATA", raising=False)
    docs = build_docs(sg_infilling_variant="starcoder")
    assert calls == [
        (
            "sourcegraph/code-multi-line-infilling-benchmark",
            "data/test-00000-of-00001.parquet",
            None,
        )
    ]
    assert len(docs) == 2 and docs[0]["data_source"] == f"hub:{served}"
    assert json.loads(docs[0]["FAIL_TO_PASS"])[0] == "tests/test_stats.py::test_median_odd"
    assert docs[0]["context"][0]["rank"] == 2
    assert docs[0]["prompt"].endswith("<fim_middle>")


def test_local_jsonl_and_parquet_by_env_and_metadata(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    hub_calls = serve_hub(monkeypatch, None)
    monkeypatch.setenv("SG_INFILLING_DATA", str(ROWS_FILE))
    from_env = build_docs(sg_infilling_variant="qwen")
    parquet = _parquet(load_rows(), tmp_path / "rows.parquet")
    from_meta = build_docs(
        sg_infilling_variant="qwen", metadata={"sg_infilling_data": str(parquet)}
    )
    assert [d["prompt"] for d in from_env] == [d["prompt"] for d in from_meta]
    assert from_meta[1]["row_id"] == "acme__mathlib-1#2"
    assert hub_calls == [], "the Hub must not be contacted when a local file is given"


def test_test_lists_may_be_lists_and_are_stored_as_json(tmp_path: Path) -> None:
    rows = load_rows()
    rows[0]["FAIL_TO_PASS"] = json.loads(rows[0]["FAIL_TO_PASS"])
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, rows)
    loaded = data.load_rows(path)
    assert isinstance(loaded[0]["FAIL_TO_PASS"], str)
    assert json.loads(loaded[0]["FAIL_TO_PASS"]) == rows[0]["FAIL_TO_PASS"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("FAIL_TO_PASS", "[not json", "expected a JSON list"),
        ("FAIL_TO_PASS", "[]", "no test to resolve"),
        ("PASS_TO_PASS", '{"a": 1}', "list of test id strings"),
        ("middle", None, "missing or not a string"),
        ("repo", "mathlib", "owner/name"),
        ("context", [{"content": "x", "file_path": "a.py"}], "integer 'rank'"),
    ],
)
def test_bad_rows_name_file_row_and_field(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    rows = load_rows()
    rows[1][field] = value
    path = tmp_path / "bad.jsonl"
    write_jsonl(path, rows)
    with pytest.raises(DataError, match=message) as info:
        data.load_rows(path)
    assert info.value.row == 2 and str(path) in str(info.value)
    assert info.value.field is not None and info.value.field.startswith(field)


def test_missing_local_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="data file not found"):
        build_docs(sg_infilling_variant="qwen", sg_infilling_data=str(tmp_path / "nope.parquet"))


def test_custom_variant_needs_a_format_and_uses_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sg_infilling_format"):
        build_docs(sg_infilling_variant="custom", sg_infilling_data=str(ROWS_FILE))
    spec = {
        "template": "<P>{prefix}<S>{suffix}<M>",
        "sentinels": ["<P>", "<S>", "<M>"],
        "stop": ["<END>"],
    }
    docs = build_docs(
        sg_infilling_variant="custom",
        sg_infilling_data=str(ROWS_FILE),
        sg_infilling_format=json.dumps(spec),
    )
    assert docs[0]["prompt"] == f"<P>{docs[0]['prefix']}<S>{docs[0]['suffix']}<M>"
    assert json.loads(docs[0]["fim_format"])["stop"] == ["<END>"]
