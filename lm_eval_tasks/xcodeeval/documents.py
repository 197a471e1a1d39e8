"""lm-eval documents for every xCodeEval task, built from the joined raw rows.

A document is a flat dict: the fields the YAML prompt templates use, the gold answer, and for
execution tasks what the judging filter needs to find the tests again (data source, test kind,
limits) without copying hidden tests into logged samples. Rows that could not be joined are
counted by `lm_eval_tasks.xcodeeval.data.JoinReport`; the count travels in `_unscored_rows` (and, for rows
whose own runtime is unavailable here, `_unavailable_runtime_rows`). How the task is scored (data,
split, tests, comparator, limits, backend, those counts) is written into the task's protocol in the
results file (`lm_eval_tasks.protocol`); execution documents carry its key in `_protocol`, so the
judging filter can add the verdict counts and the runtimes that judged.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import datasets

from code_eval_taskpack.execution.languages import cluster_runtime
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
    docs = build_docs(kind.stem, task, clusters, split, source, kwargs)
    fields = task_protocol(task, kind.stem, clusters, split, source, docs, kwargs)
    key = protocol.record(kwargs, task, fields)
    if kind.executed:
        for doc in docs:
            doc["_protocol"] = key
    log.info("%s: %d documents from %s, split %s", task, len(docs), source.describe(), split)
    return {"test": datasets.Dataset.from_list(docs) if docs else _empty()}


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
) -> dict[str, Any]:
    """What the results file records about how the task is scored (see `lm_eval_tasks.protocol`):
    the data, and for execution tasks the tests, the judging settings and the rows not scored."""
    spec = _kind(task, kind)
    out: dict[str, Any] = {
        "benchmark": "xcodeeval",
        "task": task,
        "kind": kind,
        "languages": list(clusters),
        "data": source.describe(),
        "split": split,
        "documents": len(docs),
    }
    if spec in (kinds.TAG, kinds.TAG_DESC):
        out["unscored_rows"] = int(docs[0]["_unscored_rows"]) if docs else 0
    if not spec.executed:
        return out
    settings = ExecSettings.thaw(docs[0]["_exec"]) if docs else settings_from(kwargs)
    return {
        **out,
        "tests": source.tests_kind,
        **settings.protocol(),
        "unscored_rows": int(docs[0]["_unscored_rows"]) if docs else 0,
        "unavailable_runtime_rows": int(docs[0]["_unavailable_runtime_rows"]) if docs else 0,
    }


def _empty() -> datasets.Dataset:
    return datasets.Dataset.from_dict({"src_uid": []})


def build_docs(
    kind: str,
    task: str,
    clusters: Sequence[str],
    split: str,
    source: xd.DataSource,
    settings: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """The documents of one task of kind `kind` (a stem of `kinds.KINDS`)."""
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


def _synth_docs(
    task: str, cluster: str, split: str, source: xd.DataSource, settings: Mapping[str, Any]
) -> list[dict[str, Any]]:
    rows, report = xd.synthesis_rows(source, split, task)
    common = _exec_fields(task, split, source, settings, report)
    return [
        {
            **_problem_fields(r.problem),
            "lang_cluster": cluster,
            "judge_lang": cluster_runtime(cluster).name,
            **common,
        }
        for r in rows
    ]


def interleave(groups: Iterable[Sequence[Any]]) -> list[Any]:
    """Round-robin over groups, so `--limit N` sees every language rather than the first one."""
    out: list[Any] = []
    for items in itertools.zip_longest(*groups):
        out.extend(x for x in items if x is not None)
    return out


def _translate_docs(
    task: str, target: str, split: str, source: xd.DataSource, settings: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Programs of every other language, each to be translated into `target`."""
    sources = [c for c in xd.CLUSTERS if c != target]
    rows, report = xd.joined_exec_rows(source, kinds.TRANSLATE.folder, split, sources, task)
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
    return interleave(by_cluster.values())


def _apr_docs(
    task: str, cluster: str, split: str, source: xd.DataSource, settings: Mapping[str, Any]
) -> list[dict[str, Any]]:
    # the fix runs in the buggy program's own runtime: rows whose runtime this machine lacks
    # are counted (unavailable_runtime_rows) and not scored
    rows, report = xd.joined_exec_rows(
        source, kinds.APR.folder, split, [cluster], task, judged_in_own_runtime=True
    )
    common = _exec_fields(task, split, source, settings, report)
    docs = []
    for r in rows:
        # fields checked by xd.joined_exec_rows: present, text, not empty
        lang = r.row["lang"]
        docs.append(
            {
                **_problem_fields(r.problem),
                "apr_id": r.row["apr_id"],
                "lang": lang,
                "bug_source_code": r.row["bug_source_code"],
                "bug_exec_outcome": r.row["bug_exec_outcome"],
                "lang_cluster": cluster,
                # the fix is judged with the buggy program's own runtime (e.g. GNU C++14)
                "judge_lang": lang,
                **common,
            }
        )
    return docs


# --------------------------------------------------------------------------- understanding tasks


def tag_vocabulary(source: xd.DataSource, needed_by: str) -> list[str]:
    """The tag vocabulary: every tag used in `problem_descriptions.jsonl`, sorted."""
    problems = xd.load_problems(source, needed_by)
    return sorted({t for p in problems.values() for t in p.tags})


def _tag_docs(
    task: str, kind: kinds.Kind, clusters: Sequence[str], split: str, source: xd.DataSource
) -> list[dict[str, Any]]:
    with_problem = kind is kinds.TAG_DESC
    vocab = tag_vocabulary(source, task)
    problems = xd.load_problems(source, task) if with_problem else {}
    report = xd.JoinReport(task, split)
    by_cluster: dict[str, list[dict[str, Any]]] = {c: [] for c in clusters}
    extra: set[str] = set()
    ids: dict[str, datafiles.IdRegistry] = {}
    for cluster, path, lineno, raw in xd.cluster_rows(source, kind.folder, split, clusters, task):
        row = xd.check_kind_row(kind, raw, cluster, path, lineno, ids)
        gold = datafiles.text_list(row, "tags", path, lineno)  # may be empty: no tag
        uid = row["src_uid"]
        report.total += 1
        doc: dict[str, Any] = {
            "src_uid": uid,
            "lang": row["lang"],
            "lang_cluster": cluster,
            "source_code": row["source_code"],
            "gold_tags": gold,
            "vocabulary": vocab,
            "_unscored_rows": 0,
        }
        extra.update(t for t in doc["gold_tags"] if t not in vocab)
        if with_problem:
            problem = problems.get(uid)
            if problem is None:
                report.missing_problem.append(uid)
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
    out = interleave(by_cluster.values())
    for d in out:
        d["_unscored_rows"] = report.unscored
    return out


def _compile_docs(
    task: str, clusters: Sequence[str], split: str, source: xd.DataSource
) -> list[dict[str, Any]]:
    by_cluster: dict[str, list[dict[str, Any]]] = {c: [] for c in clusters}
    ids: dict[str, datafiles.IdRegistry] = {}
    kind = kinds.COMPILE
    for cluster, path, lineno, raw in xd.cluster_rows(source, kind.folder, split, clusters, task):
        row = xd.check_kind_row(kind, raw, cluster, path, lineno, ids)
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
    return interleave(by_cluster.values())


def _as_programs(value: Any, path: Any, lineno: int, name: str) -> list[str]:
    """One program or a list of them; none may be blank, and the list may not be empty."""
    programs = [value] if isinstance(value, str) else value
    if not isinstance(programs, list) or not all(isinstance(v, str) for v in programs):
        raise DataError(path, "expected a program or a list of programs", row=lineno, field=name)
    if not programs:
        raise DataError(path, "no program", row=lineno, field=name)
    if any(not p.strip() for p in programs):
        raise DataError(path, "empty program", row=lineno, field=name)
    return list(programs)


def _retrieval_docs(
    task: str, kind: kinds.Kind, clusters: Sequence[str], split: str, source: xd.DataSource
) -> list[dict[str, Any]]:
    query_field = "nl" if kind is kinds.RETRIEVAL_NL_CODE else "source_code"
    by_cluster: dict[str, list[dict[str, Any]]] = {c: [] for c in clusters}
    for cluster, path, lineno, row in xd.cluster_rows(source, kind.folder, split, clusters, task):
        positives = _as_programs(
            xd.require_field(row, "positive_code", path, lineno), path, lineno, "positive_code"
        )
        # without negatives the positive is always ranked first: a free point, so an error
        negatives = _as_programs(
            xd.require_field(row, "negative_code", path, lineno), path, lineno, "negative_code"
        )
        by_cluster[cluster].append(
            {
                "src_uid": xd.require_uid(row, "src_uid", path, lineno),
                "lang_cluster": cluster,
                "query": xd.require_text(row, query_field, path, lineno),
                "candidates": positives + negatives,
                "n_positive": len(positives),
            }
        )
    return interleave(by_cluster.values())
