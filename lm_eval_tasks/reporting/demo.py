"""Real programs, real numbers: score ChatGPT's 848 xCodeEval programs and cross-check our judge.

    python -m lm_eval_tasks.reporting.demo --predictions FILE --data-dir DIR --out DIR
        [--only-execeval-passed] [--write-expected]

The programs (gpt-3.5-turbo, direct prompting, 106 validation problems x 8 languages, from
MapCoder's published results) are judged by the scoring path of `lm_eval_tasks/xcodeeval/score.py` on the
problems' public SAMPLE tests (the hidden tests are not bundled): sample-test numbers, not
comparable with the paper. The report gives per-language pass@1, the verdict distribution and the
agreement table between ExecEval's hidden-test result (`execeval_hidden_tests_passed`) and our
sample-test verdict. A program that passed ExecEval's hidden tests should pass the samples here;
every one that does not must be in the reviewed list `expected_disagreements.json` with a reason.
Exit code 1 when the disagreements differ from that list (`--write-expected` rewrites it, keeping
the reviewed reasons and marking new entries UNREVIEWED).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lm_eval_tasks.reporting import figures as fig
from lm_eval_tasks.reporting import intervals as ci
from lm_eval_tasks.reporting.benchmarks import display_language
from lm_eval_tasks.reporting.markdown import pct, verdicts_md
from lm_eval_tasks.xcodeeval.score import score_with_records

EXPECTED = Path(__file__).resolve().parent / "expected_disagreements.json"
UNREVIEWED = "UNREVIEWED"


def _rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict) or not isinstance(
            row.get("execeval_hidden_tests_passed"), bool
        ):
            raise ValueError(f"{path}:{lineno}: needs a boolean 'execeval_hidden_tests_passed'")
        rows.append(row)
    return rows


def key_of(src_uid: str, cluster: str) -> str:
    return f"{cluster}:{src_uid}"


def load_expected(path: Path = EXPECTED) -> dict[str, dict[str, str]]:
    """The reviewed disagreements: key -> {verdict, category, reason}."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    entries = raw.get("disagreements") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"{path}: needs a 'disagreements' list")
    out = {}
    for i, e in enumerate(entries):
        for f in ("src_uid", "lang_cluster", "verdict", "category", "reason"):
            if not isinstance(e.get(f), str) or not e[f]:
                raise ValueError(f"{path}: disagreements[{i}].{f} is missing")
        out[key_of(e["src_uid"], e["lang_cluster"])] = e
    return out


def judge(
    predictions: Path, data_dir: Path, only_execeval_passed: bool, workers: int | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score the programs on sample tests; per program its ExecEval result and our record."""
    rows = _rows(predictions)
    if only_execeval_passed:
        rows = [r for r in rows if r["execeval_hidden_tests_passed"]]
    with tempfile.TemporaryDirectory() as tmp:
        pred = Path(tmp) / "predictions.jsonl"
        pred.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        args = argparse.Namespace(
            predictions=pred, data_dir=data_dir, split="validation", k=[1], json=False,
            sample_tests=True, execeval_compat=False, workers=workers, no_cache=False,
        )  # fmt: skip
        summary, lines = score_with_records(args)
    programs = []
    for item in lines:
        row = rows[item["line"] - 1]
        programs.append(
            {
                "src_uid": item["src_uid"],
                "lang_cluster": item["cluster"],
                "execeval_passed": row["execeval_hidden_tests_passed"],
                "verdict": item["record"]["verdict"],
                "detail": item["record"]["detail"],
                "runtime": item["record"]["runtime"],
            }
        )
    return summary, programs


def language_lines(programs: list[dict[str, Any]]) -> str:
    """The per-language table a newcomer reads first: programs, passing, and the verdicts."""
    by_lang: dict[str, Counter[str]] = defaultdict(Counter)
    for p in programs:
        by_lang[p["lang_cluster"]][p["verdict"]] += 1
    rows = [f"{'language':<12}{'programs':>9}{'passed':>8}  verdicts"]
    for lang in sorted(by_lang):
        counts = by_lang[lang]
        shown = ", ".join(f"{v} {n}" for v, n in counts.most_common())
        rows.append(f"{lang:<12}{sum(counts.values()):>9}{counts['PASSED']:>8}  {shown}")
    return "\n".join(rows)


def disagreements(programs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Programs ExecEval passed on hidden tests that do not pass the samples here."""
    return {
        key_of(p["src_uid"], p["lang_cluster"]): p
        for p in programs
        if p["execeval_passed"] and p["verdict"] != "PASSED"
    }


def compare(found: dict[str, dict[str, Any]], expected: dict[str, dict[str, str]]) -> list[str]:
    """Differences between the disagreements found and the reviewed list (empty: they agree)."""
    problems = []
    for k in sorted(set(found) - set(expected)):
        problems.append(f"new disagreement {k}: {found[k]['verdict']} ({found[k]['detail'][:120]})")
    for k in sorted(set(expected) - set(found)):
        problems.append(f"expected disagreement {k} no longer happens (now PASSED)")
    for k in sorted(set(found) & set(expected)):
        if found[k]["verdict"] != expected[k]["verdict"]:
            problems.append(
                f"{k}: verdict {found[k]['verdict']}, expected {expected[k]['verdict']}"
            )
    return problems


def write_expected(
    found: dict[str, dict[str, Any]], old: dict[str, dict[str, str]], path: Path
) -> None:
    entries = []
    for k in sorted(found):
        p = found[k]
        prev = old.get(k, {})
        entries.append(
            {
                "src_uid": p["src_uid"],
                "lang_cluster": p["lang_cluster"],
                "verdict": p["verdict"],
                "category": prev.get("category", UNREVIEWED),
                "reason": prev.get("reason", UNREVIEWED + ": " + p["detail"][:200]),
            }
        )
    doc = {
        "about": "Programs ExecEval passed on xCodeEval's hidden tests that do not pass the "
        "public sample tests with this engine, each reviewed and classified (toolchain version, "
        "several valid answers, a real difference). Regenerate with "
        "`python -m lm_eval_tasks.reporting.demo --predictions .../xcodeeval_chatgpt_direct/predictions.jsonl --data-dir .../xcodeeval_sample --only-execeval-passed --write-expected --out DIR`, "
        "then review every UNREVIEWED entry.",
        "disagreements": entries,
    }
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def agreement(programs: list[dict[str, Any]]) -> dict[tuple[bool, bool], int]:
    return Counter((p["execeval_passed"], p["verdict"] == "PASSED") for p in programs)


def _interval(row: dict[str, Any]) -> ci.Interval | None:
    """Wilson interval of a language's pass@1 (one program per problem: pass or fail)."""
    n, value = row.get("problems"), row.get("pass@1")
    if not isinstance(n, int) or n <= 0 or not isinstance(value, float) or math.isnan(value):
        return None
    return ci.wilson(round(value * n), n)


def report(
    out: Path,
    summary: dict[str, Any],
    programs: list[dict[str, Any]],
    expected: dict[str, dict[str, str]],
) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    table = {k: v for k, v in summary["table"].items() if k != "mean"}
    chart = fig.LanguageBars(
        "ChatGPT (gpt-3.5-turbo, direct) on xCodeEval validation: pass@1 on SAMPLE tests", "pass@1"
    )
    model = "gpt-3.5-turbo (MapCoder's programs)"
    chart.values[model] = {display_language(k): v["pass@1"] for k, v in table.items()}
    chart.intervals[model] = {
        display_language(k): i for k, v in table.items() if (i := _interval(v)) is not None
    }
    counts: dict[str, Counter[str]] = {}
    for p in programs:
        counts.setdefault(display_language(p["lang_cluster"]), Counter())[p["verdict"]] += 1
    figures: list[Path] = []
    figure_note = ""
    if fig.matplotlib_available():
        figdir = out / "figures"
        figdir.mkdir(exist_ok=True)
        bars = fig.draw_language_bars(chart, figdir / "pass_at_1_per_language.png")
        figures += [bars] if bars is not None else []
        figures.append(
            fig.draw_verdicts("gpt-3.5-turbo", counts, figdir / "verdicts.png", " (sample tests)")
        )
    else:
        print(f"warning: {fig.MISSING_EXTRA}", file=sys.stderr)
        figure_note = fig.MISSING_EXTRA
    agree = agreement(programs)
    found = disagreements(programs)
    lines = [
        "# xCodeEval demo: 848 real ChatGPT programs, SAMPLE-TEST scoring",
        "",
        "**SAMPLE-TEST scoring**: judged against each problem's public sample tests (the hidden "
        "unit tests are not bundled). Sample tests are fewer and easier than the hidden tests, so "
        "these numbers are higher than hidden-test pass@1 and NOT comparable with the paper.",
        "",
        f"Programs: {len(programs)}, data {summary['data']}, {summary['comparator']} comparator, "
        f"runtimes: {', '.join(sorted({p['runtime'].get('name', '?') + ' ' + p['runtime'].get('version', '?') for p in programs}))}.",
        "",
        "## pass@1 per language (sample tests)",
        "",
        f"Interval: {ci.describe({ci.WILSON})}.",
        "",
        "| language | problems | pass@1 (%) | 95% interval | INFRA_ERROR |",
        "|---|---|---|---|---|",
    ]
    for lang, row in summary["table"].items():
        i = _interval(row) if lang != "mean" else None
        shown = f"[{pct(i.low)}, {pct(i.high)}]" if i else ""
        name = display_language(lang) if lang != "mean" else lang
        lines.append(
            f"| {name} | {row['problems']} | {pct(row['pass@1'])} | {shown} | {row['infra_errors']} |"
        )
    un = summary["unscored"]
    if un["lines"]:
        lines += ["", f"WARNING: {un['lines']} lines not scored: {un}"]
    lines += [
        "",
        "## Agreement with ExecEval (hidden tests) ",
        "",
        "| | passes samples here | fails samples here |",
        "|---|---|---|",
        f"| ExecEval: passed hidden tests | {agree[(True, True)]} | {agree[(True, False)]} |",
        f"| ExecEval: failed hidden tests | {agree[(False, True)]} | {agree[(False, False)]} |",
        "",
        "A program that passed the hidden tests should pass the samples; each one that does not is "
        "listed with its reviewed classification. Programs that fail hidden tests but pass the "
        "samples are expected (the samples are a small subset).",
        "",
        "| program | verdict here | classification | reason |",
        "|---|---|---|---|",
    ]
    for k in sorted(found):
        e = expected.get(k, {"category": UNREVIEWED, "reason": found[k]["detail"][:150]})
        lines.append(f"| `{k}` | {found[k]['verdict']} | {e['category']} | {e['reason']} |")
    problems = compare(found, expected)
    if problems:
        lines += ["", "**Differences from the reviewed list:**", ""] + [f"- {x}" for x in problems]
    lines += ["", "## Verdict distribution", "", *verdicts_md("gpt-3.5-turbo", counts)]
    lines += ["", "## Figures", ""]
    lines += [f"- {figure_note}"] if figure_note else []
    lines += [f"![{f.stem}]({f.relative_to(out)})" for f in figures] + [""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    (out / "programs.jsonl").write_text(
        "".join(json.dumps(p) + "\n" for p in programs), encoding="utf-8"
    )
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Subcommand `code-eval demo xcodeeval-chatgpt`."""
    p = argparse.ArgumentParser(
        prog="code-eval demo xcodeeval-chatgpt", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--out", type=Path, required=True, help="folder for report.md and figures")
    p.add_argument(
        "--predictions", type=Path, required=True, help="xcodeeval_chatgpt_direct/predictions.jsonl"
    )
    p.add_argument(
        "--data-dir", type=Path, required=True, help="xcodeeval_sample (problem_descriptions.jsonl)"
    )
    p.add_argument(
        "--only-execeval-passed",
        action="store_true",
        help="judge only the programs ExecEval passed (the cross-check)",
    )
    p.add_argument(
        "--write-expected", action="store_true", help=f"rewrite {EXPECTED.name} from this run"
    )
    p.add_argument("--expected", type=Path, default=EXPECTED)
    p.add_argument(
        "--workers", type=int, default=None, help="programs judged in parallel (default: CPUs)"
    )
    args = p.parse_args(argv)
    summary, programs = judge(
        args.predictions, args.data_dir, args.only_execeval_passed, args.workers
    )
    expected = load_expected(args.expected) if args.expected.is_file() else {}
    found = disagreements(programs)
    if args.write_expected:
        write_expected(found, expected, args.expected)
        expected = load_expected(args.expected)
    path = report(args.out, summary, programs, expected)
    agree = agreement(programs)
    print(
        f"SAMPLE-TEST scoring of {len(programs)} ChatGPT programs: mean pass@1 "
        f"{pct(summary['table']['mean']['pass@1'])}% over {len(summary['table']) - 1} languages; "
        f"ExecEval-passed programs passing the samples here: {agree[(True, True)]} of "
        f"{agree[(True, True)] + agree[(True, False)]}"
    )
    print(language_lines(programs))
    print(f"report: {path}")
    problems = compare(found, expected)
    for x in problems:
        print(f"DIFFERS FROM {args.expected.name}: {x}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
