"""`code-eval judge OUT`: judge the execution-scored tasks of an `lm_eval --predict_only` run.

    lm_eval ... --tasks T --predict_only --log_samples --confirm_run_unsafe_code --output_path OUT
    code-eval judge OUT [--tasks T1,T2] [--output-path DIR] [--include-path DIR]
        [--metadata JSON] [--backend NAME ...]

On the generating machine the pack's judging filters run nothing (`lm_eval_tasks.predict_only`);
the logged samples keep every raw response. Here the very tasks are evaluated again by lm-eval
itself, with a model that answers each request with its logged responses: lm-eval rebuilds the
documents from the task config it wrote (its protocol settings, limit, seeds, gen_kwargs), runs
the tasks' own filters (the engine batch), `process_results`, aggregations, groups and stderr, so
the files are those an in-harness run writes. The rebuilt documents must be the logged ones (all
fields but the per-process judging keys `_exec` and `grading`, and the `_protocol` of earlier
versions), and so must the targets, the prompts and the responses.

Every logged row is judged (`predict_only.judging_logged`): a row this machine cannot judge (its
runtime is missing, a grader's infrastructure fails) is written with INFRA_ERROR verdicts (an
infilling outcome with its `error`), counted in a warning naming the task, never left out.

Output: `DIR/<stamp of the generation run>/<model>/results_*.json` and `samples_*.jsonl`
(default DIR: `OUT/judged`), published whole (written beside as `.partial-`, then renamed over a
previous judgment of the same run). Verdicts are cached by the engine as they arrive, so a
second judge of OUT (or one after an interruption) runs only what is not cached yet.

OUT comes from another machine and is trusted for nothing on this one. Only the command line
and this machine's own configuration (its environment, `--metadata`, `--backend`) choose what is
read, written, trusted or sent here: the data folders, the verdict and outcome caches, the
backend, its URLs, token files and images, the grader, its checkouts and test command, the
tokenizer. OUT's recorded values of those settings are compared with this machine's and
reported, never used; from OUT only `PROTOCOL_KEYS` (the split, the comparison mode, limits and
prompt budgets: they shape the documents, which are compared with the logged ones anyway) are
taken. Every file read from OUT is a regular file inside it; every name from OUT that becomes a
path here (the run's stamp, task and model names) is one plain name; the output folder and the
run's folder in it are real folders, never links, so nothing outside the output folder changes.

Exit codes: 0 judged; 2 bad usage or input (a missing file, a task that is not
execution-scored, a sample row missing a field, a second row of a document, a name that is not
a plain file name, a link, a cycle of groups, a task this pack does not know), reported on one
line naming file, row, field.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.cli.main import add_backend_options, backend_options
from code_eval_taskpack.utils import datafiles
from code_eval_taskpack.utils.errors import DataError
from code_eval_taskpack.utils.metrics import INFRA_ERROR
from lm_eval_tasks import PATH as TASKS_PATH
from lm_eval_tasks import protocol
from lm_eval_tasks.predict_only import BYPASS, judging_logged
from lm_eval_tasks.xcodeeval import settings as xs

PROG = "code-eval judge"
EXIT_OK, EXIT_USAGE = 0, 2
DEFAULT_OUTPUT = "judged"

#: parts of a results file lm-eval computes from the evaluation (taken from the judged run)
EVALUATED = (
    "results",
    "groups",
    "group_subtasks",
    "configs",
    "versions",
    "n-shot",
    "higher_is_better",
    "n-samples",
)
#: when the judgment ran (the EvaluationTracker times it; `date` is the evaluation's start)
TIMING = ("date", "start_time", "end_time", "total_evaluation_time_seconds", "task_hashes")
#: metadata keys the task YAML files own (the rest came from --metadata and model_args)
YAML_METADATA = ("version", protocol.PROTOCOL_KEY, "config_source", *protocol.INTERNAL)
#: document fields that differ between processes by design: the judging settings (xCodeEval's
#: backend and cache, the infilling grader's: chosen where it judges) and the key of the protocol
#: record (a fresh uuid per process) that xCodeEval's documents carried before the protocol was
#: found through the task itself
PER_PROCESS_DOC_FIELDS = ("_protocol", "_exec", "grading")
#: fields every logged sample must carry for judging
SAMPLE_FIELDS = ("doc_id", "doc", "target", "arguments", "resps")
#: the infilling graders' outcome cache setting (off in-harness unless set; on here)
INFILLING_CACHE = "sg_infilling_cache"
_STAMPED = re.compile(r"^results_(?P<stamp>.+)\.json$")
#: a name from OUT that becomes part of a path here: one plain file name, no folder, no `..`
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.,+=@-]{0,199}$")
#: the only settings of the generation run used here: they shape documents and scoring (and
#: the rebuilt documents are compared with the logged ones); none names a path, URL or secret
PROTOCOL_KEYS = frozenset(
    {
        xs.SPLIT.key,
        xs.SAMPLE_TESTS.key,
        xs.EXECEVAL_COMPAT.key,
        "sg_infilling_limit",
        "sg_infilling_max_prompt_tokens",
        "sg_infilling_max_prompt_chars",
        "clozetest_predict_only",
    }
)
#: the run's `config` entries replayed, and the types each may have
CONFIG_TYPES: dict[str, tuple[type, ...]] = {
    "limit": (int, float),
    "bootstrap_iters": (int,),
    "gen_kwargs": (dict, str),
    "random_seed": (int,),
    "numpy_seed": (int,),
    "torch_seed": (int,),
    "fewshot_seed": (int,),
}

log = logging.getLogger("code_eval.judge")


@dataclass
class PredictOnlyRun:
    """One `--predict_only` results file and its logged samples, checked before judging."""

    results_file: Path
    data: dict[str, Any]
    stamp: str
    tasks: list[str]  # the execution-scored tasks to judge
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    sample_files: dict[str, Path] = field(default_factory=dict)


# --------------------------------------------------------------------------- reading OUT


def _is_predict_only(data: Mapping[str, Any]) -> bool:
    results = data.get("results")
    return isinstance(results, dict) and any(
        isinstance(r, dict) and any(k.split(",")[0] == BYPASS for k in r) for r in results.values()
    )


def execution_scored(config: Mapping[str, Any]) -> bool:
    """A task scored by running programs: lm-eval's `unsafe_code` flag, which exactly the
    pack's execution tasks set (xCodeEval synthesis, translation, repair; sg_infilling_*_exec)."""
    return config.get("unsafe_code") is True


def plain_name(name: object, path: Path, what: str, field: str | None = None) -> str:
    """`name` when it is one plain file name (DataError otherwise): it becomes part of a path."""
    if not isinstance(name, str) or not _PLAIN_NAME.match(name) or ".." in name:
        raise DataError(path, f"{what} {name!r} is not a plain file name", field=field)
    return name


def inside(path: Path, root: Path) -> Path:
    """`path`, a regular file of OUT's (not a link, not reached through one); DataError else."""
    if path.is_symlink():
        raise DataError(path, "a symbolic link: only regular files inside OUT are read")
    real = path.resolve()
    if not (real == root or root in real.parents) or not real.is_file():
        raise DataError(path, "not a regular file inside OUT: only those are read")
    return path


def find_runs(out: Path, skip: Path) -> list[Path]:
    """The predict-only results files under `out` (not under the judged output `skip`)."""
    if not out.exists():
        raise DataError(out, "no such file or folder")
    root = out.resolve()
    files = [out] if out.is_file() else sorted(out.rglob("results_*.json"))
    skip = skip.resolve()
    found = []
    for f in files:
        if skip == f.resolve() or skip in f.resolve().parents:
            continue
        inside(f, root)
        data, _ = datafiles.read_json(f)
        if isinstance(data, dict) and _is_predict_only(data):
            found.append(f)
    if not found:
        raise DataError(out, "no results_*.json of an lm_eval --predict_only run here")
    return found


def read_run(path: Path, wanted: Sequence[str] | None) -> PredictOnlyRun:
    """The run in `path` with every sample of its execution-scored tasks read and checked."""
    data, _ = datafiles.read_json(path)
    configs = data.get("configs")
    if not isinstance(configs, dict) or not configs:
        raise DataError(path, "no 'configs' mapping: not an lm-eval results file", field="configs")
    match = _STAMPED.match(path.name)
    if not match:
        raise DataError(path, "not named results_<date>.json as lm-eval names its files")
    plain_name(match["stamp"], path, "the run's stamp")
    config = data.get("config")
    if config is not None and not isinstance(config, dict):
        raise DataError(path, "expected a mapping", field="config")
    for key, types in CONFIG_TYPES.items():
        value = (config or {}).get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, types)):
            raise DataError(path, f"unexpected {type(value).__name__}", field=f"config.{key}")
    subtasks = data.get("group_subtasks")
    if subtasks is not None and not (
        isinstance(subtasks, dict)
        and all(
            isinstance(v, list) and all(isinstance(c, str) for c in v) for v in subtasks.values()
        )
    ):
        raise DataError(path, "expected group -> list of task names", field="group_subtasks")
    _no_cycle(path, subtasks or {})
    for name in ("model_name_sanitized",):
        if data.get(name) is not None:
            plain_name(data[name], path, "the model's folder name", field=name)
    scored = [t for t, c in configs.items() if isinstance(c, dict) and execution_scored(c)]
    for task in scored:
        plain_name(task, path, "task name", field="configs")
    if wanted:
        for task in wanted:
            if task not in configs:
                raise DataError(path, f"task {task!r} is not in this run", field="configs")
            if task not in scored:
                raise DataError(
                    path,
                    f"task {task!r} is not execution-scored (nothing to judge)",
                    field=f"configs.{task}",
                )
        scored = [t for t in scored if t in wanted]
    if not scored:
        raise DataError(path, "no execution-scored task in this run", field="configs")
    skipped = sorted(set(configs) - set(scored))
    if skipped:
        log.info("%s: not judged (not execution-scored or not asked): %s", path, skipped)
    run = PredictOnlyRun(path, data, match["stamp"], scored)
    for task in scored:
        sample_file = path.parent / f"samples_{task}_{run.stamp}.jsonl"
        if not sample_file.is_file() and not sample_file.is_symlink():
            raise DataError(sample_file, "missing: run lm_eval with --log_samples")
        inside(sample_file, path.parent.resolve())
        run.sample_files[task] = sample_file
        run.samples[task] = read_samples(sample_file)
    return run


def read_samples(path: Path) -> list[dict[str, Any]]:
    """The logged samples of one task, each with the fields judging needs."""
    rows = []
    first: dict[int, int] = {}  # doc_id -> the line of its row
    for lineno, row in datafiles.jsonl_rows(path):
        for name in SAMPLE_FIELDS:
            if name not in row:
                raise DataError(path, "missing required field", row=lineno, field=name)
        if not isinstance(row["doc_id"], int) or isinstance(row["doc_id"], bool):
            raise DataError(path, "expected an integer", row=lineno, field="doc_id")
        if row["doc_id"] in first:
            raise DataError(
                path,
                f"a second row of document {row['doc_id']} (the first is row {first[row['doc_id']]})",
                row=lineno,
                field="doc_id",
            )
        first[row["doc_id"]] = lineno
        if not isinstance(row["doc"], dict):
            raise DataError(path, "expected the document (an object)", row=lineno, field="doc")
        resps = row["resps"]
        if not (
            isinstance(resps, list)
            and all(isinstance(r, list) and all(isinstance(x, str) for x in r) for r in resps)
        ):
            raise DataError(
                path, "expected a list of response lists (text)", row=lineno, field="resps"
            )
        row["_line"] = lineno
        rows.append(row)
    if not rows:
        raise DataError(path, "no samples")
    return rows


# --------------------------------------------------------------------------- what to evaluate


def requested(run: PredictOnlyRun) -> list[str]:
    """What to ask lm-eval for: the run's top-level groups whose every task is judged here,
    else their judged tasks one by one (so group aggregates are those of the original run)."""
    subtasks: dict[str, list[str]] = run.data.get("group_subtasks") or {}
    children = {c for cs in subtasks.values() for c in cs}
    judged = set(run.tasks)
    _no_cycle(run.results_file, subtasks)

    def leaves(name: str) -> list[str]:
        if name not in subtasks:
            return [name]
        return [leaf for child in subtasks[name] for leaf in leaves(child)]

    def pick(name: str) -> list[str]:
        if all(leaf in judged for leaf in leaves(name)):
            return [name]
        return [p for child in subtasks.get(name, []) for p in pick(child)]

    tops = [g for g in subtasks if g not in children]
    tops += [t for t in run.data["configs"] if t not in children and t not in subtasks]
    return [p for top in tops for p in pick(top)]


def _no_cycle(path: Path, subtasks: Mapping[str, list[str]]) -> None:
    """DataError when a group contains itself, directly or through other groups."""
    done: set[str] = set()
    for start in subtasks:
        if start in done:
            continue
        trail, stack = {start}, [(start, iter(subtasks[start]))]
        while stack:
            name, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                trail.discard(name)
                done.add(name)
            elif child in trail:
                raise DataError(path, f"group {child!r} contains itself", field="group_subtasks")
            elif child in subtasks and child not in done:
                trail.add(child)
                stack.append((child, iter(subtasks[child])))


def user_metadata(
    run: PredictOnlyRun, overrides: Mapping[str, str], extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The settings the tasks are rebuilt with: of the generation run's --metadata (and
    model_args), read back from the task configs lm-eval wrote, only `PROTOCOL_KEYS`; the rest
    is this machine's: `overrides` (the judge's backend settings), `extra` (the judge's
    --metadata: the data folders, caches, the infilling grader's checkouts...) and its
    environment. What OUT recorded for the others is reported where it differs, never used."""
    merged: dict[str, Any] = {}
    for task in run.tasks:
        meta = run.data["configs"][task].get("metadata") or {}
        if not isinstance(meta, dict):
            raise DataError(
                run.results_file, "expected a mapping", field=f"configs.{task}.metadata"
            )
        for key, value in meta.items():
            if key in YAML_METADATA:
                continue
            if key in merged and merged[key] != value:
                raise DataError(
                    run.results_file,
                    f"tasks disagree on metadata key {key!r}",
                    field=f"configs.{task}.metadata",
                )
            merged[key] = value
    ignored = {k: v for k, v in merged.items() if k not in PROTOCOL_KEYS}
    merged = {k: v for k, v in merged.items() if k in PROTOCOL_KEYS}
    merged.update(overrides)
    merged.update(extra or {})
    for key, value in sorted(ignored.items()):
        if merged.get(key) != value:
            here = repr(merged[key]) if key in merged else "this machine's own setting or default"
            log.warning(
                "%s: the generation run set %s=%r; not used here (settings that choose what "
                "this machine reads, writes, trusts or sends come from it alone): judged with %s",
                run.results_file,
                key,
                value,
                here,
            )
    # resumable by default: infilling outcomes cached like xCodeEval's verdicts
    merged.setdefault(INFILLING_CACHE, "default")
    return merged


def judge_metadata(text: str | None) -> dict[str, Any]:
    """`--metadata`: a JSON object of task settings for this machine (ValueError otherwise)."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"--metadata: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError("--metadata: expected a JSON object")
    return value


def backend_settings(args: argparse.Namespace) -> dict[str, str]:
    """`--backend` and its options as the tasks' settings (`exec_backend`, `exec_servers`...)."""
    options = backend_options(args)  # an option of another backend is refused there
    if args.backend is None and not options:
        return {}
    by_option = {option: s.key for s, option, _ in xs.BACKEND_OPTION_SETTINGS}
    return {
        xs.EXEC_BACKEND.key: args.backend or "local",
        **{by_option[k]: v for k, v in options.items()},
    }


# --------------------------------------------------------------------------- the replay


class _Replay:
    """Answers each generation request with the responses logged for (task, doc_id, request)."""

    def __init__(self, run: PredictOnlyRun) -> None:
        self.run = run
        self.logged = {
            (task, row["doc_id"]): row for task, rows in run.samples.items() for row in rows
        }
        self.used: Counter[tuple[str, int, int]] = Counter()

    def answer(self, task: str, doc_id: int, idx: int) -> str:
        row = self.logged.get((task, doc_id))
        if row is None:
            raise DataError(
                self.run.sample_files.get(task, self.run.results_file),
                f"no logged sample for document {doc_id} of {task} (run with another limit "
                "or data?)",
                field="doc_id",
            )
        path, line = self.run.sample_files[task], row["_line"]
        if idx >= len(row["resps"]):
            raise DataError(path, f"no responses of request {idx}", row=line, field="resps")
        n = self.used[(task, doc_id, idx)]
        if n >= len(row["resps"][idx]):
            raise DataError(
                path, f"fewer responses than the task's repeats ({n})", row=line, field="resps"
            )
        self.used[(task, doc_id, idx)] += 1
        return str(row["resps"][idx][n])


def _replay_model(replay: _Replay) -> Any:
    from lm_eval.api.model import LM

    class ReplayLM(LM):  # type: ignore[misc]
        def generate_until(self, requests: Any, disable_tqdm: bool = False) -> list[str]:
            return [replay.answer(r.task_name, r.doc_id, r.idx) for r in requests]

        def loglikelihood(self, requests: Any, disable_tqdm: bool = False) -> Any:
            raise RuntimeError("execution-scored tasks only generate")

        loglikelihood_rolling = loglikelihood

    return ReplayLM()


def _evaluate(
    run: PredictOnlyRun, metadata: Mapping[str, Any], include_path: Path
) -> dict[str, Any]:
    import lm_eval
    from lm_eval.tasks import TaskManager

    config = run.data.get("config") or {}
    replay = _Replay(run)
    manager = TaskManager(include_path=str(include_path), metadata=dict(metadata))
    tasks = requested(run)
    known = set(manager.all_tasks)
    for name in tasks:
        if name not in known:
            raise DataError(
                run.results_file,
                f"task or group {name!r} is not one of --include-path's",
                field="group_subtasks"
                if name in (run.data.get("group_subtasks") or {})
                else "configs",
            )
    with judging_logged():
        out = lm_eval.simple_evaluate(
            model=_replay_model(replay),
            tasks=tasks,
            task_manager=manager,
            limit=config.get("limit"),
            bootstrap_iters=config.get("bootstrap_iters", 100000),
            gen_kwargs=config.get("gen_kwargs") or None,
            random_seed=config.get("random_seed"),
            numpy_random_seed=config.get("numpy_seed"),
            torch_random_seed=config.get("torch_seed"),
            fewshot_random_seed=config.get("fewshot_seed"),
            log_samples=True,
            confirm_run_unsafe_code=True,
        )
    if out is None:
        raise RuntimeError("lm-eval returned no results")
    return dict(out)


def _same_documents(run: PredictOnlyRun, judged: Mapping[str, list[dict[str, Any]]]) -> None:
    """The judged samples are the logged ones: same documents (but the per-process keys), same
    targets, prompts and responses."""
    for task in run.tasks:
        path = run.sample_files[task]
        logged = {r["doc_id"]: r for r in run.samples[task]}
        rows = judged.get(task, [])
        if len(rows) != len(logged):
            raise DataError(
                path, f"{len(logged)} samples logged, {len(rows)} documents rebuilt for {task}"
            )
        for row in rows:
            old = logged.get(row["doc_id"])
            if old is None:
                raise DataError(path, f"no sample of document {row['doc_id']}", field="doc_id")
            line = old["_line"]
            for name in sorted(set(old["doc"]) | set(row["doc"])):
                if name in PER_PROCESS_DOC_FIELDS:
                    continue
                if _plain(old["doc"].get(name)) != _plain(row["doc"].get(name)):
                    raise DataError(
                        path,
                        f"the document differs from the task's rebuilt one ({name!r}): judge "
                        "with the data and settings of the generation run",
                        row=line,
                        field="doc",
                    )
            if _plain(old["target"]) != _plain(row["target"]):
                raise DataError(
                    path, "differs from the rebuilt document's", row=line, field="target"
                )
            rebuilt = {
                "arguments": _logged_arguments(row["arguments"]),
                "resps": row["resps"],
                "prompt_hash": row.get("prompt_hash"),
            }
            for name, value in rebuilt.items():
                if name in old and _plain(value) != _plain(old[name]):
                    raise DataError(
                        path,
                        "differs from what the rebuilt task asks or the replay answered: judge "
                        "with the data and settings of the generation run",
                        row=line,
                        field=name,
                    )


def _logged_arguments(arguments: Sequence[Sequence[Any]]) -> dict[str, dict[str, Any]]:
    """A sample's request arguments as a samples file holds them (`gen_args_i.arg_j`)."""
    return {
        f"gen_args_{i}": {f"arg_{j}": value for j, value in enumerate(args)}
        for i, args in enumerate(arguments)
    }


def _plain(value: Any) -> Any:
    """A value as its JSON text reads back (how the logged sample holds it)."""
    from lm_eval.utils import handle_non_serializable

    return json.loads(json.dumps(value, default=handle_non_serializable, ensure_ascii=False))


@dataclass
class Unjudged:
    """Programs of one task this machine could not judge (INFRA_ERROR, or an infilling grading
    error): they stay in the task's denominator and are named in a warning."""

    task: str
    failed: int
    total: int
    reasons: Counter[str] = field(default_factory=Counter)

    def message(self) -> str:
        why = "; ".join(f"{n} x {reason}" for reason, n in self.reasons.most_common(3))
        return (
            f"{self.task}: {self.failed} of {self.total} programs could not be judged here "
            f"(INFRA_ERROR), counted as unjudged, not left out ({why})"
        )


def _records(filtered: Any) -> list[dict[str, Any]]:
    """The judging records in one sample's filtered responses (JSON texts, maybe nested)."""
    if isinstance(filtered, list | tuple):
        return [r for item in filtered for r in _records(item)]
    if isinstance(filtered, str):
        try:
            value = json.loads(filtered)
        except ValueError:
            return []
        return [value] if isinstance(value, dict) else []
    return [filtered] if isinstance(filtered, dict) else []


def unjudged(samples: Mapping[str, list[dict[str, Any]]]) -> list[Unjudged]:
    """Per task, the programs whose verdict is the machine's failure, not the program's."""
    found = []
    for task, rows in samples.items():
        records = [r for row in rows for r in _records(row.get("filtered_resps"))]
        count = Unjudged(task, 0, len(records))
        for r in records:
            if r.get("verdict") == INFRA_ERROR:
                count.reasons[str(r.get("detail") or "engine failure")[:120]] += 1
            elif "resolved" in r and r.get("error"):
                count.reasons[str(r["error"])[:120]] += 1
        count.failed = sum(count.reasons.values())
        if count.failed:
            found.append(count)
    return found


# --------------------------------------------------------------------------- writing


def _write(run: PredictOnlyRun, out: dict[str, Any], output: Path) -> Path:
    """Save with lm-eval's EvaluationTracker, into a `.partial-` folder renamed when complete."""
    from lm_eval.loggers import EvaluationTracker

    samples = out.pop("samples")
    merged = dict(out)
    for key, value in run.data.items():  # the run's model, seeds, environment, chat template
        if key not in EVALUATED and key not in TIMING:
            merged[key] = value
    final = output / run.stamp
    partial = output / f".{run.stamp}.partial-{os.getpid()}"
    for folder in (final, partial):  # OUT's own `judged/` may hold links of its making
        real_folder(folder)
    shutil.rmtree(partial, ignore_errors=True)
    tracker = EvaluationTracker(output_path=str(partial))
    general = tracker.general_config_tracker
    for name in (
        "model_source",
        "model_name",
        "model_name_sanitized",
        "system_instruction",
        "system_instruction_sha",
        "fewshot_as_multiturn",
        "chat_template",
        "chat_template_sha",
    ):
        setattr(general, name, run.data.get(name))
    tracker.save_results_aggregated(results=merged, samples=samples)
    for task in merged["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])
    written = list(partial.rglob("results_*.json"))
    expected = len(merged["configs"])
    if len(written) != 1 or len(list(partial.rglob("samples_*.jsonl"))) != expected:
        raise RuntimeError(f"{partial}: lm-eval did not write the judged results")
    if final.exists():
        shutil.rmtree(final)  # the superseded judgment of the same generation run
    partial.rename(final)
    return final / written[0].relative_to(partial)


def real_folder(path: Path) -> None:
    """DataError when `path` exists as anything but a real folder (a link, a file)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise DataError(path, "not a folder (a link or a file): the judge writes only into folders")


# --------------------------------------------------------------------------- command


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path, help="--output_path of the lm_eval --predict_only run")
    p.add_argument("--tasks", default=None, help="comma-separated tasks (default: all judged)")
    p.add_argument(
        "--output-path",
        type=Path,
        default=None,
        help=f"where the judged results go (default: OUT/{DEFAULT_OUTPUT})",
    )
    p.add_argument(
        "--include-path",
        type=Path,
        default=TASKS_PATH,
        help="the --include_path of the lm_eval run (default: the pack's tasks)",
    )
    p.add_argument(
        "--metadata",
        default=None,
        help="JSON object of task settings for this machine, over the generation run's "
        '(e.g. \'{"sg_infilling_grader": "local", "sg_infilling_repos_dir": "DIR"}\')',
    )
    add_backend_options(p)
    return p.parse_args(argv)


def judge_output(args: argparse.Namespace) -> list[Path]:
    """Judge every predict-only run under `args.out`; the judged results files written."""
    out = Path(args.out)
    output = Path(args.output_path or (out if out.is_dir() else out.parent) / DEFAULT_OUTPUT)
    wanted = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    overrides = backend_settings(args)
    extra = judge_metadata(args.metadata)
    if args.output_path is None:  # inside OUT: a link there would lead the judge elsewhere
        real_folder(output)
    # every input is read and checked before anything is judged
    runs = [read_run(f, wanted) for f in find_runs(out, output)]
    for run in runs:
        real_folder(output / run.stamp)
    written = []
    for run in runs:
        judged = _evaluate(run, user_metadata(run, overrides, extra), args.include_path)
        _same_documents(run, judged["samples"])
        for problem in unjudged(judged["samples"]):
            log.warning("%s", problem.message())
        written.append(_write(run, judged, output.resolve()))
        log.info("%s: judged %s -> %s", PROG, run.results_file, written[-1])
    return written


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        for path in judge_output(args):
            print(path)
    except (DataError, ValueError) as exc:
        print(f"{PROG}: {exc}".splitlines()[0], file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
