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

from execution.jsonl import iter_jsonl
from execution.languages import CLUSTERS, resolve
from utils import download
from utils.errors import DataError
from utils.settings import as_bool, lookup

log = logging.getLogger("xcodeeval")

HUB_REPO = "NTU-NLP-sg/xCodeEval"
SPLITS = ("validation", "test")

# Task-name suffix -> cluster (a cluster's own runtime is `execution.resolve(cluster)`).
SLUGS: dict[str, str] = {
    "c": "C",
    "cpp": "C++",
    "csharp": "C#",
    "go": "Go",
    "java": "Java",
    "javascript": "Javascript",
    "kotlin": "Kotlin",
    "php": "PHP",
    "python": "Python",
    "ruby": "Ruby",
    "rust": "Rust",
}

PROBLEMS_FILE = "problem_descriptions.jsonl"
UNITTESTS_FILE = "unittest_db.json"
CLUSTER_TASKS = (
    "tag_classification",
    "code_compilation",
    "code_translation",
    "apr",
    "retrieval_nl_code",
    "retrieval_code_code",
)
SYNTHESIS_FILES = {
    "validation": "program_synthesis/validation/prog_syn_val.jsonl",
    "test": "program_synthesis/test/prog_syn_test.jsonl",
}


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"xCodeEval split must be one of {', '.join(SPLITS)}, got {split!r}")
    return split


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
        if self.local_dir is not None:
            target = self.local_dir / relpath
            if not target.is_file():
                raise DataError(
                    target,
                    f"file not found; {needed_by} needs it (xCodeEval data dir {self.local_dir}, "
                    f"set by xcodeeval_data_dir / $XCODEEVAL_DATA)",
                )
            return target
        try:
            return download.fetch_hub_file(HUB_REPO, relpath)
        except Exception as exc:  # network, auth or missing file: name what was needed
            raise DataError(
                f"hf://datasets/{HUB_REPO}/{relpath}",
                f"could not download; {needed_by} needs it ({type(exc).__name__}: {exc}). "
                "Point xcodeeval_data_dir or $XCODEEVAL_DATA at a local copy to work offline",
            ) from exc


def source_from_settings(kwargs: Mapping[str, Any]) -> DataSource:
    """The data source chosen by lm-eval metadata / model_args / environment."""
    local = lookup(kwargs, "xcodeeval_data_dir", env="XCODEEVAL_DATA")
    sample = as_bool(
        lookup(kwargs, "xcodeeval_sample_tests", env="XCODEEVAL_SAMPLE_TESTS", default=False),
        "xcodeeval_sample_tests",
    )
    if local is not None:
        root = Path(str(local)).expanduser()
        if not root.is_dir():
            raise DataError(
                root, "xCodeEval data dir does not exist (xcodeeval_data_dir / $XCODEEVAL_DATA)"
            )
        return DataSource(root.resolve(), sample)
    return DataSource(None, sample)


# --------------------------------------------------------------------------- raw readers


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a bad line is a DataError naming the file and the line."""
    return [row for _, row in iter_jsonl(path)]


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
        def text(name: str) -> str:
            return str(require_field(row, name, path, lineno))

        inputs = require_field(row, "sample_inputs", path, lineno)
        outputs = require_field(row, "sample_outputs", path, lineno)
        if not isinstance(inputs, list) or not isinstance(outputs, list):
            raise DataError(path, "sample_inputs/sample_outputs must be lists", row=lineno)
        if len(inputs) != len(outputs):
            raise DataError(
                path,
                f"{len(inputs)} sample inputs but {len(outputs)} sample outputs",
                row=lineno,
                field="sample_outputs",
            )
        tags = row.get("tags") or []
        difficulty = row.get("difficulty")
        return cls(
            src_uid=text("src_uid"),
            description=text("description"),
            input_spec=str(row.get("input_spec") or ""),
            output_spec=str(row.get("output_spec") or ""),
            notes=None if row.get("notes") is None else str(row["notes"]),
            sample_inputs=tuple(str(x) for x in inputs),
            sample_outputs=tuple(str(x) for x in outputs),
            input_from=str(row.get("input_from") or "standard input"),
            output_to=str(row.get("output_to") or "standard output"),
            time_limit_s=parse_time_limit(text("time_limit"), path, lineno),
            memory_limit_mb=parse_memory_limit(text("memory_limit"), path, lineno),
            tags=tuple(str(t) for t in tags),
            difficulty=int(difficulty) if isinstance(difficulty, (int, float)) else None,
        )

    def sample_tests(self) -> list[dict[str, Any]]:
        return sample_tests(self.sample_inputs, self.sample_outputs)


def sample_tests(inputs: Sequence[str], outputs: Sequence[str]) -> list[dict[str, Any]]:
    """Public sample tests in the normalised test form: one accepted output each."""
    return [{"input": i, "output": [o]} for i, o in zip(inputs, outputs, strict=True)]


@functools.lru_cache(maxsize=8)
def _problems(path: str, mtime: float) -> dict[str, Problem]:
    out: dict[str, Problem] = {}
    for lineno, row in enumerate(_cached_jsonl(path, mtime), 1):
        problem = Problem.from_row(row, path, lineno)
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
    with open(path, encoding="utf-8") as fh:
        try:
            db = json.load(fh)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"invalid JSON ({exc.msg} at line {exc.lineno})") from exc
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
    if not raw:
        return None
    if not isinstance(raw, list):
        raise DataError(where, "expected a list of tests", field=src_uid)
    tests = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or "input" not in entry or "output" not in entry:
            raise DataError(where, f"test {i} needs 'input' and 'output'", field=src_uid)
        out = entry["output"]
        outputs = [out] if isinstance(out, str) else [str(o) for o in out]
        tests.append({"input": str(entry["input"]), "output": outputs})
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
    counted_in: str = "unavailable_runtime_rows and unscored_rows"

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
    from execution.languages import UnknownLanguageError

    try:
        runtime = resolve(name)
    except UnknownLanguageError:
        return "not a runtime the execution engine knows"
    if runtime.available:
        return ""
    return runtime.reason or "toolchain unavailable"


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
        pairs = ((row, Problem.from_row(row, path, i)) for i, row in enumerate(jsonl_rows(path), 1))
    return _attach_tests(pairs, source, report, needed_by), report


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
    """(cluster, file, line, row) for every row of the given language files of a task."""
    out = []
    for cluster in clusters:
        path = source.path(cluster_file(task_dir, split, cluster), needed_by)
        for lineno, row in enumerate(jsonl_rows(path), 1):
            out.append((cluster, path, lineno, row))
    return out


def joined_exec_rows(
    source: DataSource,
    task_dir: str,
    split: str,
    clusters: Sequence[str],
    needed_by: str,
    judged_in_own_runtime: bool = False,
) -> tuple[list[ExecRow], JoinReport]:
    """Rows of a per-language execution task (translation, APR) joined with problem and tests.

    With `judged_in_own_runtime` (APR: a fix runs in the buggy program's `lang`), rows whose
    runtime is unavailable on this machine (e.g. Python 2 on Debian 12) are counted per runtime
    in the report and not scored: judging them could only yield engine failures, which would
    turn the whole task's pass@k into NaN.
    """
    report = JoinReport(needed_by, split, tests=source.tests_kind)
    problems = load_problems(source, needed_by)
    pairs = []
    for cluster, path, lineno, row in cluster_rows(source, task_dir, split, clusters, needed_by):
        uid = str(require_field(row, "src_uid", path, lineno))
        if judged_in_own_runtime:
            lang = str(row.get("lang") or cluster)
            reason = runtime_unavailable(lang)  # cheap: the registry and runtimes cache
            if reason:
                report.total += 1
                report.count_unavailable(lang, reason)
                continue
        pairs.append((row, problems.get(uid)))
    return _attach_tests(pairs, source, report, needed_by), report
