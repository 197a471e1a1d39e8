"""The functions xCodeEval's YAML files wire into lm-eval (re-exported by `utils.py` beside them).

Execution tasks judge in a filter, because lm-eval hands a filter every response of the task at
once: all candidates of all documents become ONE engine batch. The filter's output per document is
the list of per-sample verdict records, each a JSON string (lm-eval's sample logger turns anything
else into a Python repr), which `--log_samples` writes as `filtered_resps`; `process_exec` then
turns them into pass@k, the only metrics of the printed table. The filter adds the batch's
verdict counts (INFRA_ERROR included) and the runtimes that judged it to the task's protocol in
the results file (`lm_eval_tasks.protocol`).
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from code_eval_taskpack.utils.code_extraction import extract_code
from code_eval_taskpack.utils.judging import CaseBuilder, Program
from code_eval_taskpack.utils.metrics import (
    INFRA_ERROR,
    binary_scores,
    multilabel_macro_f1,
    passk_from_verdicts,
    rank_of_positive,
)
from code_eval_taskpack.utils.settings import regroup
from lm_eval_tasks import protocol
from lm_eval_tasks.predict_only import generation_only
from lm_eval_tasks.xcodeeval import data as xd
from lm_eval_tasks.xcodeeval.judging import ExecSettings, judge
from lm_eval_tasks.xcodeeval.metrics import ks_for
from lm_eval_tasks.xcodeeval.parsing import parse_compile_answer, parse_tags

log = logging.getLogger("xcodeeval")

COMPILE_CLASSES = ("compiles", "error")


def doc_tests(doc: dict[str, Any], unittests: xd.UnitTests | None) -> list[dict[str, Any]]:
    """The tests that judge a document's programs: the problem's samples (kept in the document)
    or its hidden tests from `unittests` (`xd.unittests_for` the document's data source)."""
    if doc["_tests"] == "sample":
        samples = doc["samples"]
        return xd.sample_tests([s["input"] for s in samples], [s["output"] for s in samples])
    drop = doc["_tests"] == xd.HIDDEN_WITHOUT_TRUNCATED
    tests = None if unittests is None else unittests.tests(doc["src_uid"], drop)
    if not tests:  # documents are built only for problems with tests
        raise RuntimeError(f"{doc['_task']}: no unit tests for src_uid {doc['src_uid']}")
    return tests


def judge_filter(resps: Sequence[Sequence[str]], docs: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Extract code from every response and judge all of them in one engine batch. A
    `--predict_only` run judges nothing: it keeps the extracted code, for `code-eval judge`
    to judge elsewhere (`lm_eval_tasks.predict_only`)."""
    docs = list(docs)
    if not docs:
        return []
    if generation_only():
        return [
            [extract_code(str(c), doc["lang_cluster"]) for c in candidates]
            for doc, candidates in zip(docs, resps, strict=True)
        ]
    tasks = {d["_task"] for d in docs}
    groups = regroup(docs, "_exec", ExecSettings.thaw)
    sources = {d["_data"] for d in docs}
    if len(tasks) != 1 or len(groups) != 1 or len(sources) != 1:
        raise RuntimeError(
            f"one judging batch must hold one task, one setting and one data source, "
            f"got {sorted(tasks)}"
        )
    task = docs[0]["_task"]
    if docs[0]["_tests"] == "sample":
        log.warning("%s: %s", task, xd.SAMPLE_TESTS_WARNING)
    unittests = xd.unittests_for(xd.DataSource.from_ref(docs[0]["_data"]), task)
    settings = groups[0][0]
    cases = CaseBuilder()
    programs: list[Program] = []
    codes: list[list[str]] = []
    for doc, candidates in zip(docs, resps, strict=True):
        tests = cases(doc_tests(doc, unittests))
        doc_codes = [extract_code(str(c), doc["lang_cluster"]) for c in candidates]
        codes.append(doc_codes)
        programs.extend(
            settings.program(
                language=doc["judge_lang"],
                source_code=code,
                tests=tests,
                time_limit_s=doc["time_limit_s"],
                memory_limit_mb=doc["memory_limit_mb"],
                key=f"{doc['src_uid']}#{j}",
            )
            for j, code in enumerate(doc_codes)
        )
    records = judge(programs, settings, task)
    protocol.update(protocol.task_metadata({}), judged_protocol(records))
    out: list[list[str]] = []
    it = iter(records)
    for doc, doc_codes in zip(docs, codes, strict=True):
        out.append(
            [
                json.dumps(
                    {
                        **next(it),
                        "tests": doc["_tests"],
                        "language": doc["judge_lang"],
                        "code": code,
                    }
                )
                for code in doc_codes
            ]
        )
    return out


#: protocol field -> the judged record's runtime key it reports (`utils.judging.RUNTIME_FIELDS`)
RUNTIME_PROTOCOL = {
    "version": "version",
    "time_factor": "time_factor",
    "memory_headroom_mb": "as_headroom_mb",
}


def judged_protocol(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What one judging batch adds to its task's protocol: verdict counts and, per runtime that
    judged, its version, time factor and memory headroom, as each record's judging registry
    reported them (a remote server's or Ray node's, not this machine's). A field on which the
    programs of one runtime disagree (registries with different factors judged them) is the
    sorted list of every value seen, never one of them picked."""
    seen: dict[str, dict[str, list[Any]]] = {}
    for r in records:
        runtime = r.get("runtime", {})
        if runtime.get("name"):
            fields = seen.setdefault(runtime["name"], {f: [] for f in RUNTIME_PROTOCOL})
            for field, key in RUNTIME_PROTOCOL.items():
                if runtime.get(key) not in fields[field]:
                    fields[field].append(runtime.get(key))
    runtimes = {
        name: {f: _one_or_all(values) for f, values in fields.items()}
        for name, fields in sorted(seen.items())
    }
    places = {json.dumps(r.get("judged_by", {}), sort_keys=True) for r in records}
    return {
        "programs_judged": len(records),
        "infra_errors": sum(r["verdict"] == INFRA_ERROR for r in records),
        "verdicts": dict(Counter(r["verdict"] for r in records).most_common()),
        "runtimes": runtimes,
        "judged_by": [json.loads(p) for p in sorted(places)],
    }


def _one_or_all(values: list[Any]) -> Any:
    """The value every record agrees on, or all of them, sorted (numbers by value; None, which a
    result that did not report the field gives, last)."""
    if len(values) == 1:
        return values[0]
    return sorted(
        values,
        key=lambda v: (
            v is None,
            isinstance(v, str),
            0 if isinstance(v, str) or v is None else v,
            str(v),
        ),
    )


def verdict_records(filtered: Sequence[Any]) -> list[dict[str, Any]]:
    """The judging filter's per-sample records of one document, parsed."""
    return [json.loads(r) if isinstance(r, str) else dict(r) for r in filtered]


def process_exec(doc: dict[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """pass@k (k <= samples per problem); the counts are in the task's protocol."""
    verdicts = [r["verdict"] for r in verdict_records(results[0])]
    return dict(passk_from_verdicts(verdicts, ks_for(len(verdicts))))


def process_tag(doc: dict[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    vocab = list(doc["vocabulary"])
    pred = parse_tags(str(results[0]), vocab)
    gold = list(doc["gold_tags"])
    item = {"pred": pred, "gold": gold, "vocab": vocab}
    return {
        "macro_f1": item,
        "exact_match": float(set(pred) == set(gold)),
    }


def process_compile(doc: dict[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    pred = parse_compile_answer(str(results[0]))
    return {
        "accuracy": float(pred == doc["gold"]),
        "macro_f1": {"pred": pred, "gold": doc["gold"]},
    }


def process_retrieval(doc: dict[str, Any], results: Sequence[Any]) -> dict[str, float]:
    scores = [float(r[0]) for r in results]
    rank = rank_of_positive(scores, int(doc["n_positive"]))
    return {"accuracy": float(rank == 1), "mrr": 1.0 / rank}


# --------------------------------------------------------------------------- aggregations


def tag_macro_f1(items: Sequence[dict[str, Any]]) -> float:
    if not items:
        return math.nan
    vocab = items[0]["vocab"]
    return multilabel_macro_f1(((i["pred"], i["gold"]) for i in items), vocab)


def compile_macro_f1(items: Sequence[dict[str, Any]]) -> float:
    return binary_scores(((i["pred"], i["gold"]) for i in items), COMPILE_CLASSES)["macro_f1"]
