"""ExecEval drop-in check: the 848 shared ChatGPT programs through our server in ExecEval mode.

Starts `serve --mode execeval` in this process on 127.0.0.1 (or uses `--url`), then runs the
logic of ExecEval's `eval_passk.py` (`lm_eval_tasks/xcodeeval/execeval_client.py`: the same requests, field for
field, with the authors' per-language limits) on `../shared/data/xcodeeval_chatgpt_direct/
predictions.jsonl` with the public sample tests of the 106 problems, and prints per language the
programs passing next to ExecEval's own figures on the same programs and tests, the outcome counts,
and every request the server refused (the original script would drop those silently).

Run: `python bench/execeval_passk.py` (a few minutes on 2 cores); `--per-lang N` for a subset.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from code_eval_taskpack.execution.server.http import make_server
from lm_eval_tasks.xcodeeval.execeval_client import ExecEvalClient, evaluate, shared_samples

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
#: programs passing the sample tests when ExecEval itself judged them (the issue's figures)
EXECEVAL_PASSED = {
    "GNU C11": 21,
    "GNU C++17": 30,
    "Mono C#": 25,
    "Go": 28,
    "PHP": 25,
    "Python 3": 26,
    "Ruby 3": 21,
    "Rust 2021": 21,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data directory")
    parser.add_argument("--url", default=None, help="an already running server (else one here)")
    parser.add_argument("--workers", type=int, default=None, help="engine workers (own server)")
    parser.add_argument("--clients", type=int, default=4, help="requests in flight (n_workers)")
    parser.add_argument("--per-lang", type=int, default=None, help="first N programs per language")
    parser.add_argument("--out", type=Path, default=None, help="JSONL of every sample's outcome")
    parser.add_argument(
        "--use-sanitizer",
        type=int,
        default=0,
        help="sent as this integer, as the authors' README runs eval_passk.py (--use_sanitizer 0)",
    )
    args = parser.parse_args(argv)
    samples, db = shared_samples(
        args.data / "xcodeeval_chatgpt_direct" / "predictions.jsonl",
        args.data / "xcodeeval_sample" / "problem_descriptions.jsonl",
    )
    if args.per_lang is not None:
        seen: Counter[str] = Counter()
        subset = []
        for s in samples:
            if seen[s["lang"]] < args.per_lang:
                seen[s["lang"]] += 1
                subset.append(s)
        samples = subset
    server = None
    url = args.url
    if url is None:
        server = make_server("127.0.0.1", 0, workers=args.workers, mode="execeval")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{server.server_address[1]}"
    start = time.monotonic()
    try:
        report = evaluate(
            ExecEvalClient(url),
            samples,
            db,
            ks=(1,),
            n_workers=args.clients,
            use_sanitizer=args.use_sanitizer,
        )
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
    elapsed = time.monotonic() - start
    if args.out is not None:
        with args.out.open("w", encoding="utf-8") as f:
            for r in sorted(report.results, key=lambda r: r.index):
                row = {"index": r.index, "lang": r.lang, "outcome": r.outcome, "passed": r.passed}
                f.write(json.dumps({**row, "unittests": r.unittests}) + "\n")
    outcomes: dict[str, Counter[str]] = {}
    for r in report.results:
        outcomes.setdefault(r.lang, Counter())[r.outcome] += 1
    print(f"{len(samples)} programs, {elapsed:.0f} s, server at {url} (ExecEval mode)")
    print(f"{'language':<10} {'passed':>6} {'judged':>6} {'ExecEval':>8}  outcomes")
    for lang, (passed, judged) in report.passed_by_lang().items():
        theirs = EXECEVAL_PASSED.get(lang) if args.per_lang is None else None
        shown = "" if theirs is None else str(theirs)
        counts = ", ".join(f"{k} {v}" for k, v in outcomes[lang].most_common())
        print(f"{lang:<10} {passed:>6} {judged:>6} {shown:>8}  {counts}")
    print(f"pass@1 over problems: {report.pass_at_k}")
    dropped = len(report.errors) + sum(report.skipped_unsupported.values())
    print(f"refused or skipped: {dropped} (no tests: {report.skipped_no_tests})")
    for idx, error in report.errors:
        print(f"  sample {idx}: {error[:300]}")
    for lang, n in report.skipped_unsupported.items():
        print(f"  {n} samples of {lang!r}: not in /api/all_runtimes")
    return 1 if dropped else 0


if __name__ == "__main__":
    sys.exit(main())
