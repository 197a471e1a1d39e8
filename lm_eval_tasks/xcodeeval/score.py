"""Score xCodeEval programs generated elsewhere: pass@k per language and the unweighted mean.

    code-eval score xcodeeval PREDICTIONS.jsonl [--data-dir DIR]
        [--split validation|test] [--k 1 5 10] [--json] [--sample-tests] [--execeval-compat]

Each input line is `{"src_uid", "lang" or "lang_cluster", "source_code"}`; several lines for one
problem and language are several samples of it. `lang` (e.g. "GNU C++17") picks the runtime;
with only `lang_cluster` the authors' runtime for that cluster is used. Problems are looked up by
src_uid in `problem_descriptions.jsonl` (limits) and `unittest_db.json` (hidden tests); lines
whose problem or tests are missing are counted and listed, never scored as failures. `--split`
names the program-synthesis split whose problems the predictions should cover: problems of that
split with no prediction in a language are reported per language. Lines whose own `lang` names a
runtime this machine lacks (e.g. Python 2 on Debian 12) are counted per runtime and not judged.
`--data-dir` defaults to `$XCODEEVAL_DATA`, else the Hub; `--json` prints strict JSON (a pass@k
that cannot be computed is `null`).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.languages.registry import cluster_runtime, resolve
from code_eval_taskpack.utils import datafiles
from code_eval_taskpack.utils.errors import DataError
from code_eval_taskpack.utils.judging import CaseBuilder, Program
from lm_eval_tasks.xcodeeval import data as xd
from lm_eval_tasks.xcodeeval.judging import ExecSettings, judge
from lm_eval_tasks.xcodeeval.metrics import DEFAULT_KS, language_table

NEEDED_BY = "xcodeeval_score"
PROG = "code-eval score xcodeeval"
# errors name this command's own flags, not the lm-eval tasks' --metadata keys
CLI_NAMES = xd.SettingNames(
    local_copy=f"--data-dir or ${xd.DATA_DIR_ENV}",
    sample_tests="or judge on the public sample tests instead with --sample-tests (such numbers "
    "are not comparable with the paper)",
)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument(
        "predictions", type=Path, help="JSONL of {src_uid, lang|lang_cluster, source_code}"
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        help="local copy of the xCodeEval repository (default: $XCODEEVAL_DATA, else the Hub)",
    )
    p.add_argument(
        "--split", choices=xd.SPLITS, default="test", help="split to check coverage against"
    )
    p.add_argument(
        "--k", type=int, nargs="+", default=list(DEFAULT_KS), help="k values (default 1 5 10 20)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument(
        "--sample-tests", action="store_true", help="judge on public sample tests (NOT comparable)"
    )
    p.add_argument(
        "--execeval-compat",
        action="store_true",
        help="ExecEval's output comparison and limits (2 s x runtime factor, 2048 MB)",
    )
    p.add_argument(
        "--workers", type=int, default=None, help="programs judged in parallel (default: CPUs)"
    )
    p.add_argument("--no-cache", action="store_true", help="judge everything afresh")
    p.add_argument(
        "--drop-truncated-tests",
        action="store_true",
        help="judge without the hidden tests cut short by their publisher (NOT the paper's protocol)",
    )
    return p.parse_args(argv)


def _cluster_of(raw: dict[str, Any], path: Path, lineno: int) -> tuple[str, str]:
    """(cluster, runtime name) of a prediction line."""
    lang = raw.get("lang")
    cluster = raw.get("lang_cluster")
    for name, value in (("lang", lang), ("lang_cluster", cluster)):
        if value is not None and not (isinstance(value, str) and value.strip()):
            raise DataError(path, f"expected a name, got {value!r:.40}", row=lineno, field=name)
    if lang:
        try:
            runtime = resolve(str(lang))
        except Exception as exc:
            raise DataError(path, str(exc), row=lineno, field="lang") from exc
        return str(cluster or runtime.cluster), str(lang)
    if cluster:
        if cluster not in xd.CLUSTERS:
            raise DataError(
                path,
                f"unknown cluster; accepted: {', '.join(xd.CLUSTERS)}",
                row=lineno,
                field="lang_cluster",
            )
        return str(cluster), cluster_runtime(str(cluster)).name  # the authors' runtime
    raise DataError(path, "needs 'lang' or 'lang_cluster'", row=lineno)


def score(args: argparse.Namespace) -> dict[str, Any]:
    return score_with_records(args)[0]


def score_with_records(args: argparse.Namespace) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The report, and per judged line {line, src_uid, cluster, record} (the engine's verdict
    record), for callers that compare verdicts line by line."""
    # --data-dir, else $XCODEEVAL_DATA, else the Hub: the same rule as the lm-eval tasks
    settings_in: dict[str, Any] = {
        "xcodeeval_sample_tests": bool(args.sample_tests),
        "xcodeeval_drop_truncated_tests": bool(getattr(args, "drop_truncated_tests", False)),
    }
    if args.data_dir is not None:
        settings_in["xcodeeval_data_dir"] = str(args.data_dir)
    source = xd.source_from_settings(settings_in, CLI_NAMES)
    predictions = xd.read_jsonl(args.predictions)
    problems = xd.load_problem_set(source, NEEDED_BY)
    unittests = xd.unittests_for(source, NEEDED_BY)

    settings = ExecSettings(
        args.execeval_compat, args.workers, None if args.no_cache else "default"
    )
    cases = CaseBuilder()
    programs: list[Program] = []
    owners: list[tuple[str, str, int]] = []  # (cluster, src_uid, line) of each program
    report = xd.JoinReport(
        NEEDED_BY,
        args.split,
        tests=source.tests_kind,
        unit="prediction lines",
        counted_in="the report's unscored lines",
    )
    for lineno, raw in enumerate(predictions, 1):
        uid = xd.require_uid(raw, "src_uid", args.predictions, lineno)
        # a prediction may be empty (it then fails), but it must be text
        code = datafiles.required_text(
            raw, "source_code", args.predictions, lineno, allow_empty=True
        )
        cluster, runtime = _cluster_of(raw, args.predictions, lineno)
        report.total += 1
        problem = xd.problem_or_skip(uid, problems, report, needs_limits=not args.execeval_compat)
        if problem is None:
            continue
        if raw.get("lang"):  # the line's own runtime: skipped and reported if unavailable here
            reason = xd.runtime_unavailable(runtime)
            if reason:
                report.count_unavailable(runtime, reason)
                continue
        tests = xd.problem_tests(problem, unittests, source.drop_truncated)
        if not tests:
            report.skip(xd.NO_TESTS, uid)
            continue
        programs.append(
            settings.program(
                runtime,
                str(code),
                cases(tests),
                problem.time_limit_s,
                problem.memory_limit_mb,
                key=f"{uid}#{lineno}",
            )
        )
        owners.append((cluster, uid, lineno))

    report.log()
    records = judge(programs, settings, NEEDED_BY)
    verdicts: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    lines: list[dict[str, Any]] = []
    for (cluster, uid, lineno), rec in zip(owners, records, strict=True):
        verdicts[cluster][uid].append(rec["verdict"])
        lines.append({"line": lineno, "src_uid": uid, "cluster": cluster, "record": rec})
    table = language_table(verdicts, args.k)

    coverage: dict[str, Any] = {}
    split_file = xd.SYNTHESIS_FILES[args.split]
    if source.has(split_file):
        split_uids = set(xd.problem_set(source.path(split_file, NEEDED_BY)).usable)
        for cluster, by_uid in verdicts.items():
            coverage[cluster] = {
                "missing_problems": len(split_uids - set(by_uid)),
                "outside_split": len(set(by_uid) - split_uids),
            }
    summary = {
        "data": source.describe(),
        "split": args.split,
        "tests": source.tests_kind,
        "comparator": settings.comparator,
        "ks": list(args.k),
        "table": table,
        "coverage": coverage,
        "truncated_tests": xd.truncated_tests(source, (uid for _, uid, _ in owners), NEEDED_BY),
        "unscored": {
            "lines": report.unscored,
            "unknown_src_uid": sorted(set(report.missing_problem)),
            "no_tests": sorted(set(report.missing_tests)),
            "unavailable_runtime": dict(sorted(report.unavailable_runtime.items())),
        },
    }
    return summary, lines


def strict_json(value: Any) -> Any:
    """`value` with every non-finite float (NaN: too few samples for k) replaced by None, so
    that the output is strict JSON (`null`) that any JSON parser accepts."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return "n/a" if math.isnan(x) else f"{100 * x:.2f}"
    return str(x)


def render(report: dict[str, Any]) -> str:
    ks = report["ks"]
    head = ["language", "problems", "samples", *[f"pass@{k}" for k in ks], "infra_err"]
    rows = [
        [
            lang,
            *[_fmt(r[c]) for c in ("problems", "samples")],
            *[_fmt(r[f"pass@{k}"]) for k in ks],
            str(r["infra_errors"]),
        ]
        for lang, r in report["table"].items()
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    lines = []
    if report["tests"] == "sample":
        lines.append(xd.SAMPLE_TESTS_WARNING)
    lines.append(
        f"data {report['data']}, {report['tests']} tests, {report['comparator']} comparator (pass@k in %)"
    )
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    lines.append(
        "mean = unweighted mean over languages; n/a = some problem has fewer than k judged samples"
    )
    un = report["unscored"]
    if un["lines"]:
        lines.append(
            f"NOT SCORED: {un['lines']} prediction lines ({len(un['unknown_src_uid'])} unknown src_uid, "
            f"{len(un['no_tests'])} problems without tests): {', '.join((un['unknown_src_uid'] + un['no_tests'])[:10])}"
        )
    cut = report.get("truncated_tests") or {}
    if cut.get("tests"):
        lines.append(
            f"TRUNCATED TESTS: {cut['tests']} hidden tests of {cut['problems']} judged problems were "
            "cut short by their publisher (end in `...`): "
            + ("dropped (not the paper's protocol)" if cut["dropped"] else "kept, as the paper did")
        )
    for runtime, n in un["unavailable_runtime"].items():
        lines.append(f"NOT SCORED: {n} prediction lines in runtime {runtime!r}, unavailable here")
    for cluster, cov in sorted(report["coverage"].items()):
        if cov["missing_problems"] or cov["outside_split"]:
            lines.append(
                f"{cluster}: {cov['missing_problems']} {report['split']} problems without predictions, "
                f"{cov['outside_split']} predicted problems outside the split"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = _parse_args(argv)
    try:
        report = score(args)
    except (DataError, ValueError) as exc:  # bad input or setting: one line, no traceback
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(strict_json(report), indent=2, allow_nan=False))
    else:
        print(render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
