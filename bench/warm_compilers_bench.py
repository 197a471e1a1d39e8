"""Warm against cold compilers for Java and Kotlin (and C# on the equal workload): the same
distinct programs judged with
CODE_EVAL_WARM_COMPILERS=0 and =1, at 1 and 2 workers, no caches; prints wall seconds, the
compile CPU/wall the results record, the cold/warm ratio, and whether every verdict is identical.

    python bench/warm_compilers_bench.py [--quick] [--only Java] [--workers 1,2] [--repeat 1]

The programs are generated: eleven small competitive-programming problems, each written in three
input styles (a Scanner, a BufferedReader with a tokenizer, the whole input split at once) with
their own class and helper names, plus wrong answers, a crash and compile errors, so no two
sources are identical. Each batch runs in a child process (servers included: the warm figures
pay the servers' start-up).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: (input, expected output) of each problem
PROBLEMS: dict[str, tuple[str, str]] = {
    "sum": ("5\n3 9 -2 7 1\n", "18"),
    "max": ("6\n4 -8 15 16 -23 42\n", "42"),
    "sort": ("5\n5 3 9 1 3\n", "1 3 3 5 9"),
    "gcd": ("84 36\n", "12"),
    "primes": ("100\n", "25"),
    "fib": ("90\n", "2880067194370816120"),
    "reverse": ("codeforces\n", "secrofedoc"),
    "vowels": ("programmingcontest\n", "5"),
    "upper_bound": ("6\n1 3 3 5 8 13\n4\n", "3"),
    "lis": ("8\n10 9 2 5 3 7 101 18\n", "4"),
    "frequent": ("6\nb a c a b a\n", "a"),
}

JAVA_BODIES: dict[str, str] = {
    "sum": "int n = ni(); long s = 0; for (int i = 0; i < n; i++) s += ni(); out(s);",
    "max": "int n = ni(); int m = Integer.MIN_VALUE; for (int i = 0; i < n; i++) m = Math.max(m, ni()); out(m);",
    "sort": "int n = ni(); int[] a = new int[n]; for (int i = 0; i < n; i++) a[i] = ni(); Arrays.sort(a);\n"
    "    StringBuilder sb = new StringBuilder(); for (int v : a) sb.append(v).append(' '); out(sb.toString().trim());",
    "gcd": "long a = ni(), b = ni(); while (b != 0) { long t = a % b; a = b; b = t; } out(a);",
    "primes": "int n = ni(); boolean[] c = new boolean[n + 1]; int cnt = 0;\n"
    "    for (int i = 2; i <= n; i++) { if (!c[i]) { cnt++; for (long j = (long) i * i; j <= n; j += i) c[(int) j] = true; } } out(cnt);",
    "fib": "int n = ni(); long a = 0, b = 1; for (int i = 0; i < n; i++) { long t = a + b; a = b; b = t; } out(a);",
    "reverse": "String s = ns(); out(new StringBuilder(s).reverse().toString());",
    "vowels": 'String s = ns(); int c = 0; for (char ch : s.toCharArray()) if ("aeiou".indexOf(ch) >= 0) c++; out(c);',
    "upper_bound": "int n = ni(); int[] a = new int[n]; for (int i = 0; i < n; i++) a[i] = ni(); Arrays.sort(a); int x = ni();\n"
    "    int lo = 0, hi = n; while (lo < hi) { int mid = (lo + hi) >>> 1; if (a[mid] <= x) lo = mid + 1; else hi = mid; } out(lo);",
    "lis": "int n = ni(); int[] a = new int[n]; for (int i = 0; i < n; i++) a[i] = ni(); int[] d = new int[n]; int best = 0;\n"
    "    for (int i = 0; i < n; i++) { d[i] = 1; for (int j = 0; j < i; j++) if (a[j] < a[i]) d[i] = Math.max(d[i], d[j] + 1); best = Math.max(best, d[i]); } out(best);",
    "frequent": "int n = ni(); Map<String, Integer> m = new HashMap<>(); for (int i = 0; i < n; i++) m.merge(ns(), 1, Integer::sum);\n"
    "    String bestKey = null; for (Map.Entry<String, Integer> e : new TreeMap<>(m).entrySet())\n"
    "      if (bestKey == null || e.getValue() > m.get(bestKey)) bestKey = e.getKey(); out(bestKey);",
}  # fmt: skip

JAVA_STYLES: dict[str, tuple[str, str, str]] = {
    # (header, class name, helpers)
    "scanner": (
        "import java.util.*;\n",
        "Main",
        "  static Scanner sc = new Scanner(System.in);\n"
        "  static int ni() { return sc.nextInt(); }\n"
        "  static String ns() { return sc.next(); }\n",
    ),
    "tokenizer": (
        "import java.io.*;\nimport java.util.*;\n",
        "Solution",
        "  static BufferedReader br = new BufferedReader(new InputStreamReader(System.in));\n"
        "  static StringTokenizer st;\n"
        "  static String ns() {\n    try {\n      while (st == null || !st.hasMoreTokens())"
        " st = new StringTokenizer(br.readLine());\n"
        "    } catch (IOException e) { throw new UncheckedIOException(e); }\n"
        "    return st.nextToken();\n  }\n"
        "  static int ni() { return Integer.parseInt(ns()); }\n",
    ),
    "split": (
        "package contest.solution;\n\nimport java.io.IOException;\nimport java.util.*;\n",
        "Program",
        "  static String[] tokens;\n  static int pos;\n"
        "  static String ns() {\n    if (tokens == null) {\n"
        '      try { tokens = new String(System.in.readAllBytes()).trim().split("\\\\s+"); }\n'
        "      catch (IOException e) { throw new RuntimeException(e); }\n    }\n"
        "    return tokens[pos++];\n  }\n"
        "  static int ni() { return Integer.parseInt(ns()); }\n",
    ),
}

KOTLIN_BODIES: dict[str, str] = {
    "sum": "val n = ni()\n    var s = 0L\n    repeat(n) { s += ni() }\n    println(s)",
    "max": "val n = ni()\n    var m = Int.MIN_VALUE\n    repeat(n) { m = maxOf(m, ni()) }\n    println(m)",
    "sort": "val n = ni()\n    val a = IntArray(n) { ni() }\n    a.sort()\n    println(a.joinToString(\" \"))",
    "gcd": "var a = ni().toLong()\n    var b = ni().toLong()\n    while (b != 0L) { val t = a % b; a = b; b = t }\n    println(a)",
    "primes": "val n = ni()\n    val c = BooleanArray(n + 1)\n    var cnt = 0\n"
    "    for (i in 2..n) if (!c[i]) { cnt++; var j = i.toLong() * i; while (j <= n) { c[j.toInt()] = true; j += i } }\n    println(cnt)",
    "fib": "val n = ni()\n    var a = 0L\n    var b = 1L\n    repeat(n) { val t = a + b; a = b; b = t }\n    println(a)",
    "reverse": "println(ns().reversed())",
    "vowels": 'println(ns().count { it in "aeiou" })',
    "upper_bound": "val n = ni()\n    val a = IntArray(n) { ni() }.sorted()\n    val x = ni()\n"
    "    var lo = 0\n    var hi = n\n    while (lo < hi) { val mid = (lo + hi) / 2; if (a[mid] <= x) lo = mid + 1 else hi = mid }\n    println(lo)",
    "lis": "val n = ni()\n    val a = IntArray(n) { ni() }\n    val d = IntArray(n) { 1 }\n"
    "    for (i in 0 until n) for (j in 0 until i) if (a[j] < a[i]) d[i] = maxOf(d[i], d[j] + 1)\n    println(d.max() ?: 0)",
    "frequent": "val n = ni()\n    val m = HashMap<String, Int>()\n    repeat(n) { val w = ns(); m[w] = (m[w] ?: 0) + 1 }\n"
    "    println(m.entries.sortedWith(compareBy({ -it.value }, { it.key })).first().key)",
}  # fmt: skip

KOTLIN_STYLES: dict[str, tuple[str, str, str]] = {
    # (header, main signature, helpers)
    "readline": (
        "",
        "fun main()",
        "private var toks = ArrayDeque<String>()\n\n"
        "private fun ns(): String {\n    while (toks.isEmpty()) toks.addAll(readLine()!!.split(' ').filter { it.isNotEmpty() })\n"
        "    return toks.removeFirst()\n}\n\nprivate fun ni() = ns().toInt()\n",
    ),
    "tokenizer": (
        "import java.io.BufferedReader\nimport java.io.InputStreamReader\nimport java.util.StringTokenizer\n",
        "fun main(args: Array<String>)",
        "val br = BufferedReader(InputStreamReader(System.`in`))\nvar st = StringTokenizer(\"\")\n\n"
        "fun ns(): String {\n    while (!st.hasMoreTokens()) st = StringTokenizer(br.readLine())\n    return st.nextToken()\n}\n\n"
        "fun ni(): Int = ns().toInt()\n",
    ),
    "scanner": (
        "import java.util.Scanner\n",
        "fun main(args: Array<String>)",
        "object Input {\n    val sc = Scanner(System.`in`)\n}\n\n"
        "fun ns(): String = Input.sc.next()\nfun ni(): Int = Input.sc.nextInt()\n",
    ),
}  # fmt: skip


def java_program(problem: str, style: str, wrong: bool = False) -> str:
    header, cls, helpers = JAVA_STYLES[style]
    out = "  static void out(Object o) { System.out.println(o); }\n"
    if wrong:
        out = '  static void out(Object o) { System.out.println(o + "0"); }\n'
    body = JAVA_BODIES[problem]
    return (
        f"{header}\npublic class {cls} {{\n{helpers}{out}\n"
        f"  public static void main(String[] args) {{\n    {body}\n  }}\n}}\n"
    )


def kotlin_program(problem: str, style: str, wrong: bool = False) -> str:
    header, main, helpers = KOTLIN_STYLES[style]
    body = KOTLIN_BODIES[problem]
    if wrong:
        body = body.replace("println(", 'print("1");println(', 1)
    if style == "readline":
        header = "import java.util.ArrayDeque\n" + header
    return f"{header}\n{helpers}\n{main} {{\n    {body}\n}}\n"


def workload(lang: str, limit: int | None) -> list[dict[str, Any]]:
    """Distinct programs: every problem in every style, then wrong answers, a crash and
    compile errors; `limit` keeps a prefix that still has each kind."""
    make = java_program if lang == "Java" else kotlin_program
    styles = JAVA_STYLES if lang == "Java" else KOTLIN_STYLES
    jobs: list[dict[str, Any]] = []
    for problem in PROBLEMS:
        for style in styles:
            jobs.append(
                {"id": f"{problem}-{style}", "problem": problem, "source": make(problem, style)}
            )
    for problem, style in (("sum", "scanner"), ("gcd", "tokenizer"), ("lis", "split")):
        style = style if style in styles else next(iter(styles))
        src = make(problem, style, wrong=True)
        jobs.append({"id": f"{problem}-{style}-wrong", "problem": problem, "source": src})
    broken = [
        jobs[0]["source"]
        .replace("s += ni();", "s += ni()", 1)
        .replace("s += ni() }", "s += ni( }"),
        jobs[4]["source"].replace("ni()", "nextInt()", 1),
        jobs[8]["source"]
        .replace("out(", "out(undefinedName + ", 1)
        .replace("println(", "println(undefinedName + ", 1),
    ]
    for k, src in enumerate(broken):
        jobs.append({"id": f"compile-error-{k}", "problem": "sum", "source": src})
    crash = jobs[1]["source"]
    jobs.append(
        {
            "id": "crash",
            "problem": "sum",
            "source": crash.replace("int n = ni()", "int n = ni() / 0", 1).replace(
                "val n = ni()", "val n = ni() / 0", 1
            ),
        }
    )
    order = jobs
    if limit is not None:
        # a spread of problems and styles plus every failing kind
        good = [
            j
            for j in jobs
            if "-" in j["id"]
            and not j["id"].endswith("wrong")
            and not j["id"].startswith("compile")
        ]
        bad = [j for j in jobs if j not in good]
        order = good[: max(1, limit - len(bad))] + bad
    for j in order:
        inp, exp = PROBLEMS[j["problem"]]
        j["tests"] = [[inp, exp]]
    return order


CHILD = r"""
import json, sys, time
from code_eval_taskpack.execution import Engine, Job, TestCase
spec = json.load(sys.stdin)
jobs = [Job(language=spec["language"], source_code=j["source"], id=j["id"],
            tests=tuple(TestCase(input=t[0], output=tuple(t[1:])) for t in j["tests"]),
            time_limit_s=j.get("time_limit_s", 2), memory_limit_mb=j.get("memory_limit_mb", 256))
        for j in spec["jobs"]]
engine = Engine(workers=spec["workers"])
t0 = time.perf_counter()
results = engine.judge_many(jobs)
wall = time.perf_counter() - t0
comp = [r.compile for r in results if r.compile is not None]
json.dump({"wall": wall,
           "compile_cpu": sum(c.time_s for c in comp),
           "compile_wall": sum(c.wall_s or 0.0 for c in comp),
           "warm": sum(1 for c in comp if c.warm),
           "verdicts": {r.id: r.verdict.value for r in results}}, sys.stdout)
"""


def equal_workload(lang: str, limit: int | None) -> list[dict[str, Any]]:
    """The judge-speed bench's equal-weight programs of `lang` (the shared programs and
    bench/workload/equal.jsonl: 106 distinct programs a language, judged on their problems'
    sample tests and limits)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import judge_workload as jw

    programs = [p for p in jw.equal_workload() if p["lang_cluster"] == lang]
    jobs = []
    for j in jw.jobs_for(programs[:limit] if limit else programs):
        tests = [[t["input"], *t["output"]] for t in j["tests"]]
        jobs.append(
            {
                "id": j["id"],
                "source": j["source_code"],
                "tests": tests,
                "time_limit_s": j["time_limit_s"],
                "memory_limit_mb": j["memory_limit_mb"],
            }
        )
    return jobs


def run_batch(lang: str, jobs: list[dict[str, Any]], workers: int, warm: bool) -> dict[str, Any]:
    env = {**os.environ, "CODE_EVAL_WARM_COMPILERS": "1" if warm else "0"}
    spec = {"language": lang, "workers": workers, "jobs": jobs}
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"batch failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="12 programs per language, 2 workers")
    ap.add_argument("--only", default="", help="Java, Kotlin or C# (C#: equal workload only)")
    ap.add_argument("--workers", default="", help="comma-separated worker counts (default 1,2)")
    ap.add_argument("--repeat", type=int, default=1, help="alternate cold/warm N times")
    ap.add_argument("--json", default="", help="write the raw figures here")
    ap.add_argument(
        "--workload",
        choices=("generated", "equal"),
        default="generated",
        help="equal: the Java/Kotlin/C# programs of bench/workload/equal.jsonl (needs shared data)",
    )
    args = ap.parse_args()
    # the generated programs exist in Java and Kotlin; the equal workload has every language
    known = ("Java", "Kotlin") if args.workload == "generated" else ("Java", "Kotlin", "C#")
    langs = [x for x in known if not args.only or x in args.only.split(",")]
    workers = [int(w) for w in args.workers.split(",") if w] or ([2] if args.quick else [1, 2])
    limit = 12 if args.quick else None
    load = os.getloadavg()[0]
    print(f"warm compilers vs cold; load average {load:.2f} on {os.cpu_count()} CPUs at start")
    header = (
        f"{'language':8} {'workers':>7} {'programs':>8} {'cold s':>8} {'warm s':>8} "
        f"{'ratio':>6} {'cold cCPU':>9} {'warm cCPU':>9} {'warm':>5} {'verdicts':>9}"
    )
    print(header)
    raw: list[dict[str, Any]] = []
    ok = True
    for lang in langs:
        jobs = (
            workload(lang, limit) if args.workload == "generated" else equal_workload(lang, limit)
        )
        for w in workers:
            colds, warms = [], []
            for _ in range(max(1, args.repeat)):
                colds.append(run_batch(lang, jobs, w, warm=False))
                warms.append(run_batch(lang, jobs, w, warm=True))
            cold = min(colds, key=lambda r: r["wall"])
            warm = min(warms, key=lambda r: r["wall"])
            same = all(r["verdicts"] == colds[0]["verdicts"] for r in colds + warms)
            ok = ok and same
            print(
                f"{lang:8} {w:7d} {len(jobs):8d} {cold['wall']:8.2f} {warm['wall']:8.2f} "
                f"{cold['wall'] / warm['wall']:5.2f}x {cold['compile_cpu']:9.2f} "
                f"{warm['compile_cpu']:9.2f} {warm['warm']:5d} "
                f"{'identical' if same else 'DIFFER':>9}"
            )
            raw.append({"language": lang, "workers": w, "cold": colds, "warm": warms})
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print(
        "cCPU: compile CPU seconds the results record (cold: the compile's cgroup; warm: the "
        "compile thread only, JIT/GC threads of the server not counted); best of --repeat runs"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
