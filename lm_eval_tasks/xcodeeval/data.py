"""xCodeEval raw files: where they are, how they are read, and how rows are joined to problems.

The Hub repository `NTU-NLP-sg/xCodeEval` stores its data as plain JSONL/JSON files (its loading
script no longer runs under current `datasets`), so this module reads those files itself and does
the two joins every task needs, by `src_uid`:

* `problem_descriptions.jsonl` -> the problem statement, limits and public sample tests;
* `unittest_db.json`           -> the hidden unit tests used for execution-based scoring.

A row that cannot be joined is never scored as a failure and never dropped silently: it is
counted in a `JoinReport`, which is logged and shown by the tasks and the scoring CLI.

Data comes from the Hub (cached by huggingface_hub) unless a local copy of the repository's
layout is named by `xcodeeval_data_dir` (lm-eval `--metadata`) or `$XCODEEVAL_DATA`.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.languages import CLUSTERS, resolve
from code_eval_taskpack.utils import datafiles, download, languages
from code_eval_taskpack.utils.errors import DataError
from code_eval_taskpack.utils.settings import parse_settings
from lm_eval_tasks.predict_only import keep_every_row
from lm_eval_tasks.xcodeeval import kinds
from lm_eval_tasks.xcodeeval import settings as xs

log = logging.getLogger("xcodeeval")

HUB_REPO = "NTU-NLP-sg/xCodeEval"
SPLITS = xs.SPLITS

# Task-name suffix -> cluster (a cluster's own runtime is `languages.cluster_runtime(cluster)`).
SLUGS: dict[str, str] = languages.xcodeeval_slugs()

PROBLEMS_FILE = "problem_descriptions.jsonl"
UNITTESTS_FILE = "unittest_db.json"
# the Hub folders with one file per language cluster (`cluster_file`), from `kinds.KINDS`
CLUSTER_TASKS = kinds.LANGUAGE_FILE_FOLDERS
SYNTHESIS_FILES = {
    split: f"{kinds.SYNTH.folder}/{split}/prog_syn_{short}.jsonl"
    for split, short in (("validation", "val"), ("test", "test"))
}


DATA_DIR_KEY, DATA_DIR_ENV = xs.DATA_DIR.key, xs.DATA_DIR.env
SAMPLE_TESTS_KEY, SAMPLE_TESTS_ENV = xs.SAMPLE_TESTS.key, xs.SAMPLE_TESTS.env
LOCAL_COPY = f"{DATA_DIR_KEY} (--metadata) or ${DATA_DIR_ENV}"
SAMPLE_TESTS_HINT = (
    f"or run on the public sample tests instead with --metadata '{{\"{SAMPLE_TESTS_KEY}\": true}}' "
    f"(or {SAMPLE_TESTS_ENV}=1; such numbers are not comparable with the paper)"
)


@dataclass(frozen=True)
class SettingNames:
    """How error messages tell the user to point at a local copy or switch to sample tests: lm-eval
    runs name `--metadata` keys, a command line its own flags."""

    local_copy: str = LOCAL_COPY
    sample_tests: str = SAMPLE_TESTS_HINT


LM_EVAL_NAMES = SettingNames()


def check_split(split: Any) -> str:
    """The split a run asked for (`xcodeeval_split` / `$XCODEEVAL_SPLIT`), checked."""
    try:
        return str(xs.SPLIT.convert(split))
    except ValueError as exc:
        raise ValueError(f"{exc} (the retrieval tasks' 'dev' files are 'validation')") from None


def cluster_file(task_dir: str, split: str, cluster: str) -> str:
    """Repository-relative path of one language file of a per-cluster task."""
    if task_dir not in CLUSTER_TASKS:
        raise ValueError(f"unknown xCodeEval task folder {task_dir!r}")
    if cluster not in CLUSTERS:
        raise ValueError(f"unknown language cluster {cluster!r}; accepted: {', '.join(CLUSTERS)}")
    # The authors' trees call the retrieval folders' validation split `dev/` (files
    # `*_dev_file.jsonl`); every other folder is named after its split.
    retrieval = task_dir.startswith("retrieval_")
    folder = check_split(split)
    if retrieval and folder == "validation":
        folder = "dev"
    if retrieval:
        # e.g. retrieval_nl_code/dev/C++_nl_code_dev_file.jsonl (the Hub's own naming)
        kind = task_dir.removeprefix("retrieval_")
        return f"{task_dir}/{folder}/{cluster}_{kind}_{folder}_file.jsonl"
    return f"{task_dir}/{folder}/{cluster}.jsonl"


# --------------------------------------------------------------------------- data source


@dataclass(frozen=True)
class DataSource:
    """Where the raw files come from, and which tests score programs.

    `sample_tests=True` scores against the public sample tests of the problem statement instead
    of the hidden unit tests: useful for demos and copies without `unittest_db.json`, and never
    comparable with published numbers (every report says so).
    """

    local_dir: Path | None = None
    sample_tests: bool = False
    names: SettingNames = field(default=LM_EVAL_NAMES, compare=False)

    @property
    def tests_kind(self) -> str:
        """The tests that judge programs, as reports name them: "sample" or "hidden"."""
        return "sample" if self.sample_tests else "hidden"

    def describe(self) -> str:
        return str(self.local_dir) if self.local_dir else f"hf://datasets/{HUB_REPO}"

    def ref(self) -> str:
        """A string form stored in lm-eval docs, so filters can reopen the same data."""
        return json.dumps(
            {"dir": str(self.local_dir) if self.local_dir else None, "sample": self.sample_tests}
        )

    @classmethod
    def from_ref(cls, ref: str) -> DataSource:
        raw = json.loads(ref)
        return cls(Path(raw["dir"]) if raw["dir"] else None, bool(raw["sample"]))

    def has(self, relpath: str) -> bool:
        """Whether a local copy holds `relpath` (the Hub is assumed to hold every file)."""
        return self.local_dir is None or (self.local_dir / relpath).is_file()

    def path(self, relpath: str, needed_by: str) -> Path:
        """Local path of `relpath`, downloading it from the Hub (cached) when no copy is set."""
        hint = f"; {self.names.sample_tests}" if relpath == UNITTESTS_FILE else ""
        if self.local_dir is not None:
            target = self.local_dir / relpath
            if not target.is_file():
                raise DataError(
                    target,
                    f"file not found; {needed_by} needs it (xCodeEval data dir {self.local_dir}, "
                    f"set by {self.names.local_copy}){hint}",
                )
            return target
        return download.download_hub_file(
            HUB_REPO, relpath, needed_by=needed_by, local_copy=self.names.local_copy, hint=hint
        )

    def require(self, relpaths: Sequence[str], needed_by: str) -> None:
        """Fail once, listing every missing file, when a local copy lacks some of `relpaths`."""
        if self.local_dir is None:
            return
        missing = [p for p in relpaths if not (self.local_dir / p).is_file()]
        if missing:
            raise DataError(
                self.local_dir,
                f"{needed_by} reads {len(relpaths)} files and {len(missing)} are missing: "
                f"{', '.join(missing)}. Every language file must exist, even empty (see the "
                "data layout in lm_eval_tasks/xcodeeval/README.md)",
            )


def source_from_settings(
    kwargs: Mapping[str, Any], names: SettingNames = LM_EVAL_NAMES
) -> DataSource:
    """The data source chosen by lm-eval metadata / model_args / environment; its errors name
    the settings as `names` says."""
    values = parse_settings((xs.DATA_DIR, xs.SAMPLE_TESTS), kwargs)
    local, sample = values[DATA_DIR_KEY], values[SAMPLE_TESTS_KEY]
    if local is not None:
        root = Path(str(local)).expanduser()
        if not root.is_dir():
            raise DataError(root, f"xCodeEval data dir does not exist (set by {names.local_copy})")
        return DataSource(root.resolve(), sample, names)
    return DataSource(None, sample, names)


# --------------------------------------------------------------------------- raw readers


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a bad line is a DataError naming the file and the line."""
    return [row for _, row in datafiles.jsonl_rows(path)]


@functools.lru_cache(maxsize=64)
def _cached_jsonl(path: str, mtime: float) -> tuple[dict[str, Any], ...]:
    return tuple(read_jsonl(Path(path)))


def jsonl_rows(path: Path) -> tuple[dict[str, Any], ...]:
    """`read_jsonl`, cached per (path, mtime): the 11 per-language tasks share one read."""
    return _cached_jsonl(str(path), path.stat().st_mtime)


def require_field(row: Mapping[str, Any], name: str, path: Path | str, lineno: int) -> Any:
    if name not in row or row[name] is None:
        raise DataError(path, "missing required field", row=lineno, field=name)
    return row[name]


def require_text(row: Mapping[str, Any], name: str, path: Path | str, lineno: int) -> str:
    """A required, non-empty text field (numbers are not silently turned into text)."""
    return datafiles.required_text(row, name, path, lineno)


def require_uid(row: Mapping[str, Any], name: str, path: Path | str, lineno: int) -> str:
    """A required id (`src_uid`, `code_uid`, `apr_id`): text without surrounding whitespace."""
    return datafiles.required_id(row, name, path, lineno)


def optional_int(row: Mapping[str, Any], name: str, path: Path | str, lineno: int) -> int | None:
    """An optional integer (e.g. `difficulty`): null/absent is None; "1500" or 1.5 are errors."""
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise DataError(path, f"expected an integer, got {value!r:.40}", row=lineno, field=name)
    return int(value)


_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(seconds?|s|sec)?\s*$", re.I)
_MEMORY = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(megabytes?|mb|mib|m)?\s*$", re.I)


def parse_time_limit(text: Any, path: Path | str = "?", row: int | None = None) -> float:
    """'2 seconds' -> 2.0 (the problem's own limit, before any runtime factor)."""
    m = _TIME.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise DataError(path, f"cannot parse time limit {text!r}", row=row, field="time_limit")
    return float(m.group(1))


def parse_memory_limit(text: Any, path: Path | str = "?", row: int | None = None) -> int:
    """'256 megabytes' -> 256."""
    m = _MEMORY.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise DataError(path, f"cannot parse memory limit {text!r}", row=row, field="memory_limit")
    return int(float(m.group(1)))


@dataclass(frozen=True)
class Problem:
    """One Codeforces problem as xCodeEval describes it."""

    src_uid: str
    description: str
    input_spec: str
    output_spec: str
    notes: str | None
    sample_inputs: tuple[str, ...]
    sample_outputs: tuple[str, ...]
    input_from: str
    output_to: str
    time_limit_s: float
    memory_limit_mb: int
    tags: tuple[str, ...]
    difficulty: int | None

    @classmethod
    def from_row(cls, row: Mapping[str, Any], path: Path | str, lineno: int) -> Problem:
        """One problem row, checked: every field the prompts or the judge use must be there with
        its type; only `notes` and `difficulty` may be null. `input_spec`/`output_spec` may be
        empty text (some statements have none), never absent."""

        def text(name: str, allow_empty: bool = False) -> str:
            return datafiles.required_text(row, name, path, lineno, allow_empty=allow_empty)

        inputs = datafiles.text_list(row, "sample_inputs", path, lineno)
        outputs = datafiles.text_list(row, "sample_outputs", path, lineno)
        if len(inputs) != len(outputs):
            raise DataError(
                path,
                f"{len(inputs)} sample inputs but {len(outputs)} sample outputs",
                row=lineno,
                field="sample_outputs",
            )
        notes = row.get("notes")
        return cls(
            src_uid=require_uid(row, "src_uid", path, lineno),
            description=text("description"),
            input_spec=text("input_spec", allow_empty=True),
            output_spec=text("output_spec", allow_empty=True),
            notes=None if notes is None else text("notes", allow_empty=True),
            sample_inputs=tuple(inputs),
            sample_outputs=tuple(outputs),
            input_from=text("input_from"),
            output_to=text("output_to"),
            time_limit_s=parse_time_limit(text("time_limit"), path, lineno),
            memory_limit_mb=parse_memory_limit(text("memory_limit"), path, lineno),
            tags=tuple(datafiles.text_list(row, "tags", path, lineno)),
            difficulty=optional_int(row, "difficulty", path, lineno),
        )

    def sample_tests(self) -> list[dict[str, Any]]:
        return sample_tests(self.sample_inputs, self.sample_outputs)


def sample_tests(inputs: Sequence[str], outputs: Sequence[str]) -> list[dict[str, Any]]:
    """Public sample tests in the normalised test form: one accepted output each."""
    return [{"input": i, "output": [o]} for i, o in zip(inputs, outputs, strict=True)]


@functools.lru_cache(maxsize=8)
def _problems(path: str, mtime: float) -> dict[str, Problem]:
    out: dict[str, Problem] = {}
    seen = datafiles.IdRegistry(path, "src_uid")
    for lineno, row in datafiles.jsonl_rows(path):
        problem = Problem.from_row(row, path, lineno)
        seen.add(problem.src_uid, lineno)
        out[problem.src_uid] = problem
    return out


def load_problems(source: DataSource, needed_by: str) -> dict[str, Problem]:
    """`problem_descriptions.jsonl` keyed by src_uid."""
    path = source.path(PROBLEMS_FILE, needed_by)
    return _problems(str(path), path.stat().st_mtime)


class UnitTests:
    """`unittest_db.json` as read once per file version.

    Each problem's tests are normalised on first use and kept, so all samples and documents of
    a problem share one list (the engine builds its test cases once per list).
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self._tests: dict[str, list[dict[str, Any]] | None] = {}

    def tests(self, src_uid: str) -> list[dict[str, Any]] | None:
        """`tests_for` one problem, memoised."""
        if src_uid not in self._tests:
            self._tests[src_uid] = tests_for(self.raw, src_uid)
        return self._tests[src_uid]


@functools.lru_cache(maxsize=2)
def _unittests(path: str, mtime: float) -> UnitTests:
    db, _ = datafiles.read_json(path)
    if not isinstance(db, dict):
        raise DataError(path, "expected an object mapping src_uid to a list of tests")
    return UnitTests(db)


def load_unittests(source: DataSource, needed_by: str) -> UnitTests:
    """`unittest_db.json`, cached per file version (with its memoised per-problem tests)."""
    path = source.path(UNITTESTS_FILE, needed_by)
    return _unittests(str(path), path.stat().st_mtime)


def unittests_for(source: DataSource, needed_by: str) -> UnitTests | None:
    """The hidden unit tests, or None when the source scores on public sample tests."""
    return None if source.sample_tests else load_unittests(source, needed_by)


def problem_tests(problem: Problem, unittests: UnitTests | None) -> list[dict[str, Any]] | None:
    """The tests that judge `problem` (see `unittests_for`); None when it has none."""
    if unittests is None:
        return problem.sample_tests() or None
    return unittests.tests(problem.src_uid)


def tests_for(
    db: Mapping[str, Any], src_uid: str, where: str = UNITTESTS_FILE
) -> list[dict[str, Any]] | None:
    """Normalised hidden tests of one problem ({input, output: [..]}), None if it has none.

    Extra keys of a test entry are ignored; a string `output` is read as a one-element list.
    """
    raw = db.get(src_uid)
    if raw is None or raw == []:
        return None
    if not isinstance(raw, list):
        raise DataError(where, "expected a list of tests", field=src_uid)
    tests = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or "input" not in entry or "output" not in entry:
            raise DataError(where, f"test {i} needs 'input' and 'output'", field=src_uid)
        given, out = entry["input"], entry["output"]
        if not isinstance(given, str):
            raise DataError(where, f"test {i}: 'input' must be text", field=src_uid)
        outputs = [out] if isinstance(out, str) else out
        if not isinstance(outputs, list) or not outputs:
            raise DataError(where, f"test {i}: 'output' must be text or a list", field=src_uid)
        if not all(isinstance(o, str) for o in outputs):
            raise DataError(where, f"test {i}: every 'output' must be text", field=src_uid)
        tests.append({"input": given, "output": list(outputs)})
    return tests


# --------------------------------------------------------------------------- joins


@dataclass
class JoinReport:
    """Rows of one task/split that could not be joined, by reason. Logged, never hidden."""

    task: str
    split: str
    total: int = 0
    missing_problem: list[str] = field(default_factory=list)
    missing_tests: list[str] = field(default_factory=list)
    # runtime (as the rows spell it) -> rows in it that cannot run on this machine
    unavailable_runtime: dict[str, int] = field(default_factory=dict)
    runtime_reasons: dict[str, str] = field(default_factory=dict)
    tests: str = "hidden"  # or "sample"
    unit: str = "rows"  # what the counted items are, as messages name them
    counted_in: str = "the protocol's unavailable_runtime_rows and unscored_rows (results file)"

    @property
    def unavailable_rows(self) -> int:
        return sum(self.unavailable_runtime.values())

    @property
    def unscored(self) -> int:
        """Every row not scored, whatever the reason (join failure or unavailable runtime)."""
        return len(self.missing_problem) + len(self.missing_tests) + self.unavailable_rows

    def count_unavailable(self, runtime: str, reason: str) -> None:
        self.unavailable_runtime[runtime] = self.unavailable_runtime.get(runtime, 0) + 1
        self.runtime_reasons[runtime] = reason

    def summary(self) -> str:
        text = (
            f"{self.task} ({self.split}): {self.total - self.unscored} of {self.total} "
            f"{self.unit} scored"
        )
        if self.missing_problem:
            text += (
                f"; {len(self.missing_problem)} not scored, src_uid absent from {PROBLEMS_FILE} "
                f"(e.g. {', '.join(sorted(set(self.missing_problem))[:5])})"
            )
        if self.missing_tests:
            what = "sample tests" if self.tests == "sample" else f"unit tests in {UNITTESTS_FILE}"
            text += (
                f"; {len(self.missing_tests)} not scored, no {what} "
                f"(e.g. {', '.join(sorted(set(self.missing_tests))[:5])})"
            )
        for runtime, n in sorted(self.unavailable_runtime.items()):
            text += f"; {n} not scored, runtime {runtime!r} unavailable here"
        return text

    def log(self) -> None:
        if self.unscored:
            log.warning("%s", self.summary())
        else:
            log.info("%s", self.summary())
        for runtime, n in sorted(self.unavailable_runtime.items()):
            log.warning(
                "%s (%s): %d %s in runtime %r NOT SCORED: the runtime is unavailable on this "
                "machine (%s); they are counted in %s",
                self.task,
                self.split,
                n,
                self.unit,
                runtime,
                self.runtime_reasons.get(runtime, "unavailable"),
                self.counted_in,
            )


SAMPLE_TESTS_WARNING = (
    "SAMPLE-TEST SCORING: programs are judged against the public sample tests of each problem "
    "statement, not xCodeEval's hidden unit tests; numbers are NOT comparable with the paper"
)


def runtime_unavailable(name: str) -> str:
    """Why the runtime a row names (its `lang`) cannot judge programs here; "" when it can.

    A name the engine's registry does not know is unavailable too: such rows are counted and
    reported like rows whose toolchain is missing, never turned into engine failures.
    """
    from code_eval_taskpack.execution.languages import UnknownLanguageError

    try:
        runtime = resolve(name)
    except UnknownLanguageError:
        return "not a runtime the execution engine knows"
    if runtime.available:
        return ""
    return runtime.reason or "toolchain unavailable"


def runtime_known(name: str) -> bool:
    """Whether the engine's registry knows the runtime `name` (installed here or not)."""
    from code_eval_taskpack.execution.languages import UnknownLanguageError

    try:
        resolve(name)
    except UnknownLanguageError:
        return False
    return True


@dataclass(frozen=True)
class ExecRow:
    """A row of an execution task joined with its problem (which has tests to judge it)."""

    row: dict[str, Any]
    problem: Problem


def synthesis_rows(
    source: DataSource, split: str, needed_by: str
) -> tuple[list[ExecRow], JoinReport]:
    """Program-synthesis problems of a split with their tests.

    With sample tests and a copy that lacks the program_synthesis folder (like the shared
    106-problem sample), every problem of `problem_descriptions.jsonl` is a synthesis problem.
    """
    relpath = SYNTHESIS_FILES[check_split(split)]
    report = JoinReport(needed_by, split, tests=source.tests_kind)
    pairs: Iterable[tuple[Mapping[str, Any], Problem | None]]
    if source.sample_tests and not source.has(relpath):
        log.warning(
            "%s: %s absent in %s; using every problem of %s",
            needed_by,
            relpath,
            source.describe(),
            source.path(PROBLEMS_FILE, needed_by),
        )
        problems = load_problems(source, needed_by).values()
        pairs = (({"src_uid": p.src_uid}, p) for p in problems)
    else:
        path = source.path(relpath, needed_by)
        pairs = synthesis_problems(path)
    return _attach_tests(pairs, source, report, needed_by), report


def synthesis_problems(path: Path) -> list[tuple[Mapping[str, Any], Problem]]:
    """(row, problem) of a program-synthesis file, checked; a src_uid may appear once."""
    seen = datafiles.IdRegistry(path, "src_uid")
    out: list[tuple[Mapping[str, Any], Problem]] = []
    for lineno, row in enumerate(jsonl_rows(path), 1):
        problem = Problem.from_row(row, path, lineno)
        seen.add(problem.src_uid, lineno)
        out.append((row, problem))
    return out


def _attach_tests(
    pairs: Iterable[tuple[Mapping[str, Any], Problem | None]],
    source: DataSource,
    report: JoinReport,
    needed_by: str,
) -> list[ExecRow]:
    """Rows whose problem is known and has tests; the others are counted in `report`."""
    unittests = unittests_for(source, needed_by)
    out: list[ExecRow] = []
    for row, problem in pairs:
        report.total += 1
        if problem is None:
            report.missing_problem.append(str(row.get("src_uid")))
        elif not problem_tests(problem, unittests):
            report.missing_tests.append(problem.src_uid)
        else:
            out.append(ExecRow(dict(row), problem))
    return out


def cluster_rows(
    source: DataSource, task_dir: str, split: str, clusters: Sequence[str], needed_by: str
) -> list[tuple[str, Path, int, dict[str, Any]]]:
    """(cluster, file, line, row) for every row of the given language files of a task.

    A local copy must hold every one of those files (an empty file is a language without rows):
    a missing one fails before any is read, and the error lists all that are missing.
    """
    relpaths = [cluster_file(task_dir, split, cluster) for cluster in clusters]
    source.require(relpaths, needed_by)
    out = []
    for cluster, relpath in zip(clusters, relpaths, strict=True):
        path = source.path(relpath, needed_by)
        for lineno, row in datafiles.jsonl_rows(path):
            out.append((cluster, path, lineno, row))
    return out


def check_cluster_row(
    row: Mapping[str, Any],
    cluster: str,
    path: Path | str,
    lineno: int,
    text_fields: Sequence[str],
    id_field: str | None,
    ids: dict[str, datafiles.IdRegistry],
) -> dict[str, Any]:
    """A row of a per-language file with its required fields checked (see `datafiles`).

    `src_uid`, `lang` and `lang_cluster` are always required, and `lang_cluster` must name the
    file's own cluster; `id_field` (e.g. `code_uid`) must be unique in its file, up to case.
    """
    require_uid(row, "src_uid", path, lineno)
    require_text(row, "lang", path, lineno)
    if require_text(row, "lang_cluster", path, lineno) != cluster:
        raise DataError(
            path,
            f"lang_cluster {row['lang_cluster']!r} in the file of cluster {cluster!r}",
            row=lineno,
            field="lang_cluster",
        )
    for name in text_fields:
        require_text(row, name, path, lineno)
    if id_field is not None:
        value = require_uid(row, id_field, path, lineno)
        registry = ids.setdefault(str(path), datafiles.IdRegistry(path, id_field))
        registry.add(value, lineno)
    return dict(row)


def check_kind_row(
    kind: kinds.Kind,
    row: Mapping[str, Any],
    cluster: str,
    path: Path | str,
    lineno: int,
    ids: dict[str, datafiles.IdRegistry],
) -> dict[str, Any]:
    """`check_cluster_row` with the fields and id `kind` declares (`kinds.Kind.row_fields`)."""
    return check_cluster_row(row, cluster, path, lineno, kind.row_fields, kind.row_id, ids)


# Fields each execution task's rows must have, beyond src_uid, lang and lang_cluster (by folder).
EXEC_ROW_FIELDS: dict[str, tuple[tuple[str, ...], str | None]] = {
    k.folder: (k.row_fields, k.row_id) for k in kinds.of_family(kinds.EXECUTION) if k.row_id
}


def joined_exec_rows(
    source: DataSource,
    task_dir: str,
    split: str,
    clusters: Sequence[str],
    needed_by: str,
    judged_in_own_runtime: bool = False,
) -> tuple[list[ExecRow], JoinReport]:
    """Rows of a per-language execution task (translation, APR) joined with problem and tests.

    Every row is checked first (`check_cluster_row`, `EXEC_ROW_FIELDS`): a missing or empty
    program, id or language is an error naming file, line and field, never a default.

    With `judged_in_own_runtime` (APR: a fix runs in the buggy program's `lang`), rows whose
    runtime is unavailable on this machine (e.g. Python 2 on Debian 12) are counted per runtime
    in the report and not scored: judging them could only yield engine failures, which would
    turn the whole task's pass@k into NaN. A `--predict_only` run keeps them (the judging
    machine decides) and so does `code-eval judge`, where they become counted INFRA_ERRORs
    (`lm_eval_tasks.predict_only.keep_every_row`).
    """
    report = JoinReport(needed_by, split, tests=source.tests_kind)
    problems = load_problems(source, needed_by)
    text_fields, id_field = EXEC_ROW_FIELDS[task_dir]
    ids: dict[str, datafiles.IdRegistry] = {}
    pairs = []
    for cluster, path, lineno, raw in cluster_rows(source, task_dir, split, clusters, needed_by):
        row = check_cluster_row(raw, cluster, path, lineno, text_fields, id_field, ids)
        uid = row["src_uid"]
        if judged_in_own_runtime:
            lang = row["lang"]
            reason = runtime_unavailable(lang)  # cheap: the registry and runtimes cache
            if reason and keep_every_row() and runtime_known(lang):
                # generated here, judged elsewhere (or judged as generated): never dropped
                reason = ""
            if reason:
                report.total += 1
                report.count_unavailable(lang, reason)
                continue
        pairs.append((row, problems.get(uid)))
    return _attach_tests(pairs, source, report, needed_by), report
