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


# model_args keys that name the model itself (the row label); every other key is a setting
NAME_KEYS = ("pretrained", "model", "path", "engine", "model_name", "base_url")


def model_args_of(raw: Any, where: Path) -> dict[str, Any]:
    """`config.model_args` as a mapping: lm-eval 0.4.13's CLI writes a dict, older versions and
    `simple_evaluate(model_args="k=v,...")` a `k=v` string."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return dict(raw)
    if isinstance(raw, str):
        return dict(kv.split("=", 1) for kv in raw.split(",") if "=" in kv)
    raise ResultsError(f"{where}: config.model_args must be a mapping or a k=v string: {raw!r}")


def _short(value: Any) -> str:
    """A local path by its last component, anything else (a Hub id, a URL) as written."""
    text = str(value)
    if text.startswith(("/", "./", "../", "~")):
        return Path(text).name or text
    return text


@dataclass
class Run:
    results_file: Path
    data: dict[str, Any]
    samples: dict[str, Path] = field(default_factory=dict)  # task -> samples file
    pair: dict[str, Any] | None = None  # the leaderboard's pair.json, if any
    label: str = ""  # the row label, set by `label_runs` (unique per distinct run settings)
    _logged: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.data.get("config") or {})

    @property
    def model_args(self) -> dict[str, Any]:
        return model_args_of(self.config.get("model_args"), self.results_file)

    @property
    def model(self) -> str:
        """The model's name: the leaderboard's, else the model type, its weights and the chat
        template (`hf:SmolLM2-135M/q4.gguf +chat`)."""
        name = self.config.get("leaderboard_model")
        if name:
            return str(name)
        args = self.model_args
        named = next((k for k in NAME_KEYS if args.get(k) not in (None, "")), None)
        if named is not None:
            label = _short(args[named])
        else:
            label = ",".join(f"{k}={v}" for k, v in sorted(args.items())) or "?"
        if args.get("gguf_file"):
            label += f"/{_short(args['gguf_file'])}"
        label = f"{self.config.get('model', '?')}:{label}"
        return label + (" +chat" if self.data.get("chat_template") else "")

    def settings(self) -> dict[str, str]:
        """What else makes this run differ from another run of the same model (shown in the row
        label when two such runs differ in it)."""
        args = self.model_args
        named = next((k for k in NAME_KEYS if args.get(k) not in (None, "")), None)
        out = {
            k: str(v)
            for k, v in sorted(args.items())
            if named is not None and k not in (named, "gguf_file")
        }
        gen = self.config.get("gen_kwargs")
        if gen:
            out["gen_kwargs"] = (
                ",".join(f"{k}={v}" for k, v in sorted(gen.items()))
                if isinstance(gen, dict)
                else str(gen)
            )
        shots = sorted({str(v) for v in (self.data.get("n-shot") or {}).values()})
        if shots:
            out["num_fewshot"] = "/".join(shots)
        if self.data.get("system_instruction"):
            out["system_instruction"] = str(self.data.get("system_instruction_sha") or "set")[:8]
        return out

    @property
    def limit(self) -> float | None:
        value = self.config.get("limit")
        return None if value is None else float(value)

    def tasks(self) -> dict[str, dict[str, Any]]:
        return dict(self.data.get("results") or {})

    def has(self, task: str, metric: str, filter_name: str) -> bool:
        """Whether the results file reports this metric at all (some counters may be absent)."""
        return f"{metric},{filter_name}" in (self.tasks().get(task) or {})

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

    def logged(self, task: str) -> list[dict[str, Any]]:
        """The logged samples of `task` (empty without `--log_samples`), read once."""
        if task not in self._logged:
            path = self.samples.get(task)
            self._logged[task] = list(samples(path)) if path is not None else []
        return self._logged[task]

    def protocol(self, task: str) -> dict[str, Any]:
        """How the task was scored, as the run recorded it (`lm_eval_tasks.protocol`); empty for
        results files written before it existed."""
        value = self.metadata(task).get("protocol")
        return dict(value) if isinstance(value, dict) else {}


def label_runs(runs: list[Run]) -> None:
    """Give every run its row label: the model's name, `(--limit N)` for a partial run, and the
    settings in which runs sharing that label differ (`[gen_kwargs=...]`), so that different runs
    of one model are never merged into one row. Runs that agree in all of these share a row.
    A leaderboard's model name is its row, whatever its task sets' settings."""
    for run in runs:
        run.label = run.model
        if run.limit is not None and not run.config.get("leaderboard_model"):
            run.label += f" (--limit {run.limit:g})"
    groups: dict[str, list[Run]] = {}
    for run in runs:
        if not run.config.get("leaderboard_model"):
            groups.setdefault(run.label, []).append(run)
    for group in groups.values():
        settings = [r.settings() for r in group]
        keys = sorted({k for s in settings for k in s})
        differ = [k for k in keys if len({s.get(k, "") for s in settings}) > 1]
        if not differ:
            continue
        for run, s in zip(group, settings, strict=True):
            run.label += " [" + ", ".join(f"{k}={s.get(k, '-')}" for k in differ) + "]"


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
    label_runs(runs)
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
