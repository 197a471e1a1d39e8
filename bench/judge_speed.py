"""Judge speed on real workloads: today's engine against a baseline commit, per language.

Sections (all by default, or `--only SECTION`, repeatable):

- `floor`   the bare cost of each language's toolchain: compile and run hello world with a plain
            `subprocess.run` (no sandbox, no engine), CPU and wall seconds.
- `equal`   the equal-weight workload (`judge_workload.py`: 106 distinct programs in each of the
            11 languages, judged on the sample tests). Every language is judged as its own batch
            (its wall is its own), for 1 and 2 workers, by the baseline and by today's engine;
            then all languages as ONE batch (what users run; in --quick, or on request with
            --overall-workers). Each measured run starts with both caches empty (a fresh engine
            and a fresh result-cache folder): cache hits are counted and must be zero. Verdicts
            are compared program by program, baseline against today and today against
            `workload/verdicts.json`; any difference is printed and fails the bench, but for the
            fidelity fixes made since the baseline (`BASELINE_FIXES`, each with its commit),
            which must be exactly the change listed, and the races of `RACES`.
- `sampled` 20 near-identical samples per problem (as a sampled run produces), one batch each.
- `cache`   today's cache figures: a warm rerun served from the result cache, and a rerun with
            other tests served from the compile cache, against the cold run.

CPU seconds come from two places: "compile" and "run" are what the results record
(`CompileResult.time_s`, the sum of `TestResult.time_s`: CPU of the sandboxed processes), the same
fields in both engines; "cpu" is `getrusage` of the driver process and all its reaped descendants,
which also covers sandbox set-up, the engine itself and any long-lived helper process.

The baseline is the engine at `--baseline` (default 367bdba), checked out by this script with
`git worktree` under `.cache/judge_speed/` (reused when present) and imported by a separate driver
process (`judge_driver.py`) with that tree on PYTHONPATH; at that commit the package was the
top-level `execution`. Numbers are noisy on a shared machine: the load average is printed.

Run: `python bench/judge_speed.py` (full: every program with 2 workers, the first 12 of each
language with 1 worker, `--one-worker 106` for all; all languages as one batch with
`--overall-workers 2`), `--quick` (12 programs per language, 2 workers only, one sampled
problem, a few minutes), `--languages Kotlin,Java` for a subset.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import judge_workload as wl  # noqa: E402

ROOT = HERE.parent
CACHE = ROOT / ".cache" / "judge_speed"
DRIVER = HERE / "judge_driver.py"
BASELINE_COMMIT = "367bdba"
SECTIONS = ("floor", "equal", "sampled", "cache")
LANGUAGES = (
    "C",
    "C#",
    "C++",
    "Go",
    "Java",
    "Javascript",
    "Kotlin",
    "PHP",
    "Python",
    "Ruby",
    "Rust",
)
QUICK_PER_LANGUAGE = 12
QUICK_SAMPLED_PROBLEMS = 1
QUICK_CACHE_PER_LANGUAGE = 4
#: 1-worker batches judge this many programs per language unless --one-worker says otherwise
#: (all of them would take the full run past 20 minutes on 2 cores)
ONE_WORKER_PER_LANGUAGE = 12

HELLO: dict[str, str] = {
    "C": '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n',
    "C++": '#include <iostream>\nint main() { std::cout << "hello" << std::endl; }\n',
    "C#": 'using System;\nclass P { static void Main() { Console.WriteLine("hello"); } }\n',
    "Go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n',
    "Java": 'public class Main {\n  public static void main(String[] a) {\n    System.out.println("hello");\n  }\n}\n',
    "Javascript": 'console.log("hello");\n',
    "Kotlin": 'fun main() {\n    println("hello")\n}\n',
    "PHP": '<?php\necho "hello\\n";\n',
    "Python": 'print("hello")\n',
    "Ruby": 'puts "hello"\n',
    "Rust": 'fn main() {\n    println!("hello");\n}\n',
}


# -- engines ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineBuild:
    """An engine to measure: which package to import, with what on PYTHONPATH."""

    name: str
    package: str
    pythonpath: str = ""

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (self.pythonpath, env.get("PYTHONPATH", "")) if p
            )
        # the launcher binary and other toolchain-derived files persist per engine; results and
        # compiled programs go to a fresh folder per measured run (see run_batch)
        env["CODE_EVAL_CACHE"] = str(CACHE / f"home-{self.name}")
        return env


NOW = EngineBuild("now", "code_eval_taskpack.execution")


def baseline_build(commit: str) -> EngineBuild:
    """The engine at `commit`, checked out once under .cache/ (a detached git worktree)."""
    tree = CACHE / f"baseline-{commit}"
    if not (tree / "execution" / "engine.py").is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=True)
        if tree.exists():
            shutil.rmtree(tree)
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit],
            check=True,
            capture_output=True,
        )
    return EngineBuild("baseline", "execution", str(tree))


# -- one measured batch ----------------------------------------------------------------------


@dataclass
class Batch:
    """One driver run: what it cost and what it found."""

    engine: str
    workers: int
    wall_s: float
    cpu_s: float
    results: list[dict[str, Any]]
    judged: int = -1  # programs the engine actually ran (identical jobs in a batch run once)

    @property
    def programs(self) -> int:
        return len(self.results)

    @property
    def compile_s(self) -> float:
        return sum(r["compile_s"] for r in self.results)

    @property
    def run_s(self) -> float:
        return sum(r["run_s"] for r in self.results)

    @property
    def hits(self) -> tuple[int, int]:
        """(results served from the result cache, compiles served from the compile cache)."""
        return (
            sum(r["cached"] for r in self.results),
            sum(r["compile_cached"] for r in self.results),
        )

    @property
    def rate(self) -> float:
        return self.programs / self.wall_s if self.wall_s > 0 else float("inf")

    def verdicts(self) -> dict[str, str]:
        return {r["id"]: r["verdict"] for r in self.results}


def run_batch(
    engine: EngineBuild,
    jobs: list[dict[str, Any]],
    workers: int,
    cache_dir: Path | None = None,
) -> Batch:
    """Judge `jobs` in a driver process of `engine`; a fresh result cache unless `cache_dir`."""
    with tempfile.TemporaryDirectory(prefix="judge-speed-") as tmp:
        jobs_file = Path(tmp) / "jobs.json"
        out_file = Path(tmp) / "report.json"
        jobs_file.write_text(json.dumps(jobs), encoding="utf-8")
        cache = cache_dir or Path(tmp) / "cache"
        argv = [sys.executable, str(DRIVER), "--jobs", str(jobs_file), "--out", str(out_file)]
        argv += ["--workers", str(workers), "--cache", str(cache), "--package", engine.package]
        proc = subprocess.run(argv, env=engine.env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{engine.name} driver failed:\n{proc.stderr[-3000:]}")
        report = json.loads(out_file.read_text(encoding="utf-8"))
    return Batch(
        engine=engine.name,
        workers=workers,
        wall_s=report["wall_s"],
        cpu_s=report["engine_cpu_s"] + report["children_cpu_s"],
        results=report["results"],
        judged=report["judged"],
    )


# -- floor -----------------------------------------------------------------------------------


def floor_costs(languages: Sequence[str], reps: int = 3) -> dict[str, dict[str, float]]:
    """Per language: median CPU and wall seconds of a bare compile and a bare run of hello
    world (the registry's own command lines, `subprocess.run`, no sandbox)."""
    from code_eval_taskpack.execution.languages.registry import resolve
    from code_eval_taskpack.execution.run.runner import source_layout

    out: dict[str, dict[str, float]] = {}
    for lang in languages:
        rt = resolve(lang)
        if not rt.available:
            continue
        samples: dict[str, list[float]] = {"compile_cpu": [], "run_cpu": [], "wall": []}
        for _ in range(reps):
            with tempfile.TemporaryDirectory(prefix="floor-") as tmp:
                values = source_layout(rt, HELLO[lang]) | {"memory_mb": "256"}
                Path(tmp, values["source"]).write_text(HELLO[lang], encoding="utf-8")
                # a run argv may load a prelude file (Ruby without RubyGems): an empty one here
                prelude = Path(tmp, "floor-prelude.rb")
                prelude.write_text("", encoding="utf-8")
                values["ruby_prelude"] = str(prelude)
                env = dict(os.environ, HOME=tmp)
                start = time.perf_counter()
                c0 = _children_cpu()
                if rt.compile:
                    subprocess.run(
                        rt.expand(rt.compile, **values),
                        cwd=tmp,
                        env=env | rt.compile_env,
                        capture_output=True,
                        check=True,
                    )
                c1 = _children_cpu()
                subprocess.run(
                    rt.expand(rt.run, **values),
                    cwd=tmp,
                    env=env | rt.run_env,
                    capture_output=True,
                    check=True,
                )
                c2 = _children_cpu()
                samples["wall"].append(time.perf_counter() - start)
                samples["compile_cpu"].append(c1 - c0)
                samples["run_cpu"].append(c2 - c1)
        out[lang] = {k: statistics.median(v) for k, v in samples.items()}
    return out


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# -- reporting -------------------------------------------------------------------------------


@dataclass
class Checks:
    """Failures of the bench's own checks (verdict differences, cache hits): printed, counted."""

    failures: list[str] = field(default_factory=list)

    def fail(self, message: str) -> None:
        self.failures.append(message)
        print(f"  CHECK FAILED: {message}")


def _ratio(now: float, base: float) -> str:
    return f"{now / base:5.2f}x" if base > 0 else "   - "


def _load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


#: verdicts that changed since the baseline commit by a fidelity fix, not by speed work:
#: program id -> (baseline verdict, verdict now, why). Accepted only as exactly that change.
BASELINE_FIXES: dict[str, tuple[str, str, str]] = {
    f"C++/{uid}": (
        "COMPILATION_ERROR",
        "PASSED",
        "da95aa3 compiles C++ with -include limits.h -include math.h, as ExecEval does",
    )
    for uid in ("1bd29d7a8793c22e81a1f6fd3991307a", "4b9f470e5889da29affae6376f6c9f6a")
}


#: programs whose verdict is a race between two limits (either is right, run to run): id ->
#: the verdicts accepted. Both programs grow a string in a loop that never ends (the C++ one
#: appends a digit while a count it decrements elsewhere stays positive): memory and CPU time
#: run out at about the same moment.
RACES: dict[str, frozenset[str]] = {
    uid: frozenset({"MEMORY_LIMIT_EXCEEDED", "TIME_LIMIT_EXCEEDED"})
    for uid in ("Go/d82278932881e3aa997086c909f29051", "C++/60dbfc7a65702ae8bd4a587db1e06398")
}


def compare_verdicts(
    label: str,
    base: dict[str, str],
    now: dict[str, str],
    checks: Checks,
    limit: int = 20,
    fixes: dict[str, tuple[str, str, str]] | None = None,
) -> None:
    """Fail `checks` on any program whose verdicts differ, except a change listed in `fixes`
    and a race of `RACES` within its accepted verdicts."""
    diff = []
    for k in sorted(k for k in now if k in base and base[k] != now[k]):
        fix = (fixes or {}).get(k)
        if fix is not None and fix[:2] == (base[k], now[k]):
            print(f"    {label}: {k}: {base[k]} -> {now[k]} (expected: {fix[2]})")
        elif {base[k], now[k]} <= RACES.get(k, frozenset()):
            print(f"    {label}: {k}: {base[k]} -> {now[k]} (a race between two limits)")
        else:
            diff.append(k)
    missing = sorted(set(now) ^ set(base))
    for k in diff[:limit]:
        print(f"    {label}: {k}: {base[k]} -> {now[k]}")
    if diff:
        checks.fail(f"{label}: {len(diff)} verdicts differ")
    if missing:
        checks.fail(f"{label}: {len(missing)} programs judged by one side only")


def print_table(rows: list[tuple[str, int, Batch, Batch]]) -> None:
    print(
        f"  {'language':<22} {'progs':>5} {'w':>1} | {'compile CPU s':>13} | {'run CPU s':>11} |"
        f" {'all CPU s':>11} | {'wall s':>13} | {'programs/s':>11} | now/base"
    )
    print(f"  {'':<22} {'':>5} {'':>1} | {'base':>6} {'now':>6} | {'base':>5} {'now':>5} |"
          f" {'base':>5} {'now':>5} | {'base':>6} {'now':>6} | {'base':>5} {'now':>5} |")  # fmt: skip
    for label, n, b, c in rows:
        print(
            f"  {label:<22} {n:>5} {c.workers:>1} | {b.compile_s:6.1f} {c.compile_s:6.1f} |"
            f" {b.run_s:5.1f} {c.run_s:5.1f} | {b.cpu_s:5.1f} {c.cpu_s:5.1f} |"
            f" {b.wall_s:6.1f} {c.wall_s:6.1f} | {b.rate:5.2f} {c.rate:5.2f} |"
            f" {_ratio(c.rate, b.rate)}"
        )


def _merge(batches: list[Batch]) -> Batch:
    """Per-language batches summed (their walls add up: they ran one after another)."""
    return Batch(
        engine=batches[0].engine,
        workers=batches[0].workers,
        wall_s=sum(b.wall_s for b in batches),
        cpu_s=sum(b.cpu_s for b in batches),
        results=[r for b in batches for r in b.results],
        judged=sum(b.judged for b in batches),
    )


# -- sections --------------------------------------------------------------------------------


def select(
    programs: list[dict[str, Any]], per_language: int | None, languages: Sequence[str]
) -> list[dict[str, Any]]:
    """The first `per_language` programs of each of `languages` (all when None), in that
    order."""
    out = []
    for lang in languages:
        mine = [p for p in programs if p["lang_cluster"] == lang]
        out.extend(mine if per_language is None else mine[:per_language])
    return out


def section_equal(
    engines: tuple[EngineBuild, EngineBuild],
    per_language: int | None,
    workers: Sequence[int],
    overall_workers: Sequence[int],
    one_worker_programs: int | None,
    checks: Checks,
    floors: dict[str, dict[str, float]],
    languages: Sequence[str] = LANGUAGES,
) -> dict[str, Any]:
    base_engine, now_engine = engines
    everything = wl.equal_workload()
    programs = select(everything, per_language, languages)
    dupes = wl.distinct_problems(programs)
    if dupes:
        checks.fail(f"equal workload: repeated sources {dupes}")
    jobs = wl.jobs_for(programs)
    one_worker_ids = {p["id"] for p in select(everything, one_worker_programs, languages)}
    recorded = wl.recorded_verdicts()
    print(f"\n== equal: {len(jobs)} distinct programs, caches empty at every start ({_load()})")
    raw: dict[str, Any] = {"per_language": {}, "overall": {}}
    costs: dict[str, dict[str, float]] = {}
    for w in workers:
        rows = []
        per: dict[str, list[Batch]] = {"baseline": [], "now": []}
        for lang in languages:
            lj = [j for j in jobs if j["language"] == lang]
            if w == 1:
                lj = [j for j in lj if j["id"] in one_worker_ids]
            if not lj:
                continue
            b = run_batch(base_engine, lj, w)
            c = run_batch(now_engine, lj, w)
            per["baseline"].append(b)
            per["now"].append(c)
            rows.append((lang, len(lj), b, c))
            raw["per_language"][f"{lang}/{w}"] = {"baseline": b.__dict__, "now": c.__dict__}
            costs.setdefault(lang, {})[f"base_{w}"] = b.cpu_s / len(lj)
            costs[lang][f"now_{w}"] = c.cpu_s / len(lj)
            _check_batch(f"{lang}, {w} worker(s)", b, c, recorded, checks)
        sums = (_merge(per["baseline"]), _merge(per["now"]))
        rows.append(("all (sum of batches)", sums[0].programs, *sums))
        print(f"\n  {w} worker(s), each language its own batch ({_load()}):")
        print_table(rows)
    for w in overall_workers:
        b = run_batch(base_engine, jobs, w)
        c = run_batch(now_engine, jobs, w)
        raw["overall"][str(w)] = {"baseline": b.__dict__, "now": c.__dict__}
        _check_batch(f"one batch, {w} worker(s)", b, c, recorded, checks)
        print(f"\n  {w} worker(s), all languages as ONE batch ({_load()}):")
        print_table([("all, one batch", len(jobs), b, c)])
    print("\n  amortised CPU seconds per program (getrusage of the driver and its children)")
    print("  against the floor (bare compile + one run of hello world, no sandbox):")
    ws = sorted(workers)
    head = " ".join(f"{'base' + str(w):>7} {'now' + str(w):>7}" for w in ws)
    print(f"  {'language':<11} {head} | {'floor':>6} {'compile':>7} {'run':>6} | now/floor")
    for lang, cost in costs.items():
        fl = floors.get(lang)
        cells = " ".join(f"{cost[f'base_{w}']:7.3f} {cost[f'now_{w}']:7.3f}" for w in ws)
        if fl:
            total = fl["compile_cpu"] + fl["run_cpu"]
            tail = f"{total:6.3f} {fl['compile_cpu']:7.3f} {fl['run_cpu']:6.3f} |"
            tail += f" {cost[f'now_{ws[-1]}'] / total:6.1f}x" if total > 0 else ""
        else:
            tail = "  (floor not measured: add --only floor)"
        print(f"  {lang:<11} {cells} | {tail}")
    raw["costs"] = costs
    return raw


def _check_batch(
    label: str, base: Batch, now: Batch, recorded: dict[str, str], checks: Checks
) -> None:
    for b in (base, now):
        hits = b.hits
        if any(hits):
            checks.fail(
                f"{label}, {b.engine}: cache hits {hits} (results, compiles) on a fresh run"
            )
    compare_verdicts(
        f"{label}: baseline vs now", base.verdicts(), now.verdicts(), checks, fixes=BASELINE_FIXES
    )
    found = now.verdicts()
    unrecorded = [k for k in found if k not in recorded]
    if unrecorded:
        checks.fail(f"{label}: {len(unrecorded)} programs have no recorded verdict")
    rec = {k: recorded[k] for k in found if k in recorded}
    compare_verdicts(f"{label}: recorded vs now", rec, {k: found[k] for k in rec}, checks)


def section_sampled(
    engines: tuple[EngineBuild, EngineBuild], problems: int | None, checks: Checks
) -> dict[str, Any]:
    rows = wl.read_jsonl(wl.SAMPLED_FILE)
    keep = set(wl.SAMPLED_PROBLEMS[:problems] if problems else wl.SAMPLED_PROBLEMS)
    uids = {wl.problems()[p] for p in keep}
    rows = [r for r in rows if r["src_uid"] in uids]
    jobs = wl.jobs_for(rows)
    distinct = len({(r["lang_cluster"], r["source_code"]) for r in rows})
    print(
        f"\n== sampled: {len(rows)} samples ({wl.SAMPLES} per problem and language, {distinct}"
        f" distinct sources), 2 workers, one batch, caches empty at the start ({_load()})"
    )
    batches = [run_batch(e, jobs, 2) for e in engines]
    print(
        f"  {'engine':<9} {'wall s':>7} {'programs/s':>10} {'run':>5} {'result hits':>11} {'compile hits':>12}"
    )
    for b in batches:
        hits = b.hits
        print(
            f"  {b.engine:<9} {b.wall_s:7.1f} {b.rate:10.2f} {b.judged:5d} {hits[0]:11d} {hits[1]:12d}"
        )
    print("  (run: programs the engine ran; identical samples in one batch are judged once)")
    print(f"  now/baseline: {_ratio(batches[1].rate, batches[0].rate)}")
    compare_verdicts(
        "sampled: baseline vs now",
        batches[0].verdicts(),
        batches[1].verdicts(),
        checks,
        fixes=BASELINE_FIXES,
    )
    return {b.engine: b.__dict__ for b in batches}


def section_cache(
    engines: tuple[EngineBuild, EngineBuild],
    per_language: int,
    checks: Checks,
    languages: Sequence[str] = LANGUAGES,
) -> dict[str, Any]:
    programs = select(wl.equal_workload(), per_language, languages)
    jobs = wl.jobs_for(programs)
    # the same programs with their tests reversed: new result keys, same compiled programs
    other = [dict(j, tests=list(reversed(j["tests"]))) for j in jobs]
    print(
        f"\n== cache: {len(jobs)} programs ({per_language} per language), 2 workers: cold run,"
        f" warm rerun (result cache), rerun with reordered tests (compile cache) ({_load()})"
    )
    print(f"  {'engine':<9} {'cold s':>7} {'warm s':>7} {'speed-up':>8} {'other tests s':>13} {'speed-up':>8} {'compile hits':>12}")  # fmt: skip
    raw = {}
    for e in engines:
        with tempfile.TemporaryDirectory(prefix="judge-speed-cache-") as tmp:
            cold = run_batch(e, jobs, 2, Path(tmp))
            warm = run_batch(e, jobs, 2, Path(tmp))
            again = run_batch(e, other, 2, Path(tmp))
        if warm.hits[0] != warm.programs:
            checks.fail(f"cache, {e.name}: warm rerun served {warm.hits[0]}/{warm.programs}")
        compare_verdicts(f"cache, {e.name}: cold vs warm", cold.verdicts(), warm.verdicts(), checks)
        print(
            f"  {e.name:<9} {cold.wall_s:7.2f} {warm.wall_s:7.2f} {cold.wall_s / warm.wall_s:7.0f}x"
            f" {again.wall_s:13.2f} {cold.wall_s / again.wall_s:7.1f}x {again.hits[1]:12d}"
        )
        raw[e.name] = {"cold": cold.wall_s, "warm": warm.wall_s, "other_tests": again.wall_s}
    return raw


# -- main ------------------------------------------------------------------------------------


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Judge speed per language: today's engine against a baseline commit.",
        epilog="Sections: " + ", ".join(SECTIONS) + ". See the module docstring for details.",
    )
    ap.add_argument("--quick", action="store_true", help="12 programs per language, 2 workers")
    ap.add_argument("--only", action="append", choices=SECTIONS, help="run only this section")
    ap.add_argument("--baseline", default=BASELINE_COMMIT, help="baseline commit")
    ap.add_argument("--per-language", type=int, default=None, help="programs per language")
    ap.add_argument("--workers", type=_ints, default=None, help="e.g. 1,2 (per-language batches)")
    ap.add_argument(
        "--one-worker",
        type=int,
        default=None,
        help=f"programs per language in 1-worker batches (default {ONE_WORKER_PER_LANGUAGE})",
    )
    ap.add_argument(
        "--overall-workers",
        type=_ints,
        default=None,
        help="all languages as one batch with these workers, e.g. 2 (default: only with --quick)",
    )
    ap.add_argument("--json", type=Path, default=None, help="write the raw figures here")
    ap.add_argument(
        "--languages", default=None, help="a subset of the equal section, e.g. Kotlin,Java"
    )
    args = ap.parse_args(argv)
    wanted: list[str] = []
    if args.languages:
        wanted = [x.strip() for x in args.languages.split(",") if x.strip()]
        unknown = sorted(set(wanted) - set(LANGUAGES))
        if unknown:
            ap.error(f"unknown languages {unknown}; use {', '.join(LANGUAGES)}")
    languages = [x for x in LANGUAGES if not args.languages or x in wanted]
    sections = args.only or list(SECTIONS)
    per_language = args.per_language or (QUICK_PER_LANGUAGE if args.quick else None)
    workers = args.workers or ([2] if args.quick else [1, 2])
    # all languages as one batch doubles the full run's time (the baseline alone takes ~8 min):
    # on request (--overall-workers 2), and always in the quick run
    overall = args.overall_workers or ([2] if args.quick else [])
    start = time.perf_counter()
    print(f"judge speed: baseline {args.baseline} against today's engine; {_load()}")
    engines = (baseline_build(args.baseline), NOW)
    checks = Checks()
    raw: dict[str, Any] = {}
    floors: dict[str, dict[str, float]] = {}
    if "floor" in sections:
        floors = floor_costs(languages)
        print("\n== floor: bare toolchain, hello world, plain subprocess (median of 3)")
        print(f"  {'language':<11} {'compile CPU s':>13} {'run CPU s':>9} {'wall s':>7}")
        for lang, f in floors.items():
            print(f"  {lang:<11} {f['compile_cpu']:13.3f} {f['run_cpu']:9.3f} {f['wall']:7.3f}")
        raw["floor"] = floors
    if "equal" in sections:
        one = args.one_worker or ONE_WORKER_PER_LANGUAGE
        one = min(one, per_language) if per_language else one
        raw["equal"] = section_equal(
            engines, per_language, workers, overall, one, checks, floors, languages
        )
    if "sampled" in sections:
        raw["sampled"] = section_sampled(
            engines, QUICK_SAMPLED_PROBLEMS if args.quick else None, checks
        )
    if "cache" in sections:
        size = QUICK_CACHE_PER_LANGUAGE if args.quick else per_language or QUICK_PER_LANGUAGE
        raw["cache"] = section_cache(engines, size, checks, languages)
    if args.json:
        args.json.write_text(json.dumps(raw), encoding="utf-8")
    took = time.perf_counter() - start
    print(f"\njudge speed: {took:.0f} s; {_load()}")
    if checks.failures:
        print(f"{len(checks.failures)} check(s) failed:")
        for msg in checks.failures:
            print(f"  - {msg}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
