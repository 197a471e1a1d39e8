"""Real programs, real verdicts: ChatGPT's 848 xCodeEval programs judged on the hidden tests.

    python -m lm_eval_tasks.reporting.demo --predictions FILE --data-dir DIR --out DIR
        [--workers N] [--write-expected]

The programs (gpt-3.5-turbo, direct prompting, 106 validation problems x 8 languages, from
MapCoder's published results) carry ExecEval's own outcome on xCodeEval's hidden unit tests
(`execeval_hidden_tests_passed`). `DIR` is a data folder with `problem_descriptions.jsonl` and
`unittest_db.json`. They are judged twice:

1. ExecEval's protocol, as the authors' client sent it: one `/api/execute_code` request per
   program, ExecEval's runtime names and per-language limits table, stop on the first failure,
   to this pack's ExecEval-compatible server (`execeval` mode) over HTTP on 127.0.0.1. Every
   program must get the pass/fail ExecEval gave it.
2. The pack's own protocol, through lm-eval: the `xcodeeval_synth_greedy_<language>` tasks with
   a model that replays each program's raw reply (code extraction included), judged with the
   problem's own limits, the default comparator and the paper's runtime of each language.
   Per-language pass@1 is shown beside ExecEval's; each program whose outcome differs is listed.

Every difference from ExecEval, in either protocol, must be in the reviewed list
`expected_disagreements.json` with its reason; exit code 1 when the differences found are not
exactly that list (`--write-expected` rewrites it, keeping reviewed reasons and marking new
entries UNREVIEWED).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lm_eval_tasks.reporting.benchmarks import display_language
from lm_eval_tasks.reporting.markdown import pct

EXPECTED = Path(__file__).resolve().parent / "expected_disagreements.json"
UNREVIEWED = "UNREVIEWED"
#: the two protocols, as the reviewed list and the report name them
EXECEVAL_PROTOCOL = "execeval_protocol"
OWN_PROTOCOL = "own_protocol"
PROTOCOLS = (EXECEVAL_PROTOCOL, OWN_PROTOCOL)


@dataclass(frozen=True)
class Outcome:
    """One program's outcome in one protocol, beside ExecEval's."""

    src_uid: str
    lang_cluster: str
    execeval_passed: bool
    verdict: str  # the first non-passing verdict, or PASSED
    runtime: str

    @property
    def key(self) -> str:
        return key_of(self.src_uid, self.lang_cluster)

    @property
    def passed(self) -> bool:
        return self.verdict == "PASSED"


def key_of(src_uid: str, cluster: str) -> str:
    return f"{cluster}:{src_uid}"


def read_predictions(path: Path) -> list[dict[str, Any]]:
    """The shared programs: `src_uid`, `lang_cluster`, `response`, `source_code` and a boolean
    `execeval_hidden_tests_passed` on every line (a bad line names the file and the line)."""
    from code_eval_taskpack.utils import datafiles
    from code_eval_taskpack.utils.errors import DataError

    rows = []
    for lineno, row in datafiles.jsonl_rows(path):
        for name in ("src_uid", "lang_cluster", "response", "source_code"):
            datafiles.required_text(row, name, path, lineno, allow_empty=name == "source_code")
        if not isinstance(row.get("execeval_hidden_tests_passed"), bool):
            raise DataError(
                path, "expected true or false", row=lineno, field="execeval_hidden_tests_passed"
            )
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- ExecEval's protocol


@contextmanager
def execeval_server(workers: int) -> Iterator[str]:
    """This pack's ExecEval-compatible server (`execeval` mode) on a free port of 127.0.0.1,
    stopped on exit; yields its URL."""
    from code_eval_taskpack.execution.server.http import make_server

    server = make_server("127.0.0.1", 0, workers=workers, mode="execeval")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def execeval_protocol(
    rows: Sequence[Mapping[str, Any]], data_dir: Path, workers: int
) -> list[Outcome]:
    """Each program judged as the authors' client sent it (`execeval_client.evaluate`) to the
    ExecEval-compatible server, on the hidden tests exactly as `unittest_db.json` holds them."""
    from code_eval_taskpack.utils import datafiles
    from lm_eval_tasks.xcodeeval.data import UNITTESTS_FILE
    from lm_eval_tasks.xcodeeval.execeval_client import CLUSTER_RUNTIME, ExecEvalClient, evaluate

    db, _ = datafiles.read_json(data_dir / UNITTESTS_FILE)
    samples = [
        {
            "src_uid": r["src_uid"],
            "task_id": key_of(r["src_uid"], r["lang_cluster"]),
            "lang": CLUSTER_RUNTIME[r["lang_cluster"]],
            "source_code": r["source_code"],
        }
        for r in rows
    ]
    with execeval_server(workers) as url:
        report = evaluate(ExecEvalClient(url), samples, db, ks=(1,), n_workers=2 * workers)
    lost = report.errors or report.skipped_no_tests or sum(report.skipped_unsupported.values())
    if lost:  # the authors' client would drop these silently: here they stop the check
        raise RuntimeError(
            f"{len(report.errors)} requests refused, {report.skipped_no_tests} programs without "
            f"tests, unsupported runtimes {dict(report.skipped_unsupported)}: "
            f"{report.errors[:3]}"
        )
    return [
        Outcome(
            rows[r.index]["src_uid"],
            rows[r.index]["lang_cluster"],
            rows[r.index]["execeval_hidden_tests_passed"],
            r.outcome,
            r.lang,
        )
        for r in sorted(report.results, key=lambda r: r.index)
    ]


# --------------------------------------------------------------------------- the pack's protocol


def own_protocol(
    rows: Sequence[Mapping[str, Any]], data_dir: Path, workers: int | None = None
) -> list[Outcome]:
    """Each program's raw reply replayed through `xcodeeval_synth_greedy_<language>` with
    lm-eval (hidden tests of `data_dir`, validation split, the pack's default protocol)."""
    import lm_eval
    from lm_eval.api.model import LM
    from lm_eval.tasks import TaskManager

    from lm_eval_tasks.xcodeeval.data import SLUGS
    from lm_eval_tasks.xcodeeval.kinds import GREEDY, SYNTH

    replies = {(r["src_uid"], r["lang_cluster"]): str(r["response"]) for r in rows}
    slug_of = {cluster: slug for slug, cluster in SLUGS.items()}
    tasks = [SYNTH.task(GREEDY.name, slug_of[c]) for c in sorted({r["lang_cluster"] for r in rows})]

    class Replay(LM):  # type: ignore[misc]
        """Answers each synthesis prompt with the logged reply for its problem and language;
        a document without one is a failure of the check, never an empty answer."""

        def generate_until(self, requests: Any, disable_tqdm: bool = False) -> list[str]:
            out = []
            for r in requests:
                key = (r.doc["src_uid"], r.doc["lang_cluster"])
                if key not in replies:
                    raise KeyError(f"no program for {key} in the predictions")
                out.append(replies[key])
            return out

        def loglikelihood(self, requests: Any, disable_tqdm: bool = False) -> Any:
            raise RuntimeError("the synthesis tasks only generate")

        loglikelihood_rolling = loglikelihood

    metadata = {
        "xcodeeval_data_dir": str(data_dir),
        "xcodeeval_split": "validation",
        "xcodeeval_workers": workers,
    }
    manager = TaskManager(
        include_path=str(Path(__file__).resolve().parents[1]),
        include_defaults=False,
        metadata={k: v for k, v in metadata.items() if v is not None},
    )
    out = lm_eval.simple_evaluate(
        model=Replay(),
        tasks=tasks,
        task_manager=manager,
        log_samples=True,
        confirm_run_unsafe_code=True,
    )
    if out is None:
        raise RuntimeError("lm-eval returned no results")
    passed = {(r["src_uid"], r["lang_cluster"]): r["execeval_hidden_tests_passed"] for r in rows}
    outcomes = []
    for task in tasks:
        for sample in out["samples"][task]:
            doc = sample["doc"]
            key = (doc["src_uid"], doc["lang_cluster"])
            if key not in passed:
                continue  # a problem of the split this prediction set does not cover
            record = json.loads(sample["filtered_resps"][0][0])
            outcomes.append(
                Outcome(key[0], key[1], passed[key], record["verdict"], doc["judge_lang"])
            )
    return outcomes


# --------------------------------------------------------------------------- the reviewed list


def load_expected(path: Path = EXPECTED) -> dict[str, dict[str, dict[str, str]]]:
    """The reviewed differences: protocol -> key -> {verdict, category, reason}."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, dict[str, dict[str, str]]] = {}
    for protocol in PROTOCOLS:
        entries = raw.get(protocol) if isinstance(raw, dict) else None
        if not isinstance(entries, list):
            raise ValueError(f"{path}: needs a {protocol!r} list")
        out[protocol] = {}
        for i, e in enumerate(entries):
            for f in ("src_uid", "lang_cluster", "verdict", "category", "reason"):
                if not isinstance(e.get(f), str) or not e[f]:
                    raise ValueError(f"{path}: {protocol}[{i}].{f} is missing")
            out[protocol][key_of(e["src_uid"], e["lang_cluster"])] = e
    return out


def disagreements(outcomes: Sequence[Outcome]) -> dict[str, Outcome]:
    """Programs whose pass/fail differs from ExecEval's."""
    return {o.key: o for o in outcomes if o.passed != o.execeval_passed}


def compare(found: Mapping[str, Outcome], expected: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Differences between the disagreements found and the reviewed ones (empty: they agree)."""
    problems = [
        f"new disagreement {k}: {found[k].verdict}" for k in sorted(set(found) - set(expected))
    ]
    problems += [
        f"reviewed disagreement {k} no longer happens" for k in sorted(set(expected) - set(found))
    ]
    problems += [
        f"{k}: verdict {found[k].verdict}, reviewed {expected[k]['verdict']}"
        for k in sorted(set(found) & set(expected))
        if found[k].verdict != expected[k]["verdict"]
    ]
    return problems


def write_expected(
    found: Mapping[str, Mapping[str, Outcome]],
    old: Mapping[str, Mapping[str, Mapping[str, str]]],
    path: Path,
) -> None:
    doc: dict[str, Any] = {
        "about": "Programs of the shared ChatGPT set whose pass/fail on xCodeEval's hidden tests "
        "differs from ExecEval's own outcome, per protocol, each reviewed with its reason. "
        "Regenerate with `python -m lm_eval_tasks.reporting.demo --predictions "
        ".../xcodeeval_chatgpt_direct/predictions.jsonl --data-dir .../xcodeeval_validation "
        "--write-expected --out DIR`, then review every UNREVIEWED entry.",
    }
    for protocol in PROTOCOLS:
        reviewed = old.get(protocol, {})
        doc[protocol] = [
            {
                "src_uid": o.src_uid,
                "lang_cluster": o.lang_cluster,
                "execeval_passed": o.execeval_passed,
                "verdict": o.verdict,
                "category": reviewed.get(k, {}).get("category", UNREVIEWED),
                "reason": reviewed.get(k, {}).get("reason", UNREVIEWED),
            }
            for k, o in sorted(found.get(protocol, {}).items())
        ]
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------- report


def pass_at_1(outcomes: Sequence[Outcome], execeval: bool = False) -> dict[str, float]:
    """Per-language pass@1 (one program per problem), ours or ExecEval's, and their mean."""
    by_lang: dict[str, list[bool]] = defaultdict(list)
    for o in outcomes:
        by_lang[o.lang_cluster].append(o.execeval_passed if execeval else o.passed)
    table = {lang: sum(v) / len(v) for lang, v in sorted(by_lang.items())}
    if table:
        table["mean"] = sum(table.values()) / len(table)
    return table


def agreement(outcomes: Sequence[Outcome]) -> Counter[tuple[bool, bool]]:
    return Counter((o.execeval_passed, o.passed) for o in outcomes)


def report(
    out: Path,
    results: Mapping[str, Sequence[Outcome]],
    expected: Mapping[str, Mapping[str, Mapping[str, str]]],
) -> Path:
    """`report.md` and `programs.jsonl` (every outcome of both protocols) in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    execeval, own = results[EXECEVAL_PROTOCOL], results[OWN_PROTOCOL]
    theirs, ours_ee, ours = pass_at_1(execeval, True), pass_at_1(execeval), pass_at_1(own)
    lines = [
        f"# xCodeEval: {len(execeval)} real ChatGPT programs on the HIDDEN tests, against ExecEval",
        "",
        "ExecEval's outcome of each program (`execeval_hidden_tests_passed`, MapCoder's published "
        "run) against this pack's verdict on the same hidden unit tests, in two protocols:",
        "",
        "- **ExecEval's protocol**: the authors' client requests (ExecEval runtime names "
        f"{', '.join(sorted({o.runtime for o in execeval}))}; its per-language limits; stop on "
        "the first failure) sent to this pack's ExecEval-compatible server.",
        "- **the pack's protocol**: `xcodeeval_synth_greedy_*` through lm-eval, each program's "
        "raw reply replayed (code extraction included), judged with the problem's own limits, "
        "the default comparator and the paper's runtimes "
        f"({', '.join(sorted({o.runtime for o in own}))}).",
        "",
        "## pass@1 per language (%)",
        "",
        "| language | programs | ExecEval | ExecEval's protocol here | the pack's protocol |",
        "|---|---|---|---|---|",
    ]
    counts = Counter(o.lang_cluster for o in execeval)
    for lang in theirs:
        name = display_language(lang) if lang != "mean" else "mean"
        n = counts[lang] if lang != "mean" else len(execeval)
        lines.append(
            f"| {name} | {n} | {pct(theirs[lang])} | {pct(ours_ee.get(lang, float('nan')))} | "
            f"{pct(ours.get(lang, float('nan')))} |"
        )
    for protocol, title in (
        (EXECEVAL_PROTOCOL, "ExecEval's protocol"),
        (OWN_PROTOCOL, "the pack's protocol"),
    ):
        agree = agreement(results[protocol])
        found = disagreements(results[protocol])
        lines += [
            "",
            f"## Agreement with ExecEval: {title}",
            "",
            "| | passes here | fails here |",
            "|---|---|---|",
            f"| ExecEval: passed | {agree[(True, True)]} | {agree[(True, False)]} |",
            f"| ExecEval: failed | {agree[(False, True)]} | {agree[(False, False)]} |",
            "",
        ]
        if found:
            lines += [
                "| program | ExecEval | verdict here | classification | reason |",
                "|---|---|---|---|---|",
            ]
            for k, o in sorted(found.items()):
                e = expected.get(protocol, {}).get(k, {"category": UNREVIEWED, "reason": ""})
                was = "passed" if o.execeval_passed else "failed"
                lines.append(f"| `{k}` | {was} | {o.verdict} | {e['category']} | {e['reason']} |")
        else:
            lines.append("Every program gets the pass/fail ExecEval gave it.")
        problems = compare(found, expected.get(protocol, {}))
        if problems:
            lines += ["", "**Differences from the reviewed list:**", ""] + [
                f"- {x}" for x in problems
            ]
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with open(out / "programs.jsonl", "w", encoding="utf-8") as fh:
        for protocol in PROTOCOLS:
            for o in results[protocol]:
                fh.write(json.dumps({"protocol": protocol, **asdict(o)}) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="code-eval demo xcodeeval-chatgpt", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--out", type=Path, required=True, help="folder for report.md")
    p.add_argument(
        "--predictions", type=Path, required=True, help="xcodeeval_chatgpt_direct/predictions.jsonl"
    )
    p.add_argument(
        "--data-dir",
        type=Path,
        required=True,
        help="xcodeeval_validation (problem_descriptions.jsonl and unittest_db.json)",
    )
    p.add_argument(
        "--write-expected", action="store_true", help=f"rewrite {EXPECTED.name} from this run"
    )
    p.add_argument("--expected", type=Path, default=EXPECTED)
    p.add_argument("--workers", type=int, default=2, help="programs judged in parallel")
    args = p.parse_args(argv)
    rows = read_predictions(args.predictions)
    results = {
        EXECEVAL_PROTOCOL: execeval_protocol(rows, args.data_dir, args.workers),
        OWN_PROTOCOL: own_protocol(rows, args.data_dir, args.workers),
    }
    expected = load_expected(args.expected) if args.expected.is_file() else {}
    found = {protocol: disagreements(results[protocol]) for protocol in PROTOCOLS}
    if args.write_expected:
        write_expected(found, expected, args.expected)
        expected = load_expected(args.expected)
    path = report(args.out, results, expected)
    failed = False
    for protocol in PROTOCOLS:
        agree = agreement(results[protocol])
        same = agree[(True, True)] + agree[(False, False)]
        print(
            f"{protocol}: {same} of {len(results[protocol])} programs get ExecEval's pass/fail; "
            f"mean pass@1 {pct(pass_at_1(results[protocol])['mean'])}% "
            f"(ExecEval {pct(pass_at_1(results[protocol], True)['mean'])}%)"
        )
        for x in compare(found[protocol], expected.get(protocol, {})):
            failed = True
            print(f"DIFFERS FROM {args.expected.name} ({protocol}): {x}", file=sys.stderr)
    print(f"report: {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
