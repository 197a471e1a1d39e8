"""Build and start-up speed of the non-JVM languages: the shared real programs judged by the
engine of a baseline commit (checked out in a `git worktree`) and by this tree, per language,
same worker count, both caches empty; prints wall ratios and whether every verdict is identical.

    python bench/native_speed.py [--quick] [--workers 2] [--only C,Go] [--baseline 367bdba]

Each (engine, language) batch runs in a child process that imports that engine's `execution`
folder, so the two engines never share a cache, a launcher or a module.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_NEAR = [ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data"]
DATA = Path(os.environ.get("SHARED_DATA") or next((p for p in _NEAR if p.is_dir()), _NEAR[0]))
PREDICTIONS = DATA / "xcodeeval_chatgpt_direct" / "predictions.jsonl"
PROBLEMS = DATA / "xcodeeval_sample" / "problem_descriptions.jsonl"
#: workload cluster -> runtime judged (and the extra runtimes judged on the same programs)
RUNTIMES = {
    "C": ["GNU C11"],
    "C++": ["GNU C++17"],
    "C#": ["Mono C#"],
    "Go": ["Go"],
    "PHP": ["PHP"],
    "Python": ["Python 3", "PyPy 3"],
    "Ruby": ["Ruby 3"],
    "Rust": ["Rust 2021"],
}

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
try:  # the engine's layout since its sub-packages, else a baseline commit's flat one
    from execution.judge.engine import Engine
except ModuleNotFoundError:
    from execution.engine import Engine
from execution.types import Job, TestCase
spec = json.load(open(sys.argv[2]))
jobs = [Job(language=j["language"], source_code=j["source"], id=j["id"],
            tests=tuple(TestCase(input=t[0], output=(t[1],)) for t in j["tests"]),
            time_limit_s=j["time_limit_s"], memory_limit_mb=j["memory_limit_mb"])
        for j in spec["jobs"]]
engine = Engine(workers=spec["workers"], cache=spec["cache"])
t0 = time.perf_counter()
results = engine.judge_many(jobs)
wall = time.perf_counter() - t0
cpu = {"compile": 0.0, "run": 0.0}
for r in results:
    if r.compile is not None:
        cpu["compile"] += r.compile.time_s
    cpu["run"] += sum(t.time_s for t in r.tests)
json.dump({"wall": wall, "cpu": cpu, "verdicts": {r.id: r.verdict.value for r in results},
           "judged": engine.judged}, sys.stdout)
"""


def _number(text: str) -> float:
    return float(str(text).split()[0])


def load_jobs(limit: int | None) -> dict[str, list[dict[str, Any]]]:
    """Jobs per runtime name from the shared predictions and the problems' sample tests."""
    problems = {}
    with PROBLEMS.open(encoding="utf-8") as f:
        for line in f:
            p = json.loads(line)
            problems[p["src_uid"]] = p
    per: dict[str, list[dict[str, Any]]] = {}
    with PREDICTIONS.open(encoding="utf-8") as f:
        for n, line in enumerate(f):
            pred = json.loads(line)
            p = problems.get(pred["src_uid"])
            if p is None:
                continue
            for name in RUNTIMES.get(pred["lang_cluster"], []):
                rows = per.setdefault(name, [])
                if limit is not None and len(rows) >= limit:
                    continue
                rows.append(
                    {
                        "language": name,
                        "source": pred["source_code"],
                        "id": f"{n}",
                        "tests": list(zip(p["sample_inputs"], p["sample_outputs"], strict=False)),
                        "time_limit_s": _number(p["time_limit"]),
                        "memory_limit_mb": int(_number(p["memory_limit"])),
                    }
                )
    return per


def baseline_tree(commit: str) -> Path:
    """A detached worktree of `commit` (made once, kept under .cache)."""
    path = ROOT / ".cache" / f"baseline-{commit}"
    if not (path / "execution").is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), commit],
            check=True,
            capture_output=True,
        )
    return path


#: the environment of the "classic" reference: this tree with every speed-up switched off
CLASSIC_ENV = {"CODE_EVAL_CLASSIC_BUILD": "1", "CODE_EVAL_PCH": "0"}


def judge(
    tree: Path, jobs: list[dict[str, Any]], workers: int, env: dict[str, str] | None = None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="native-speed-") as tmp:
        spec = Path(tmp) / "spec.json"
        cache = Path(tmp) / "cache"
        spec.write_text(json.dumps({"jobs": jobs, "workers": workers, "cache": str(cache)}))
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(tree), str(spec)],
            check=True,
            capture_output=True,
            text=True,
            cwd=tmp,
            env={**os.environ, **(env or {})},
        )
    return dict(json.loads(out.stdout))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="367bdba")
    ap.add_argument(
        "--reference",
        choices=("baseline", "classic"),
        default="baseline",
        help="compare with the baseline commit's engine, or with this tree's classic build "
        "(CODE_EVAL_CLASSIC_BUILD=1 CODE_EVAL_PCH=0: isolates the speed-ups' effect on verdicts)",
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="12 programs per language")
    ap.add_argument("--only", default="", help="comma-separated runtime names")
    ap.add_argument("--repeat", type=int, default=1, help="alternate baseline/now N times")
    ap.add_argument("--json", default="", help="write the raw figures here")
    args = ap.parse_args(argv)
    if not PREDICTIONS.exists():
        print(f"no workload at {PREDICTIONS}: set SHARED_DATA")
        return 1
    per = load_jobs(12 if args.quick else None)
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    base = baseline_tree(args.baseline) if args.reference == "baseline" else ROOT
    base_env = CLASSIC_ENV if args.reference == "classic" else None
    rows: dict[str, Any] = {}
    print(
        f"reference: {args.reference} ({args.baseline if args.reference == 'baseline' else 'classic switches'}), {args.workers} workers"
    )
    print(f"{'runtime':<12} {'n':>4} {'base s':>8} {'now s':>8} {'ratio':>6}  verdicts")
    all_same = True
    for name, jobs in per.items():
        if only and name not in only:
            continue
        walls: dict[str, list[float]] = {"base": [], "now": []}
        runs: dict[str, dict[str, Any]] = {}
        for _ in range(args.repeat):
            for tag, tree, env in (("base", base, base_env), ("now", ROOT, None)):
                runs[tag] = judge(tree, jobs, args.workers, env)
                walls[tag].append(runs[tag]["wall"])
        diff = [
            i for i, v in runs["base"]["verdicts"].items() if runs["now"]["verdicts"].get(i) != v
        ]
        all_same &= not diff
        b, n = min(walls["base"]), min(walls["now"])
        note = "identical" if not diff else f"{len(diff)} DIFFER: {diff[:5]}"
        print(f"{name:<12} {len(jobs):>4} {b:>8.2f} {n:>8.2f} {b / n:>5.2f}x  {note}", flush=True)
        rows[name] = {"base": walls["base"], "now": walls["now"], "differ": diff, "runs": runs}
    tb = sum(min(r["base"]) for r in rows.values())
    tn = sum(min(r["now"]) for r in rows.values())
    if tn:
        print(f"{'all':<12} {'':>4} {tb:>8.2f} {tn:>8.2f} {tb / tn:>5.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all_same else 2


if __name__ == "__main__":
    raise SystemExit(main())
