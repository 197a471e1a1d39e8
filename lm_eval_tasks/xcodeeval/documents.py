"""lm-eval documents for every xCodeEval task, built from the joined raw rows.

A document is a flat dict: the fields the YAML prompt templates use, the gold answer, and for
execution tasks what the judging filter needs to find the tests again (data source, test kind,
limits) without copying hidden tests into logged samples. Rows that could not be joined are
counted by `lm_eval_tasks.xcodeeval.data.JoinReport`; the count travels in `_unscored_rows` (and, for rows
whose own runtime is unavailable here, `_unavailable_runtime_rows`). How the task is scored (data,
split, tests, comparator, limits, backend, those counts) is written into the task's protocol in the
results file (`lm_eval_tasks.protocol`), where the judging filter adds the verdict counts and the
runtimes that judged.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import datasets

from code_eval_taskpack.execution.languages.registry import cluster_runtime
from code_eval_taskpack.utils import datafiles
from code_eval_taskpack.utils.errors import DataError
from code_eval_taskpack.utils.settings import parse_settings
from lm_eval_tasks import protocol
from lm_eval_tasks.xcodeeval import data as xd
from lm_eval_tasks.xcodeeval import kinds
from lm_eval_tasks.xcodeeval import settings as xs
from lm_eval_tasks.xcodeeval.judging import ExecSettings, settings_from

log = logging.getLogger("xcodeeval")


def build_dataset(**kwargs: Any) -> dict[str, datasets.Dataset]:
    """lm-eval `custom_dataset` hook: {"test": documents of the chosen split}.

    Task identity comes from the task's `dataset_kwargs` (`xce_task`, `xce_kind`, `xce_cluster`);
    the user's choices from `--metadata` / model_args / environment, as declared in
    `lm_eval_tasks.xcodeeval.settings`.
    """
    protocol.check_settings(kwargs)
    task = str(kwargs["xce_task"])
    kind = _kind(task, str(kwargs["xce_kind"]))
    cluster = kwargs.get("xce_cluster") or None
    clusters = [cluster] if cluster else list(xd.CLUSTERS)
    defaults = {xs.SPLIT.key: kind.default_split} if kind.default_split else None
    try:
        split = parse_settings((xs.SPLIT,), kwargs, defaults)[xs.SPLIT.key]
    except ValueError as exc:  # the same hint as every other split check
        raise ValueError(f"{exc} (the retrieval tasks' 'dev' files are 'validation')") from None
    source = xd.source_from_settings(kwargs)
    docs, report = build_docs(kind.stem, task, clusters, split, source, kwargs)
    if not docs:
        # lm-eval cannot run a task without documents (it fails on an index much later)
        raise DataError(source.describe(), " ".join(report.no_documents().split()))
    fields = task_protocol(task, kind.stem, clusters, split, source, docs, kwargs, report)
    protocol.record(protocol.task_metadata(kwargs), task, fields)
    log.info("%s: %d documents from %s, split %s", task, len(docs), source.describe(), split)
    return {"test": datasets.Dataset.from_list(docs)}


def _kind(task: str, stem: str) -> kinds.Kind:
    """The kind a task's `xce_kind` names (`kinds.KINDS`)."""
    if stem not in kinds.BY_STEM:
        raise ValueError(f"{task}: unknown xCodeEval task kind {stem!r}")
    return kinds.BY_STEM[stem]


def task_protocol(
    task: str,
    kind: str,
    clusters: Sequence[str],
    split: str,
    source: xd.DataSource,
    docs: Sequence[Mapping[str, Any]],
    kwargs: Mapping[str, Any],
    report: xd.JoinReport,
) -> dict[str, Any]:
    """What the results file records about how the task is scored (see `lm_eval_tasks.protocol`):
    the data, the rows read and those skipped by reason, and for execution tasks the tests
    (with the hidden tests cut by their publisher) and the judging settings."""
    spec = _kind(task, kind)
    out: dict[str, Any] = {
        "benchmark": "xcodeeval",
        "task": task,
        "kind": kind,
        "languages": list(clusters),
        "data": source.describe(),
        "split": split,
        "documents": len(docs),
        "rows_read": report.total,
        "skipped_rows": report.counts(),
        "unscored_rows": report.unscored,
    }
    if not spec.executed:
        return out
    settings = ExecSettings.thaw(docs[0]["_exec"]) if docs else settings_from(kwargs)
    truncated = xd.truncated_tests(source, (str(d["src_uid"]) for d in docs), task)
    return {
        **out,
        "tests": source.tests_kind,
        **({"truncated_tests": truncated} if truncated else {}),
        **settings.protocol(),
        "unavailable_runtime_rows": report.unavailable_rows,
    }


def build_docs(
    kind: str,
    task: str,
    clusters: Sequence[str],
    split: str,
    source: xd.DataSource,
    settings: Mapping[str, Any],
) -> tuple[list[dict[str, Any]], xd.JoinReport]:
    """The documents of one task of kind `kind` (a stem of `kinds.KINDS`), and the report of
    the rows read and skipped."""
    spec = _kind(task, kind)
    if spec is kinds.SYNTH:
        return _synth_docs(task, clusters[0], split, source, settings)
    if spec is kinds.TRANSLATE:
        return _translate_docs(task, clusters[0], split, source, settings)
    if spec is kinds.APR:
        return _apr_docs(task, clusters[0], split, source, settings)
    if spec in (kinds.TAG, kinds.TAG_DESC):
        return _tag_docs(task, spec, clusters, split, source)
    if spec is kinds.COMPILE:
        return _compile_docs(task, clusters, split, source)
    return _retrieval_docs(task, spec, clusters, split, source)


# --------------------------------------------------------------------------- execution tasks


def _problem_fields(problem: xd.Problem) -> dict[str, Any]:
    return {
        "src_uid": problem.src_uid,
        "description": problem.description,
        "input_spec": problem.input_spec,
        "output_spec": problem.output_spec,
        "notes": problem.notes,
        "samples": [
            {"input": i, "output": o}
            for i, o in zip(problem.sample_inputs, problem.sample_outputs, strict=True)
        ],
        "input_from": problem.input_from,
        "output_to": problem.output_to,
        "time_limit_s": problem.time_limit_s,
        "memory_limit_mb": problem.memory_limit_mb,
    }


def _exec_fields(
    task: str, split: str, source: xd.DataSource, settings: Mapping[str, Any], report: xd.JoinReport
) -> dict[str, Any]:
    report.log()
    if report.total and report.total == report.unscored:
        # lm-eval cannot run a task without documents; say why instead of failing obscurely
        hint = (
            " Install the missing toolchain(s) (`code-exec doctor` lists them) or "
            "leave this task out."
            if report.unavailable_rows
            else ""
        )
        raise DataError(source.describe(), f"no row can be scored: {report.summary()}.{hint}")
    if source.sample_tests:
        log.warning("%s: %s", task, xd.SAMPLE_TESTS_WARNING)
    return {
        "_task": task,
        "_split": split,
        "_data": source.ref(),
        "_tests": source.tests_kind,
        "_exec": settings_from(settings).freeze(),
        "_unscored_rows": report.unscored,
        "_unavailable_runtime_rows": report.unavailable_rows,
    }


def _needs_limits(settings: Mapping[str, Any]) -> bool:
    """Whether the protocol judges with the problem's own limits (not ExecEval's fixed ones)."""
    return not settings_from(settings).execeval_compat


def _synth_docs(
    task: str, cluster: str, split: str, source: xd.DataSource, settings: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], xd.JoinReport]:
    rows, report = xd.synthesis_rows(source, split, task, _needs_limits(settings))
    common = _exec_fields(task, split, source, settings, report)
    docs = [
        {
            **_problem_fields(r.problem),
            "lang_cluster": cluster,
            "judge_lang": cluster_runtime(cluster).name,
            **common,
        }
        for r in rows
    ]
    return docs, report


def interleave(groups: Iterable[Sequence[Any]]) -> list[Any]:
    """Round-robin over groups, so `--limit N` sees every language rather than the first one."""
    out: list[Any] = []
    for items in itertools.zip_longest(*groups):
        out.extend(x for x in items if x is not None)
    return out


def _translate_docs(
    task: str, target: str, split: str, source: xd.DataSource, settings: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], xd.JoinReport]:
    """Programs of every other language, each to be translated into `target`."""
    sources = [c for c in xd.CLUSTERS if c != target]
    rows, report = xd.joined_exec_rows(
        source, kinds.TRANSLATE, split, sources, task, needs_limits=_needs_limits(settings)
    )
    common = _exec_fields(task, split, source, settings, report)
    by_cluster: dict[str, list[dict[str, Any]]] = {c: [] for c in sources}
    for r in rows:
        # fields checked by xd.joined_exec_rows (lang_cluster is the file's own cluster)
        src_cluster = r.row["lang_cluster"]
        by_cluster[src_cluster].append(
            {
                **_problem_fields(r.problem),
                "source_lang_cluster": src_cluster,
                "source_lang": r.row["lang"],
                "source_code": r.row["source_code"],
                "code_uid": r.row["code_uid"],
                "lang_cluster": target,
                "judge_lang": cluster_runtime(target).name,
                **common,
            }
        )
    return interleave(by_cluster.values()), report


def _apr_docs(
    task: str, cluster: str, split: str, source: xd.DataSource, settings: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], xd.JoinReport]:
    # the fix runs in the buggy program's own runtime: rows whose runtime this machine lacks
    # are counted (unavailable_runtime_rows) and not scored
    rows, report = xd.joined_exec_rows(
        source,
        kinds.APR,
        split,
        [cluster],
        task,
        judged_in_own_runtime=True,
        needs_limits=_needs_limits(settings),
    )
    common = _exec_fields(task, split, source, settings, report)
    docs = []
    for r in rows:
        # fields checked by xd.joined_exec_rows: present and text, the program not blank
        lang = r.row["lang"]
        docs.append(
            {
                **_problem_fields(r.problem),
                "apr_id": r.row["apr_id"],  # the problem: several buggy programs may share it
                "bug_code_uid": r.row["bug_code_uid"],
                "lang": lang,
                "bug_source_code": r.row["bug_source_code"],
                "bug_exec_outcome": r.row["bug_exec_outcome"],
                "lang_cluster": cluster,
                # the fix is judged with the buggy program's own runtime (e.g. GNU C++14)
                "judge_lang": lang,
                **common,
            }
        )
    return docs, report


# --------------------------------------------------------------------------- understanding tasks


def tag_vocabulary(source: xd.DataSource, needed_by: str) -> list[str]:
    """The tag vocabulary: every tag used in `problem_descriptions.jsonl`, sorted."""
    problems = xd.load_problems(source, needed_by)
    return sorted({t for p in problems.values() for t in p.tags})


def _tag_docs(
    task: str, kind: kinds.Kind, clusters: Sequence[str], split: str, source: xd.DataSource
) -> tuple[list[dict[str, Any]], xd.JoinReport]:
    with_problem = kind is kinds.TAG_DESC
    vocab = tag_vocabulary(source, task)
    problems = xd.load_problem_set(source, task) if with_problem else None
    report = xd.JoinReport(task, split)
    by_cluster: dict[str, list[dict[str, Any]]] = {c: [] for c in clusters}
    extra: set[str] = set()
    ids: dict[str, datafiles.IdRegistry] = {}
    for cluster, path, lineno, raw in xd.cluster_rows(
        source, kind.folder, split, clusters, task, report
    ):
        report.total += 1
        row = xd.check_kind_row(kind, raw, cluster, path, lineno, ids)
        if row is None:
            report.skip(xd.BLANK_PROGRAM, xd.row_id(kind, raw))
            continue
        gold = datafiles.text_list(row, "tags", path, lineno)  # may be empty: no tag
        uid = row["src_uid"]
        doc: dict[str, Any] = {
            "src_uid": uid,
            "lang": row["lang"],
            "lang_cluster": cluster,
            "source_code": row["source_code"],
            "gold_tags": gold,
            "vocabulary": vocab,
        }
        extra.update(t for t in doc["gold_tags"] if t not in vocab)
        if problems is not None:
            problem = xd.problem_or_skip(uid, problems, report, needs_limits=False)
            if problem is None:
                continue
            doc["description"] = problem.description
            doc["input_spec"] = problem.input_spec
            doc["output_spec"] = problem.output_spec
        by_cluster[cluster].append(doc)
    if extra:
        log.warning(
            "%s: gold tags missing from the vocabulary of %s: %s",
            task,
            xd.PROBLEMS_FILE,
            sorted(extra),
        )
        vocab = sorted(set(vocab) | extra)
        for docs in by_cluster.values():
            for d in docs:
                d["vocabulary"] = vocab
    report.log()
    log.info("%s: tag vocabulary of %d tags from %s", task, len(vocab), xd.PROBLEMS_FILE)
    return interleave(by_cluster.values()), report


def _compile_docs(
    task: str, clusters: Sequence[str], split: str, source: xd.DataSource
) -> tuple[list[dict[str, Any]], xd.JoinReport]:
    by_cluster: dict[str, list[dict[str, Any]]] = {c: [] for c in clusters}
    ids: dict[str, datafiles.IdRegistry] = {}
    kind = kinds.COMPILE
    report = xd.JoinReport(task, split)
    for cluster, path, lineno, raw in xd.cluster_rows(
        source, kind.folder, split, clusters, task, report
    ):
        report.total += 1
        row = xd.check_kind_row(kind, raw, cluster, path, lineno, ids)
        if row is None:
            report.skip(xd.BLANK_PROGRAM, xd.row_id(kind, raw))
            continue
        flag = xd.require_field(row, "compilation_error", path, lineno)
        if not isinstance(flag, bool):
            raise DataError(
                path, f"expected true/false, got {flag!r}", row=lineno, field="compilation_error"
            )
        by_cluster[cluster].append(
            {
                "src_uid": row["src_uid"],
                "lang": row["lang"],
                "lang_cluster": cluster,
                "source_code": row["source_code"],
                "gold": "error" if flag else "compiles",
            }
        )
    report.log()
    return interleave(by_cluster.values()), report


def _as_programs(value: Any, path: Any, lineno: int, name: str) -> list[str]:
    """The candidate programs of a retrieval row: a list of `{"source_code": ...}` objects (the
    Hub's files) or of plain strings, or one string. Anything else is an error naming the row;
    an empty list or a blank program is returned as such, for the caller to count."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise DataError(path, "expected a list of candidate programs", row=lineno, field=name)
    programs = []
    for i, item in enumerate(items):
        code = item.get("source_code") if isinstance(item, dict) else item
        if not isinstance(code, str):
            raise DataError(
                path,
                f"candidate {i}: expected a program or an object with its 'source_code'",
                row=lineno,
                field=name,
            )
        programs.append(code)
    return programs


#: the parts of an nl-code query object, in the order the query text gives them
NL_QUERY_PARTS = (("description", ""), ("input_spec", "Input: "), ("output_spec", "Output: "))


def nl_query(value: Any, path: Any, lineno: int) -> str:
    """The text of an nl-code query: the Hub's `nl` object (the problem's description, input
    and output specifications, each given when not blank) or a plain string."""
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise DataError(path, "expected an object or a text", row=lineno, field="nl")
    parts = []
    for key, label in NL_QUERY_PARTS:
        text = value.get(key)
        if text is not None and not isinstance(text, str):
            raise DataError(path, f"{key!r} must be text", row=lineno, field="nl")
        if text and text.strip():
            parts.append(label + text.strip())
    return "\n".join(parts)


def _retrieval_docs(
    task: str, kind: kinds.Kind, clusters: Sequence[str], split: str, source: xd.DataSource
) -> tuple[list[dict[str, Any]], xd.JoinReport]:
    nl = kind is kinds.RETRIEVAL_NL_CODE
    by_cluster: dict[str, list[dict[str, Any]]] = {c: [] for c in clusters}
    report = xd.JoinReport(task, split)
    for cluster, path, lineno, row in xd.cluster_rows(
        source, kind.folder, split, clusters, task, report
    ):
        report.total += 1
        uid = xd.require_uid(row, "src_uid", path, lineno)
        positives = _as_programs(
            xd.require_field(row, "positive_code", path, lineno), path, lineno, "positive_code"
        )
        negatives = _as_programs(
            xd.require_field(row, "negative_code", path, lineno), path, lineno, "negative_code"
        )
        if nl:
            query = nl_query(xd.require_field(row, "nl", path, lineno), path, lineno)
        else:
            query = datafiles.required_text(row, "source_code", path, lineno, allow_empty=True)
        if not positives or not negatives:
            # without negatives the positive is always ranked first: a free point
            report.skip(xd.NO_CANDIDATES, uid)
        elif nl and not query.strip():
            report.skip(xd.UNUSABLE_PROBLEM, uid)
        elif any(not c.strip() for c in [*positives, *negatives, *([] if nl else [query])]):
            report.skip(xd.BLANK_PROGRAM, uid)
        else:
            by_cluster[cluster].append(
                {
                    "src_uid": uid,
                    "lang_cluster": cluster,
                    "query": query,
                    "candidates": positives + negatives,
                    "n_positive": len(positives),
                }
            )
    report.log()
    return interleave(by_cluster.values()), report
