"""Reading lm-eval output folders (CLI `--output_path` or leaderboard pairs) and logged samples.

A "run" is one `results_<date>.json` file with the `samples_<task>_<date>.jsonl` files written
beside it by the same run. A bad file is an error naming it, never a silently smaller table.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_RESULTS = re.compile(r"^results_(?P<stamp>.+)\.json$")


class ResultsError(ValueError):
    """An unreadable or malformed results file; the message names it."""


@dataclass
class Run:
    results_file: Path
    data: dict[str, Any]
    samples: dict[str, Path] = field(default_factory=dict)  # task -> samples file
    pair: dict[str, Any] | None = None  # the leaderboard's pair.json, if any

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.data.get("config") or {})

    @property
    def model(self) -> str:
        """The row label: the leaderboard's model name, else the model and its settings."""
        name = self.config.get("leaderboard_model")
        if name:
            return str(name)
        args = str(self.config.get("model_args") or "")
        parts = dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
        label = Path(parts.get("pretrained", args or "?")).name
        if parts.get("gguf_file"):
            label += f"/{parts['gguf_file']}"
        label = f"{self.config.get('model', '?')}:{label}"
        return label + (" +chat" if self.data.get("chat_template") else "")

    @property
    def limit(self) -> float | None:
        value = self.config.get("limit")
        return None if value is None else float(value)

    def tasks(self) -> dict[str, dict[str, Any]]:
        return dict(self.data.get("results") or {})

    def value(self, task: str, metric: str, filter_name: str) -> float | None:
        """A metric of a task or group; None when absent, NaN when the run reported NaN."""
        row = self.tasks().get(task)
        if row is None:
            return None
        raw = row.get(f"{metric},{filter_name}")
        if raw is None or raw == "N/A":
            return None
        try:
            return float(raw)
        except (TypeError, ValueError) as exc:
            raise ResultsError(
                f"{self.results_file}: {task}: {metric},{filter_name} = {raw!r}"
            ) from exc

    def size(self, task: str) -> int:
        n = (self.data.get("n-samples") or {}).get(task) or {}
        return int(n.get("effective") or n.get("original") or 0)

    def metadata(self, task: str) -> dict[str, Any]:
        return dict(((self.data.get("configs") or {}).get(task) or {}).get("metadata") or {})

    def protocol(self, task: str) -> dict[str, Any]:
        """How the task was scored, as the run recorded it (`lm_eval_tasks.protocol`); empty for
        results files written before it existed."""
        value = self.metadata(task).get("protocol")
        return dict(value) if isinstance(value, dict) else {}


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: not a readable JSON file: {exc}") from exc


def read_run(results_file: Path) -> Run:
    data = _load_json(results_file)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise ResultsError(f"{results_file}: no 'results' mapping: not an lm-eval results file")
    match = _RESULTS.match(results_file.name)
    stamp = match.group("stamp") if match else ""
    samples: dict[str, Path] = {}
    for task in data.get("configs") or {}:
        path = results_file.parent / f"samples_{task}_{stamp}.jsonl"
        if path.is_file():
            samples[task] = path
    pair_file = results_file.parent / "pair.json"
    pair = _load_json(pair_file) if pair_file.is_file() else None
    return Run(results_file, data, samples, pair)


def find_runs(paths: Iterable[Path]) -> list[Run]:
    """Every results file under `paths` (files or folders, searched recursively), oldest first.
    Folders of a leaderboard pair being written (`.<name>.partial-<pid>`) are ignored."""
    files: list[Path] = []
    for p in paths:
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            files.extend(
                f for f in p.rglob("results_*.json") if not any(".partial-" in x for x in f.parts)
            )
        else:
            raise ResultsError(f"{p}: no such file or folder")
    if not files:
        raise ResultsError(f"no results_*.json under {', '.join(map(str, paths))}")
    runs = [read_run(f) for f in sorted(set(files))]
    runs.sort(key=lambda r: (str(r.data.get("date", "")), str(r.results_file)))
    return runs


def samples(path: Path) -> Iterator[dict[str, Any]]:
    """Logged samples of one task, one dict per document."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ResultsError(f"{path}:{lineno}: not JSON: {exc}") from exc
            if not isinstance(row, dict):
                raise ResultsError(f"{path}:{lineno}: a sample must be a JSON object")
            yield row


def verdict_records(sample: dict[str, Any]) -> list[dict[str, Any]]:
    """The engine's verdict records of an execution task's sample (its judged filter output)."""
    out: list[dict[str, Any]] = []

    def walk(x: Any) -> None:
        if isinstance(x, list):
            for i in x:
                walk(i)
        elif isinstance(x, str) and x.startswith("{"):
            try:
                rec = json.loads(x)
            except ValueError:
                return
            if isinstance(rec, dict) and "verdict" in rec:
                out.append(rec)
        elif isinstance(x, dict) and "verdict" in x:
            out.append(x)

    walk(sample.get("filtered_resps"))
    return out


def is_nan(x: float | None) -> bool:
    return x is not None and math.isnan(x)
