"""Loading and checking rows of the Sourcegraph multi-line infilling benchmark.

Rows come from the Hub file (`HUB_REPO`/`HUB_FILE`, split `test`, 375 rows) or from a local
parquet or JSONL file in the same schema (`SG_INFILLING_DATA` or `sg_infilling_data`). Every
row is checked up front so a bad file fails with its path, row and field instead of a
traceback in the middle of a run.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from code_eval_taskpack.utils import datafiles, download
from code_eval_taskpack.utils.errors import DataError
from lm_eval_tasks.code_infilling.settings import DATA

HUB_REPO = "sourcegraph/code-multi-line-infilling-benchmark"
HUB_FILE = "data/test-00000-of-00001.parquet"
DATA_KEY, DATA_ENV = DATA.key, DATA.env
LOCAL_COPY = f"{DATA_KEY} (--metadata) or ${DATA_ENV} (a local parquet or JSONL file)"

TEXT_FIELDS = (
    "repo",
    "instance_id",
    "base_commit",
    "file_path",
    "prefix",
    "suffix",
    "middle",
    "patch",
    "test_patch",
)
OPTIONAL_TEXT_FIELDS = (
    "version",
    "problem_statement",
    "hints_text",
    "created_at",
    "environment_setup_commit",
)
TEST_LIST_FIELDS = ("FAIL_TO_PASS", "PASS_TO_PASS")


@dataclass(frozen=True)
class Source:
    """Where rows were read from, for messages and logs."""

    path: Path
    origin: str  # "hub" or "local"


def resolve_source(
    data: str | None, hub_file: str | None = None, revision: str | None = None
) -> Source:
    """The local data file, or the Hub file downloaded (once) through `utils.download`."""
    if data:
        path = Path(data).expanduser()
        if not path.is_file():
            raise DataError(path, f"data file not found (set by {LOCAL_COPY})")
        return Source(path=path, origin="local")
    return Source(
        path=download.download_hub_file(
            HUB_REPO,
            hub_file or HUB_FILE,
            revision=revision,
            needed_by="the Sourcegraph infilling tasks (sg_infilling_*)",
            local_copy=LOCAL_COPY,
        ),
        origin="hub",
    )


def read_raw_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a parquet (`.parquet`) or JSON Lines (anything else) file, unchecked."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return list(pq.read_table(path).to_pylist())
        except Exception as exc:  # pyarrow raises several unrelated types for a bad file
            raise DataError(path, f"cannot read parquet file: {exc}") from exc
    return [row for _, row in datafiles.jsonl_rows(path)]


def parse_test_list(value: Any, path: Path, row: int, field: str) -> list[str]:
    """A FAIL_TO_PASS / PASS_TO_PASS value: a JSON string of a list of test ids (or the list)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise DataError(
                path, f"expected a JSON list of test ids: {exc}", row=row, field=field
            ) from exc
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise DataError(path, "expected a list of test id strings", row=row, field=field)
    return list(value)


def check_row(raw: Mapping[str, Any], path: Path, row: int) -> dict[str, Any]:
    """A validated, normalised copy of one row (`row` is 1-based, as shown to users)."""
    out: dict[str, Any] = {}
    for name in TEXT_FIELDS:
        value = raw.get(name)
        if not isinstance(value, str):
            raise DataError(path, "missing or not a string", row=row, field=name)
        out[name] = value
    for name in ("repo", "instance_id", "base_commit", "file_path", "patch"):
        if not out[name].strip():
            raise DataError(path, "must not be empty", row=row, field=name)
    if out["repo"].count("/") != 1:
        raise DataError(path, f"expected 'owner/name', got {out['repo']!r}", row=row, field="repo")
    for name in OPTIONAL_TEXT_FIELDS:
        value = raw.get(name)
        if isinstance(value, datetime.date):  # parquet may type `created_at` as a timestamp
            value = value.isoformat()
        # absent or null is ""; a number is an error (version 1.10 read as 1.1 would be wrong)
        out[name] = datafiles.optional_text({name: value}, name, path, row)
    for name in TEST_LIST_FIELDS:
        tests = parse_test_list(raw.get(name), path, row, name)
        out[name] = json.dumps(tests)  # kept as a JSON string, as in SWE-bench
    if not json.loads(out["FAIL_TO_PASS"]):
        raise DataError(path, "no test to resolve", row=row, field="FAIL_TO_PASS")
    context = raw.get("context")
    if context is None:
        context = []
    if isinstance(context, str):
        try:
            context = json.loads(context)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"not valid JSON: {exc}", row=row, field="context") from exc
    if not isinstance(context, list):
        raise DataError(path, "expected a list of snippets", row=row, field="context")
    snippets = []
    for i, item in enumerate(context):
        where = f"context[{i}]"
        if not isinstance(item, Mapping):
            raise DataError(path, "expected an object", row=row, field=where)
        content, file_path, rank = item.get("content"), item.get("file_path"), item.get("rank")
        if not isinstance(content, str) or not isinstance(file_path, str):
            raise DataError(path, "needs string 'content' and 'file_path'", row=row, field=where)
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise DataError(path, "needs an integer 'rank'", row=row, field=where)
        snippets.append({"content": content, "file_path": file_path, "rank": rank})
    out["context"] = snippets
    return out


def load_rows(path: Path) -> list[dict[str, Any]]:
    """All rows of `path`, checked; row ids are unique per (instance_id, row) so duplicates of an
    instance (several holes in one SWE-bench instance) stay distinct."""
    raw_rows = read_raw_rows(path)
    if not raw_rows:
        raise DataError(path, "no rows")
    rows = [check_row(raw, path, number) for number, raw in enumerate(raw_rows, start=1)]
    for number, row in enumerate(rows, start=1):
        row["row_id"] = f"{row['instance_id']}#{number}"
    return rows
