"""Leaderboard runs: lm-eval for every (model, task set) pair of a YAML file, resumable.

    code-eval leaderboard run LEADERBOARD.yaml [--only MODEL ...] [--dry-run]

The YAML file:

    output: results/leaderboard          # relative paths are relative to the YAML file
    include_path: null                   # default: this pack's tasks
    imports: []                          # modules to import first (they may register lm-eval models)
    models:
      - name: smollm2-chat               # a folder name: letters, digits, . _ -
        model: hf
        model_args: pretrained=...,gguf_file=...
        apply_chat_template: true        # or a template name; default false
        batch_size: 1                    # optional
        device: cpu                      # optional; default cuda:0 if torch sees a GPU, else cpu
        gen_kwargs: max_gen_toks=256     # optional
    task_sets:
      - name: xcodeeval-sample
        tasks: [xcodeeval_synth_greedy_python]
        metadata: {xcodeeval_data_dir: ..., xcodeeval_sample_tests: true}
        limit: 2                         # optional; a --limit run is flagged in every report
        confirm_run_unsafe_code: true    # needed by tasks that run model-written programs

Every pair runs through lm-eval's Python API (`simple_evaluate`, metadata given to the
`TaskManager`, which is where lm-eval reads it when a task manager is passed) and writes, like
`lm_eval --output_path --log_samples`, `results_<date>.json` and `samples_<task>_<date>.jsonl` into
`OUTPUT/<model>/<task set>/`, with `pair.json` (versions of lm-eval, this pack and every
toolchain; the model and task set as run). A pair is written to a temporary folder and renamed
when complete, so a killed run leaves no half pair behind: rerunning the same command skips the
pairs already done. A failing pair is logged and the run goes on; the failures are listed at the
end and the exit code is 1.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import re
import shutil
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

log = logging.getLogger("leaderboard")

PAIR_FILE = "pair.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class LeaderboardError(ValueError):
    """A bad leaderboard file: the message names the file and the field."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    model: str
    model_args: str = ""
    apply_chat_template: bool | str = False
    batch_size: int | str | None = None
    gen_kwargs: str | None = None
    device: str | None = None  # default: cuda:0 when torch sees a GPU, else cpu


@dataclass(frozen=True)
class TaskSet:
    name: str
    tasks: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    limit: float | None = None
    confirm_run_unsafe_code: bool = False


@dataclass(frozen=True)
class Leaderboard:
    path: Path
    output: Path
    models: tuple[ModelSpec, ...]
    task_sets: tuple[TaskSet, ...]
    include_path: Path
    imports: tuple[str, ...] = ()


def _need(raw: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in raw:
        raise LeaderboardError(f"{where}: missing field {key!r}")
    value = raw[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise LeaderboardError(
            f"{where}: field {key!r} has the wrong type ({type(value).__name__})"
        )
    return value


def _opt(raw: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    return _need(raw, key, kind, where) if raw.get(key) is not None else None


def _name(raw: Mapping[str, Any], where: str, seen: set[str]) -> str:
    name = _need(raw, "name", str, where)
    if not _NAME.match(name):
        raise LeaderboardError(f"{where}: name {name!r} must be letters, digits, '.', '_' or '-'")
    if name in seen:
        raise LeaderboardError(f"{where}: duplicate name {name!r}")
    seen.add(name)
    return str(name)


def load(path: Path) -> Leaderboard:
    """Parse and check a leaderboard file; every error names the file and the field."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LeaderboardError(f"{path}: cannot read: {exc}") from exc
    if not isinstance(raw, dict):
        raise LeaderboardError(f"{path}: must be a mapping with output, models and task_sets")
    unknown = set(raw) - {"output", "include_path", "imports", "models", "task_sets"}
    if unknown:
        raise LeaderboardError(f"{path}: unknown fields {sorted(unknown)}")
    base = path.resolve().parent
    output = base / _need(raw, "output", str, str(path))
    include = raw.get("include_path")
    if include is None:
        from lm_eval_tasks import PATH as include_path
    else:
        include_path = base / _need(raw, "include_path", str, str(path))
    imports = tuple(str(m) for m in (_opt(raw, "imports", list, str(path)) or []))
    models: list[ModelSpec] = []
    seen: set[str] = set()
    for i, m in enumerate(_need(raw, "models", list, str(path))):
        where = f"{path}: models[{i}]"
        if not isinstance(m, dict):
            raise LeaderboardError(f"{where}: must be a mapping")
        extra = set(m) - {f.name for f in ModelSpec.__dataclass_fields__.values()}
        if extra:
            raise LeaderboardError(f"{where}: unknown fields {sorted(extra)}")
        models.append(
            ModelSpec(
                name=_name(m, where, seen),
                model=_need(m, "model", str, where),
                model_args=_opt(m, "model_args", str, where) or "",
                apply_chat_template=_opt(m, "apply_chat_template", (bool, str), where) or False,
                batch_size=_opt(m, "batch_size", (int, str), where),
                gen_kwargs=_opt(m, "gen_kwargs", str, where),
                device=_opt(m, "device", str, where),
            )
        )
    sets: list[TaskSet] = []
    seen = set()
    for i, t in enumerate(_need(raw, "task_sets", list, str(path))):
        where = f"{path}: task_sets[{i}]"
        if not isinstance(t, dict):
            raise LeaderboardError(f"{where}: must be a mapping")
        extra = set(t) - {f.name for f in TaskSet.__dataclass_fields__.values()}
        if extra:
            raise LeaderboardError(f"{where}: unknown fields {sorted(extra)}")
        tasks = _need(t, "tasks", list, where)
        if not tasks or not all(isinstance(x, str) and x for x in tasks):
            raise LeaderboardError(f"{where}: field 'tasks' must be a non-empty list of names")
        limit = _opt(t, "limit", (int, float), where)
        if limit is not None and limit <= 0:
            raise LeaderboardError(f"{where}: field 'limit' must be positive")
        sets.append(
            TaskSet(
                name=_name(t, where, seen),
                tasks=tuple(tasks),
                metadata=dict(_opt(t, "metadata", dict, where) or {}),
                limit=limit,
                confirm_run_unsafe_code=bool(
                    _opt(t, "confirm_run_unsafe_code", bool, where) or False
                ),
            )
        )
    if not models or not sets:
        raise LeaderboardError(f"{path}: needs at least one model and one task set")
    return Leaderboard(path, output, tuple(models), tuple(sets), Path(include_path), imports)


# --------------------------------------------------------------------------- versions


def versions() -> dict[str, Any]:
    """Exact versions a result depends on: lm-eval, this pack, the engine and each toolchain."""
    from importlib import metadata

    from code_eval_taskpack.execution.languages.registry import runtimes
    from code_eval_taskpack.execution.version import ENGINE_VERSION

    def dist(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    toolchains = {
        rt.name: (rt.version if rt.available else f"unavailable: {rt.reason}") for rt in runtimes()
    }
    return {
        "lm_eval": dist("lm-eval") or dist("lm_eval"),
        "code_eval_taskpack": dist("code-eval-taskpack"),
        "engine": ENGINE_VERSION,
        "python": sys.version.split()[0],
        "transformers": dist("transformers"),
        "torch": dist("torch"),
        "toolchains": toolchains,
    }


# --------------------------------------------------------------------------- one pair


def default_device() -> str | None:
    """What lm-eval's CLI would pick: its `cuda:0` default falls back to the CPU without a GPU
    (the Python API's own default, "cuda", does not)."""
    try:
        import torch
    except ImportError:
        return None
    return "cuda:0" if torch.cuda.is_available() else "cpu"


def pair_dir(board: Leaderboard, model: ModelSpec, tasks: TaskSet) -> Path:
    return board.output / model.name / tasks.name


def is_done(folder: Path) -> bool:
    """A pair is done when its folder holds a readable pair.json saying so."""
    try:
        info = json.loads((folder / PAIR_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(info, dict) and info.get("status") == "done"


def _json_default(o: Any) -> Any:
    if isinstance(o, set):
        return sorted(o, key=str)
    for cast in (int, float):  # numpy scalars
        if type(o).__module__ == "numpy":
            try:
                return cast(o) if cast is float or float(o).is_integer() else float(o)
            except (TypeError, ValueError):
                break
    return str(o)


def _stringify(x: Any) -> Any:
    """lm-eval's sample logger writes responses as (nested) lists of strings; do the same."""
    if isinstance(x, (list, tuple)):
        return [_stringify(i) for i in x]
    return str(x)


def run_pair(board: Leaderboard, model: ModelSpec, tasks: TaskSet) -> Path:
    """Evaluate one pair into a temporary folder and rename it into place when complete."""
    final = pair_dir(board, model, tasks)
    work = final.with_name(f".{final.name}.partial-{os.getpid()}")
    try:
        return _run_pair(board, model, tasks, final, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # gone after success (renamed) or failure


def _run_pair(
    board: Leaderboard, model: ModelSpec, tasks: TaskSet, final: Path, work: Path
) -> Path:
    import lm_eval
    from lm_eval.tasks import TaskManager
    from lm_eval.utils import simple_parse_args_string

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = datetime.now(timezone.utc).isoformat()
    # As lm-eval's CLI does: the model's arguments reach the tasks too (some read `pretrained`).
    metadata = {**simple_parse_args_string(model.model_args), **dict(tasks.metadata)}
    manager = TaskManager(
        include_path=str(board.include_path), include_defaults=False, metadata=metadata
    )
    out = lm_eval.simple_evaluate(
        model=model.model,
        model_args=model.model_args,
        tasks=list(tasks.tasks),
        batch_size=model.batch_size,
        device=model.device or default_device(),
        limit=tasks.limit,
        log_samples=True,
        apply_chat_template=model.apply_chat_template,
        gen_kwargs=model.gen_kwargs,
        task_manager=manager,
        confirm_run_unsafe_code=tasks.confirm_run_unsafe_code,
    )
    if out is None:
        raise RuntimeError("lm-eval returned no results (not rank 0?)")
    samples = out.pop("samples", {})
    stamp = datetime.now().isoformat().replace(":", "-")
    out["config"] = {**out.get("config", {}), "leaderboard_model": model.name}
    out["leaderboard"] = {"model": asdict(model), "task_set": {**asdict(tasks)}}
    (work / f"results_{stamp}.json").write_text(
        json.dumps(out, indent=2, default=_json_default, ensure_ascii=False), encoding="utf-8"
    )
    for task_name in out.get("configs", {}):
        with open(work / f"samples_{task_name}_{stamp}.jsonl", "w", encoding="utf-8") as f:
            for s in samples.get(task_name, []):
                s = dict(s)
                s["resps"] = _stringify(s.get("resps", []))
                s["filtered_resps"] = _stringify(s.get("filtered_resps", []))
                s["target"] = str(s.get("target"))
                f.write(json.dumps(s, default=_json_default, ensure_ascii=False) + "\n")
    info = {
        "status": "done",
        "model": asdict(model),
        "task_set": asdict(tasks),
        "started": started,
        "finished": datetime.now(timezone.utc).isoformat(),
        "versions": versions(),
    }
    (work / PAIR_FILE).write_text(
        json.dumps(info, indent=2, default=_json_default), encoding="utf-8"
    )
    shutil.rmtree(final, ignore_errors=True)  # an incomplete folder from an older layout
    os.replace(work, final)
    return final


# --------------------------------------------------------------------------- the run


@dataclass
class RunSummary:
    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def check_task_names(board: Leaderboard) -> None:
    """Every task set names tasks, groups or tags that exist under the board's include path
    (as the runs load them): a typo is an error naming the nearest name, before any run."""
    import difflib

    from lm_eval.tasks import TaskManager

    known = sorted(
        TaskManager(include_path=str(board.include_path), include_defaults=False).all_tasks
    )
    problems = []
    for task_set in board.task_sets:
        for name in task_set.tasks:
            if name in known:
                continue
            near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            problems.append(f"task set {task_set.name!r}: unknown task {name!r}{hint}")
    if problems:
        raise LeaderboardError(
            f"{board.path}: {'; '.join(problems)}; `lm-eval ls tasks --include_path "
            f"{board.include_path}` lists the tasks"
        )


def run(
    board: Leaderboard, only: Sequence[str] = (), dry_run: bool = False, out: Any = None
) -> RunSummary:
    out = out or sys.stdout
    for module in board.imports:
        importlib.import_module(module)
    check_task_names(board)
    models = [m for m in board.models if not only or m.name in only]
    unknown = set(only) - {m.name for m in board.models}
    if unknown:
        raise LeaderboardError(f"{board.path}: no model named {sorted(unknown)}")
    for stale in board.output.glob("*/.*.partial-*"):  # left by a killed run
        shutil.rmtree(stale, ignore_errors=True)
    summary = RunSummary()
    pairs = [(m, t) for m in models for t in board.task_sets]
    for i, (model, tasks) in enumerate(pairs, 1):
        label = f"{model.name} x {tasks.name}"
        head = f"[{i}/{len(pairs)}] {label}"
        if is_done(pair_dir(board, model, tasks)):
            summary.skipped.append(label)
            print(f"{head}: already done, skipped", file=out, flush=True)
            continue
        if dry_run:
            print(f"{head}: would run {', '.join(tasks.tasks)}", file=out, flush=True)
            continue
        print(f"{head}: running {', '.join(tasks.tasks)}", file=out, flush=True)
        start = time.monotonic()
        try:
            folder = run_pair(board, model, tasks)
        except Exception as exc:  # one failing model must not stop the others
            summary.failed[label] = f"{type(exc).__name__}: {exc}"
            log.error("%s failed:\n%s", label, traceback.format_exc())
            print(f"{head}: FAILED ({type(exc).__name__}: {exc})", file=out, flush=True)
            continue
        summary.done.append(label)
        print(f"{head}: done in {time.monotonic() - start:.0f} s -> {folder}", file=out, flush=True)
    print(
        f"leaderboard {board.output}: {len(summary.done)} run, {len(summary.skipped)} already "
        f"done, {len(summary.failed)} failed",
        file=out,
        flush=True,
    )
    for label, why in summary.failed.items():
        print(f"FAILED {label}: {why}", file=out, flush=True)
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    """Subcommand `code-eval leaderboard run`."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    p = argparse.ArgumentParser(
        prog="code-eval leaderboard run",
        description="Run lm-eval for every (model, task set) pair of a leaderboard file; "
        "pairs already done are skipped, so a killed run resumes where it stopped.",
    )
    p.add_argument("leaderboard", type=Path, help="the leaderboard YAML file")
    p.add_argument("--only", nargs="+", default=[], metavar="MODEL", help="run these models only")
    p.add_argument(
        "--dry-run", action="store_true", help="check the task names and list what would run"
    )
    args = p.parse_args(argv)
    try:
        board = load(args.leaderboard)
        summary = run(board, args.only, args.dry_run)
    except LeaderboardError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 1 if summary.failed else 0


if __name__ == "__main__":
    sys.exit(main())
