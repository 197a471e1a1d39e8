"""xCodeEval's task kinds and sampling protocols, declared once.

Every module that needs to know what kinds exist, what their tasks are called, where their rows
live on the Hub, which are scored by running programs, or how the execution kinds are sampled
reads this table: the document builder (`documents`), the raw-file readers (`data`), the YAML
generator (`_generate_configs`) and the report (`lm_eval_tasks.reporting.benchmarks`).
"""

from __future__ import annotations

from dataclasses import dataclass

from lm_eval_tasks.xcodeeval.metrics import ks_for

BENCHMARK = "xcodeeval"  # first part of every task name

# How a kind's tasks are built and scored.
EXECUTION = "execution"  # programs judged by running them; sampled; one group of per-language tasks
LABEL = "label"  # one label per program; one pooled task plus one task per language
RETRIEVAL = "retrieval"  # rank candidate programs; one pooled task


@dataclass(frozen=True)
class Kind:
    """One xCodeEval task kind."""

    stem: str  # `xce_kind` of its tasks and their names' stem: xcodeeval_<stem>[_...]
    title: str  # in prose and in the report's protocol column
    folder: str  # the Hub repository's folder holding its rows
    family: str  # EXECUTION, LABEL or RETRIEVAL
    yaml_folder: str  # subfolder of its generated task and group files
    per_language_files: bool = True  # rows in one file per language cluster (`data.cluster_file`)
    row_fields: tuple[str, ...] = ()  # text fields every row needs, beyond src_uid/lang/cluster
    row_id: str | None = None  # the id each row has, unique in its file
    program_field: str | None = None  # the row's program: a blank one is counted, not scored
    default_split: str | None = None  # None: the `xcodeeval_split` setting's own default

    @property
    def executed(self) -> bool:
        """Scored by judging the generated programs (pass@k), not by comparing answers."""
        return self.family == EXECUTION

    def task(self, *parts: str) -> str:
        """A task or group name of this kind: `task("greedy", "cpp")` is xcodeeval_<stem>_greedy_cpp
        (empty parts are left out)."""
        return "_".join(filter(None, (BENCHMARK, self.stem, *parts)))


SYNTH = Kind(
    "synth", "program synthesis", "program_synthesis", EXECUTION, "synth", per_language_files=False
)
TRANSLATE = Kind(
    "translate",
    "code translation",
    "code_translation",
    EXECUTION,
    "translate",
    row_fields=("source_code",),
    row_id="code_uid",
    program_field="source_code",
)
APR = Kind(
    "apr",
    "program repair",
    "apr",
    EXECUTION,
    "apr",
    row_fields=("bug_source_code", "bug_exec_outcome", "apr_id"),
    # `apr_id` names the problem and repeats (one problem, several buggy programs, each its
    # own document); `bug_code_uid` names the buggy program and is unique
    row_id="bug_code_uid",
    program_field="bug_source_code",
)
TAG = Kind(
    "tag",
    "tag classification",
    "tag_classification",
    LABEL,
    "tag",
    row_fields=("source_code",),
    row_id="code_uid",
    program_field="source_code",
)
TAG_DESC = Kind(
    "tag_desc",
    "tag classification with the problem statement",
    "tag_classification",
    LABEL,
    "tag_desc",
    row_fields=("source_code",),
    row_id="code_uid",
    program_field="source_code",
)
COMPILE = Kind(
    "compile",
    "code compilation",
    "code_compilation",
    LABEL,
    "compile",
    row_fields=("source_code",),
    row_id="code_uid",
    program_field="source_code",
)
# Retrieval defaults to validation: the public test files lack positive/negative programs.
RETRIEVAL_NL_CODE = Kind(
    "retrieval_nl_code",
    "nl-code retrieval",
    "retrieval_nl_code",
    RETRIEVAL,
    "retrieval",
    default_split="validation",
)
RETRIEVAL_CODE_CODE = Kind(
    "retrieval_code_code",
    "code-code retrieval",
    "retrieval_code_code",
    RETRIEVAL,
    "retrieval",
    default_split="validation",
)

KINDS: tuple[Kind, ...] = (
    SYNTH,
    TRANSLATE,
    APR,
    TAG,
    TAG_DESC,
    COMPILE,
    RETRIEVAL_NL_CODE,
    RETRIEVAL_CODE_CODE,
)
BY_STEM: dict[str, Kind] = {k.stem: k for k in KINDS}


def of_family(family: str) -> tuple[Kind, ...]:
    """The kinds of one family, in table order."""
    return tuple(k for k in KINDS if k.family == family)


#: the Hub folders whose rows come in one file per language cluster
LANGUAGE_FILE_FOLDERS: tuple[str, ...] = tuple(
    dict.fromkeys(k.folder for k in KINDS if k.per_language_files)
)


# --------------------------------------------------------------------------- sampling

# The xCodeEval paper's sampling protocol for the execution kinds.
PAPER_SAMPLES = 20
PAPER_TEMPERATURE = 0.3157894736842105


@dataclass(frozen=True)
class Sampling:
    """How many programs are sampled per problem, and how."""

    name: str  # task-name suffix ("" for the paper's protocol) and template name
    repeats: int
    greedy: bool
    temperature: float
    headline_k: int  # the pass@k a leaderboard shows (the paper's headline is pass@5)

    @property
    def ks(self) -> list[int]:
        return ks_for(self.repeats)

    @property
    def template(self) -> str:
        return f"_{self.name or 'paper'}_sampling_yaml"

    def describe(self) -> str:
        """The protocol in words, as the report states it."""
        if self.greedy:
            return f"{self.repeats} greedy sample"
        return f"n={self.repeats} samples at T={self.temperature:.3f}"


PAPER = Sampling("", PAPER_SAMPLES, greedy=False, temperature=PAPER_TEMPERATURE, headline_k=5)
GREEDY = Sampling("greedy", 1, greedy=True, temperature=0.0, headline_k=1)
SAMPLINGS: tuple[Sampling, ...] = (PAPER, GREEDY)
