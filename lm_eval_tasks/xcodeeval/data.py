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
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.languages.registry import CLUSTERS, resolve
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
HIDDEN_WITHOUT_TRUNCATED = "hidden without truncated"
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
    folder = check_split(split)
    if task_dir.startswith("retrieval_"):
        # The Hub keeps the retrieval validation rows in `validation/` (moved from `dev/` in the
        # dataset's May 2023 fix; `dev/` is the stale first upload) and still names the files
        # after `dev`: retrieval_nl_code/validation/C++_nl_code_dev_file.jsonl.
        kind = task_dir.removeprefix("retrieval_")
        stem = "dev" if folder == "validation" else folder
        return f"{task_dir}/{folder}/{cluster}_{kind}_{stem}_file.jsonl"
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
    drop_truncated: bool = False  # judge without the hidden tests the publisher cut short

    @property
    def tests_kind(self) -> str:
        """The tests that judge programs, as reports name them: "sample", "hidden" (the paper's
        protocol, cut tests kept) or "hidden without truncated" (a different protocol)."""
        if self.sample_tests:
            return "sample"
        return HIDDEN_WITHOUT_TRUNCATED if self.drop_truncated else "hidden"

    def describe(self) -> str:
        return str(self.local_dir) if self.local_dir else f"hf://datasets/{HUB_REPO}"

    def ref(self) -> str:
        """A string form stored in lm-eval docs, so filters can reopen the same data."""
        return json.dumps(
            {
                "dir": str(self.local_dir) if self.local_dir else None,
                "sample": self.sample_tests,
                "drop_truncated": self.drop_truncated,
            }
        )

    @classmethod
    def from_ref(cls, ref: str) -> DataSource:
        raw = json.loads(ref)
        return cls(
            Path(raw["dir"]) if raw["dir"] else None,
            bool(raw["sample"]),
            drop_truncated=bool(raw.get("drop_truncated", False)),
        )

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
    values = parse_settings((xs.DATA_DIR, xs.SAMPLE_TESTS, xs.DROP_TRUNCATED), kwargs)
    local, sample = values[DATA_DIR_KEY], values[SAMPLE_TESTS_KEY]
    drop = bool(values[xs.DROP_TRUNCATED.key]) and not sample
    if local is not None:
        root = Path(str(local)).expanduser()
        if not root.is_dir():
            raise DataError(root, f"xCodeEval data dir does not exist (set by {names.local_copy})")
        return DataSource(root.resolve(), sample, names, drop)
    return DataSource(None, sample, names, drop)


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


#: the columns every problem row has (a file without one of them is malformed); their values
#: may still be null or odd in single rows, which public loaders of the real file meet
PROBLEM_COLUMNS = (
    "src_uid",
    "description",
    "input_spec",
    "output_spec",
    "input_from",
    "output_to",
    "time_limit",
    "memory_limit",
    "sample_inputs",
    "sample_outputs",
    "tags",
)
#: what a null `input_from` / `output_to` means on Codeforces (counted when used)
STANDARD_STREAMS = {"input_from": "standard input", "output_to": "standard output"}


class UnusableProblem(Exception):
    """A problem row whose values cannot make a prompt or a judged problem (blank description,
    sample inputs and outputs of different counts, a field of the wrong type)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


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
    time_limit_s: float | None  # None: null or unreadable in the row (see `has_limits`)
    memory_limit_mb: int | None
    tags: tuple[str, ...]
    difficulty: int | None
    #: fields that were null in the row and were read as their documented default
    defaulted: tuple[str, ...] = ()

    @property
    def has_limits(self) -> bool:
        return self.time_limit_s is not None and self.memory_limit_mb is not None

    @classmethod
    def from_row(cls, row: Mapping[str, Any], path: Path | str, lineno: int) -> Problem:
        """One problem row. A missing column or a bad `src_uid` is a DataError (the file is
        malformed); values public loaders meet in single rows of the real file are read as
        such: null specs are empty, a null `input_from`/`output_to` is the standard stream,
        a null or unreadable limit is None. A row that cannot make a prompt (blank description,
        sample inputs and outputs of different counts, a field of the wrong type) raises
        `UnusableProblem`, which the loaders count per row rather than stop on."""
        for column in PROBLEM_COLUMNS:
            if column not in row:
                raise DataError(path, "missing required column", row=lineno, field=column)
        uid = require_uid(row, "src_uid", path, lineno)
        defaulted: list[str] = []

        def text(name: str, default: str | None = None) -> str:
            value = row.get(name)
            if value is None and default is not None:
                defaulted.append(name)
                return default
            if not isinstance(value, str):
                raise UnusableProblem(name, f"expected text, got {value!r:.40}")
            return value

        def texts(name: str) -> tuple[str, ...]:
            value = row.get(name)
            if value is None:
                return ()
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise UnusableProblem(name, "expected a list of texts")
            return tuple(value)

        description = text("description")
        if not description.strip():
            raise UnusableProblem("description", "blank")
        inputs, outputs = texts("sample_inputs"), texts("sample_outputs")
        if len(inputs) != len(outputs):
            raise UnusableProblem(
                "sample_outputs", f"{len(inputs)} sample inputs but {len(outputs)} sample outputs"
            )
        notes = row.get("notes")
        try:
            difficulty = optional_int(row, "difficulty", path, lineno)
        except DataError:
            difficulty = None  # shown in reports only: never a reason to drop a problem
        return cls(
            src_uid=uid,
            description=description,
            input_spec=text("input_spec", ""),
            output_spec=text("output_spec", ""),
            notes=None if notes is None else text("notes"),
            sample_inputs=inputs,
            sample_outputs=outputs,
            input_from=text("input_from", STANDARD_STREAMS["input_from"]),
            output_to=text("output_to", STANDARD_STREAMS["output_to"]),
            time_limit_s=_limit(parse_time_limit, row.get("time_limit")),
            memory_limit_mb=_limit(parse_memory_limit, row.get("memory_limit")),
            tags=texts("tags"),
            difficulty=difficulty,
            defaulted=tuple(defaulted),
        )

    def sample_tests(self) -> list[dict[str, Any]]:
        return sample_tests(self.sample_inputs, self.sample_outputs)


def _limit(parse: Any, value: Any) -> Any:
    """A limit as `parse` reads it, or None when the row has none it can read."""
    if value is None:
        return None
    try:
        return parse(value)
    except DataError:
        return None


def sample_tests(inputs: Sequence[str], outputs: Sequence[str]) -> list[dict[str, Any]]:
    """Public sample tests in the normalised test form: one accepted output each."""
    return [
        {"input": crlf_to_lf(i), "output": [crlf_to_lf(o)]}
        for i, o in zip(inputs, outputs, strict=True)
    ]


@dataclass
class ProblemSet:
    """The problems of one `problem_descriptions.jsonl` (or synthesis file): usable ones by
    src_uid, unusable ones with their reason, and what null values were read as defaults."""

    path: str
    usable: dict[str, Problem] = field(default_factory=dict)
    unusable: dict[str, str] = field(default_factory=dict)  # src_uid -> "line N: field: why"
    _logged: bool = field(default=False, repr=False)

    def add_row(self, row: Mapping[str, Any], lineno: int, seen: datafiles.IdRegistry) -> None:
        try:
            problem = Problem.from_row(row, self.path, lineno)
        except UnusableProblem as exc:
            uid = require_uid(row, "src_uid", self.path, lineno)
            seen.add(uid, lineno)
            self.unusable[uid] = f"line {lineno}: {exc}"
            return
        seen.add(problem.src_uid, lineno)
        self.usable[problem.src_uid] = problem

    def log(self, needed_by: str) -> None:
        """One warning per file version for the rows not usable and the null values defaulted."""
        if self._logged:
            return
        self._logged = True
        if self.unusable:
            examples = "; ".join(f"{u} ({why})" for u, why in list(self.unusable.items())[:3])
            log.warning(
                "%s: %d problem rows of %s cannot make a prompt and are not used, e.g. %s",
                needed_by,
                len(self.unusable),
                self.path,
                examples,
            )
        defaulted = Counter(f for p in self.usable.values() for f in p.defaulted)
        if defaulted:
            log.warning(
                "%s: null values in %s read as their defaults (empty specs, standard streams): %s",
                needed_by,
                self.path,
                ", ".join(f"{f} {n}" for f, n in sorted(defaulted.items())),
            )


@functools.lru_cache(maxsize=8)
def _problems(path: str, mtime: float) -> ProblemSet:
    out = ProblemSet(path)
    seen = datafiles.IdRegistry(path, "src_uid")
    for lineno, row in datafiles.jsonl_rows(path):
        out.add_row(row, lineno, seen)
    return out


def problem_set(path: Path) -> ProblemSet:
    """A file of problem rows (`problem_descriptions.jsonl`, a program-synthesis file), read
    once per file version (see `ProblemSet`); a src_uid may appear once."""
    return _problems(str(path), path.stat().st_mtime)


def load_problem_set(source: DataSource, needed_by: str) -> ProblemSet:
    """`problem_descriptions.jsonl` of `source` (see `problem_set`), its odd rows logged."""
    problems = problem_set(source.path(PROBLEMS_FILE, needed_by))
    problems.log(needed_by)
    return problems


def load_problems(source: DataSource, needed_by: str) -> dict[str, Problem]:
    """The usable problems of `problem_descriptions.jsonl`, keyed by src_uid."""
    return load_problem_set(source, needed_by).usable


class UnitTests:
    """`unittest_db.json` as read once per file version.

    Each problem's tests are normalised on first use and kept, so all samples and documents of
    a problem share one list (the engine builds its test cases once per list).
    """

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self._tests: dict[tuple[str, bool], list[dict[str, Any]] | None] = {}

    def tests(self, src_uid: str, drop_truncated: bool = False) -> list[dict[str, Any]] | None:
        """`tests_for` one problem, memoised; with `drop_truncated`, without the tests the
        publisher cut short (None when none is left)."""
        key = (src_uid, drop_truncated)
        if key not in self._tests:
            tests = self.tests(src_uid) if drop_truncated else tests_for(self.raw, src_uid)
            if drop_truncated and tests is not None:
                cut = self.cut(src_uid)
                tests = [t for t, c in zip(tests, cut, strict=True) if not c] or None
            self._tests[key] = tests
        return self._tests[key]

    def cut(self, src_uid: str) -> list[bool]:
        """For each hidden test of a problem, whether its publisher cut it (`is_truncated`,
        judged on the file's own text: its line ends count in the cut's length)."""
        if self.tests(src_uid) is None:  # validates the entries first
            return []
        return [is_truncated(entry) for entry in self.raw[src_uid]]

    def truncated(self, src_uids: Iterable[str]) -> tuple[int, int]:
        """(problems, tests) among `src_uids` whose hidden tests include cut ones."""
        problems = tests = 0
        for uid in dict.fromkeys(src_uids):
            cut = sum(self.cut(uid))
            problems += cut > 0
            tests += cut
        return problems, tests


#: Codeforces shows a long test cut after 255 or 511 characters, followed by `...`; the public
#: `unittest_db.json` holds some tests in that form (435 of the 5,579 tests of the 106
#: validation problems, in 11 problems). No program can pass such a test.
CUT_MARK = "..."
CUT_AFTER = 255


def is_truncated(entry: Mapping[str, Any]) -> bool:
    """Whether a test of `unittest_db.json` (as the file holds it) was cut by its publisher:
    its input, or one expected output, ends in `...` right after at least 255 characters (a
    real input ends with its line end, and a short answer may well be dots)."""
    output = entry["output"]
    texts = [entry["input"], *([output] if isinstance(output, str) else output)]
    return any(t.endswith(CUT_MARK) and len(t) - len(CUT_MARK) >= CUT_AFTER for t in texts)


def crlf_to_lf(text: str) -> str:
    """xCodeEval's tests are stored with CRLF line ends (Codeforces' Windows files); ExecEval
    removes the `\r` before any program runs, and so does every protocol of this pack."""
    return text.replace("\r\n", "\n")


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


def problem_tests(
    problem: Problem, unittests: UnitTests | None, drop_truncated: bool = False
) -> list[dict[str, Any]] | None:
    """The tests that judge `problem` (see `unittests_for`); None when it has none."""
    if unittests is None:
        return problem.sample_tests() or None
    return unittests.tests(problem.src_uid, drop_truncated)


def tests_for(
    db: Mapping[str, Any], src_uid: str, where: str = UNITTESTS_FILE
) -> list[dict[str, Any]] | None:
    """Normalised hidden tests of one problem ({input, output: [..]}), None if it has none.

    Extra keys of a test entry are ignored; a string `output` is read as a one-element list;
    CRLF line ends become LF (`crlf_to_lf`).
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
        tests.append({"input": crlf_to_lf(given), "output": [crlf_to_lf(o) for o in outputs]})
    return tests


# --------------------------------------------------------------------------- joins


# Why a row is not scored: the keys of `JoinReport.skipped` and of the protocol's `skipped_rows`.
UNKNOWN_PROBLEM = "unknown_problem"  # its src_uid is absent from problem_descriptions.jsonl
UNUSABLE_PROBLEM = "unusable_problem"  # its problem row cannot make a prompt (`UnusableProblem`)
NO_TESTS = "no_tests"  # its problem has no tests of the kind that judges
NO_LIMITS = "problem_without_limits"  # the problem's own limits are null (the default protocol)
BLANK_PROGRAM = "blank_program"  # the program the row gives (buggy, source, candidate) is blank
NO_CANDIDATES = "no_candidates"  # a retrieval row without a positive or without a negative
SKIP_REASONS: dict[str, str] = {
    UNKNOWN_PROBLEM: f"src_uid absent from {PROBLEMS_FILE}",
    UNUSABLE_PROBLEM: "problem row without a usable description or samples",
    NO_TESTS: "problem without tests",
    NO_LIMITS: "problem without time or memory limit",
    BLANK_PROGRAM: "blank program",
    NO_CANDIDATES: "no positive or no negative candidate",
}


@dataclass
class JoinReport:
    """Rows of one task/split that are not scored, by reason. Logged, never hidden."""

    task: str
    split: str
    total: int = 0
    #: reason (`SKIP_REASONS`) -> ids of the rows skipped for it
    skipped: dict[str, list[str]] = field(default_factory=dict)
    # runtime (as the rows spell it) -> rows in it that cannot run on this machine
    unavailable_runtime: dict[str, int] = field(default_factory=dict)
    runtime_reasons: dict[str, str] = field(default_factory=dict)
    tests: str = "hidden"  # or "sample"
    unit: str = "rows"  # what the counted items are, as messages name them
    counted_in: str = "the protocol's skipped_rows and unscored_rows (results file)"
    files: list[str] = field(default_factory=list)  # the files the rows were read from

    def skip(self, reason: str, row_id: str) -> None:
        self.skipped.setdefault(reason, []).append(row_id)

    @property
    def missing_problem(self) -> list[str]:
        return self.skipped.get(UNKNOWN_PROBLEM, [])

    @property
    def missing_tests(self) -> list[str]:
        return self.skipped.get(NO_TESTS, [])

    @property
    def unavailable_rows(self) -> int:
        return sum(self.unavailable_runtime.values())

    @property
    def unscored(self) -> int:
        """Every row not scored, whatever the reason (join failure or unavailable runtime)."""
        return sum(len(ids) for ids in self.skipped.values()) + self.unavailable_rows

    def counts(self) -> dict[str, int]:
        """Rows skipped per reason, unavailable runtimes included (the protocol's form)."""
        out = {reason: len(ids) for reason, ids in sorted(self.skipped.items())}
        if self.unavailable_rows:
            out["unavailable_runtime"] = self.unavailable_rows
        return out

    def count_unavailable(self, runtime: str, reason: str) -> None:
        self.unavailable_runtime[runtime] = self.unavailable_runtime.get(runtime, 0) + 1
        self.runtime_reasons[runtime] = reason

    def summary(self) -> str:
        text = (
            f"{self.task} ({self.split}): {self.total - self.unscored} of {self.total} "
            f"{self.unit} scored"
        )
        for reason, ids in sorted(self.skipped.items()):
            what = SKIP_REASONS.get(reason, reason)
            if reason == NO_TESTS:
                what = (
                    "no sample tests" if self.tests == "sample" else f"no tests in {UNITTESTS_FILE}"
                )
            examples = ", ".join(sorted(set(ids))[:5])
            text += f"; {len(ids)} not scored, {what} (e.g. {examples})"
        for runtime, n in sorted(self.unavailable_runtime.items()):
            text += f"; {n} not scored, runtime {runtime!r} unavailable here"
        return text

    def no_documents(self) -> str:
        """The one line a task with no document left stops with: rows read, and why each
        group was dropped."""
        where = f" from {', '.join(self.files)}" if self.files else ""
        if not self.total:
            return f"{self.task} ({self.split}): no document: 0 {self.unit} read{where}"
        return f"{self.task}: no document left: {self.summary()}; read{where}"

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
    from code_eval_taskpack.execution.languages.registry import UnknownLanguageError

    try:
        runtime = resolve(name)
    except UnknownLanguageError:
        return "not a runtime the execution engine knows"
    if runtime.available:
        return ""
    return runtime.reason or "toolchain unavailable"


def runtime_known(name: str) -> bool:
    """Whether the engine's registry knows the runtime `name` (installed here or not)."""
    from code_eval_taskpack.execution.languages.registry import UnknownLanguageError

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
    source: DataSource, split: str, needed_by: str, needs_limits: bool = True
) -> tuple[list[ExecRow], JoinReport]:
    """Program-synthesis problems of a split with their tests.

    A local copy without the program_synthesis folder (like the shared 106-problem folders)
    uses every problem of its `problem_descriptions.jsonl`, with a warning.
    """
    relpath = SYNTHESIS_FILES[check_split(split)]
    report = JoinReport(needed_by, split, tests=source.tests_kind)
    if not source.has(relpath):
        problems = load_problem_set(source, needed_by)
        log.warning(
            "%s: %s absent in %s; using every problem of %s",
            needed_by,
            relpath,
            source.describe(),
            problems.path,
        )
    else:
        problems = problem_set(source.path(relpath, needed_by))
        problems.log(needed_by)
    report.files.append(problems.path)
    rows = [{"src_uid": uid} for uid in [*problems.usable, *problems.unusable]]
    return _attach_tests(rows, problems, source, report, needed_by, needs_limits), report


def problem_or_skip(
    uid: str, problems: ProblemSet, report: JoinReport, needs_limits: bool
) -> Problem | None:
    """The usable problem of `uid`, or None with the row counted in `report` by reason."""
    problem = problems.usable.get(uid)
    if problem is None:
        report.skip(UNUSABLE_PROBLEM if uid in problems.unusable else UNKNOWN_PROBLEM, uid)
    elif needs_limits and not problem.has_limits:
        report.skip(NO_LIMITS, uid)
        return None
    return problem


def _attach_tests(
    rows: Iterable[Mapping[str, Any]],
    problems: ProblemSet,
    source: DataSource,
    report: JoinReport,
    needed_by: str,
    needs_limits: bool,
) -> list[ExecRow]:
    """Rows whose problem is usable and has tests; the others are counted in `report`.
    `needs_limits`: the protocol judges with the problem's own limits (the default one)."""
    unittests = unittests_for(source, needed_by)
    out: list[ExecRow] = []
    for row in rows:
        report.total += 1
        uid = str(row["src_uid"])
        problem = problem_or_skip(uid, problems, report, needs_limits)
        if problem is None:
            continue
        if not problem_tests(problem, unittests, source.drop_truncated):
            report.skip(NO_TESTS, uid)
        else:
            out.append(ExecRow(dict(row), problem))
    return out


def truncated_tests(source: DataSource, uids: Iterable[str], needed_by: str) -> dict[str, Any]:
    """How many of the problems `uids` hold hidden tests cut by their publisher, and whether
    this run judges without them (the protocol's `truncated_tests`); {} on sample tests."""
    unittests = unittests_for(source, needed_by)
    if unittests is None:
        return {}
    problems, tests = unittests.truncated(uids)
    if tests and source.describe() not in _TRUNCATION_WARNED:  # once per run and data source
        _TRUNCATION_WARNED.add(source.describe())
        log.warning(
            "%s: %d hidden tests of %d problems in %s were cut short by their publisher (they "
            "end in `...`) and no program can pass those problems; %s",
            needed_by,
            tests,
            problems,
            source.describe(),
            "this run judges WITHOUT them: a different protocol from the paper's"
            if source.drop_truncated
            else f"the paper's protocol keeps them ({xs.DROP_TRUNCATED.key} drops them)",
        )
    return {"problems": problems, "tests": tests, "dropped": source.drop_truncated}


_TRUNCATION_WARNED: set[str] = set()


def cluster_rows(
    source: DataSource,
    task_dir: str,
    split: str,
    clusters: Sequence[str],
    needed_by: str,
    report: JoinReport | None = None,
) -> list[tuple[str, Path, int, dict[str, Any]]]:
    """(cluster, file, line, row) for every row of the given language files of a task.

    A local copy must hold every one of those files (an empty file is a language without rows):
    a missing one fails before any is read, and the error lists all that are missing. The files
    read are listed in `report`.
    """
    relpaths = [cluster_file(task_dir, split, cluster) for cluster in clusters]
    source.require(relpaths, needed_by)
    out = []
    for cluster, relpath in zip(clusters, relpaths, strict=True):
        path = source.path(relpath, needed_by)
        if report is not None:
            report.files.append(relpath)
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
    program_field: str | None = None,
) -> dict[str, Any] | None:
    """A row of a per-language file with its required fields checked (see `datafiles`), or
    None when its program (`program_field`) is whitespace only: such a row (the real APR files
    hold a few) cannot be scored, and the caller counts it as `BLANK_PROGRAM`.

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
    if id_field is not None:
        value = require_uid(row, id_field, path, lineno)
        registry = ids.setdefault(str(path), datafiles.IdRegistry(path, id_field))
        registry.add(value, lineno)
    blank = False
    for name in text_fields:
        if name == program_field:
            blank = not datafiles.required_text(row, name, path, lineno, allow_empty=True).strip()
        else:
            require_text(row, name, path, lineno)
    return None if blank else dict(row)


def check_kind_row(
    kind: kinds.Kind,
    row: Mapping[str, Any],
    cluster: str,
    path: Path | str,
    lineno: int,
    ids: dict[str, datafiles.IdRegistry],
) -> dict[str, Any] | None:
    """`check_cluster_row` with the fields, id and program `kind` declares (`kinds.Kind`)."""
    return check_cluster_row(
        row, cluster, path, lineno, kind.row_fields, kind.row_id, ids, kind.program_field
    )


def row_id(kind: kinds.Kind, row: Mapping[str, Any]) -> str:
    """How a report names a row of `kind`: its own id, else its problem's."""
    return str(row.get(kind.row_id or "src_uid") or row.get("src_uid"))


def joined_exec_rows(
    source: DataSource,
    kind: kinds.Kind,
    split: str,
    clusters: Sequence[str],
    needed_by: str,
    judged_in_own_runtime: bool = False,
    needs_limits: bool = True,
) -> tuple[list[ExecRow], JoinReport]:
    """Rows of a per-language execution task (translation, APR) joined with problem and tests.

    Every row is checked first (`check_kind_row`): a missing id or language, or a program that
    is not text, is an error naming file, line and field, never a default; a blank program is
    counted (`BLANK_PROGRAM`) and not scored.

    With `judged_in_own_runtime` (APR: a fix runs in the buggy program's `lang`), rows whose
    runtime is unavailable on this machine (e.g. Python 2 on Debian 12) are counted per runtime
    in the report and not scored: judging them could only yield engine failures, which would
    turn the whole task's pass@k into NaN. A `--predict_only` run keeps them (the judging
    machine decides) and so does `code-eval judge`, where they become counted INFRA_ERRORs
    (`lm_eval_tasks.predict_only.keep_every_row`).
    """
    report = JoinReport(needed_by, split, tests=source.tests_kind)
    problems = load_problem_set(source, needed_by)
    ids: dict[str, datafiles.IdRegistry] = {}
    rows = []
    for cluster, path, lineno, raw in cluster_rows(
        source, kind.folder, split, clusters, needed_by, report
    ):
        row = check_kind_row(kind, raw, cluster, path, lineno, ids)
        if row is None:
            report.total += 1
            report.skip(BLANK_PROGRAM, row_id(kind, raw))
            continue
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
        rows.append(row)
    return _attach_tests(rows, problems, source, report, needed_by, needs_limits), report
