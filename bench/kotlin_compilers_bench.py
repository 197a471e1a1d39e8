"""Cold compile time of Kotlin programs: the pinned kotlinc under each language version against
another kotlinc (`--other`, e.g. Debian's 1.3 at /usr/bin/kotlinc, where installed).

Each program of the warm-compiler bench's generated workload (valid programs only) is compiled
by the command line of the registry (`-include-runtime -nowarn -d main.jar`, the registry's
JAVA_OPTS) as a plain subprocess, outside the sandbox, compilers alternating program by
program; the figures are the median wall and CPU seconds per program (children's CPU from
`os.wait4`). Nothing here is a test: it prints what it measured.

    python bench/kotlin_compilers_bench.py [--quick] [--other /usr/bin/kotlinc]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from code_eval_taskpack.execution.languages.registry import resolve

sys.path.insert(0, str(Path(__file__).resolve().parent))

from warm_compilers_bench import KOTLIN_STYLES, PROBLEMS, kotlin_program


def compile_once(argv: list[str], source: str, env: dict[str, str]) -> tuple[float, float, bool]:
    """(wall s, CPU s, compiled) of one cold compile in a fresh folder."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "main.kt").write_text(source, encoding="utf-8")
        start = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        return wall, usage.ru_utime + usage.ru_stime, proc.returncode == 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="6 programs instead of every one")
    ap.add_argument("--other", default="", help="another kotlinc to compare (default: none)")
    args = ap.parse_args()
    kotlin = resolve("Kotlin 1.7")
    if not kotlin.available or kotlin.binary is None:
        print(f"Kotlin unavailable: {kotlin.reason}")
        return 1
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": tempfile.gettempdir(),
        "LANG": "C.UTF-8",
        **kotlin.compile_env,
    }
    tail = ["main.kt", "-include-runtime", "-nowarn", "-d", "main.jar"]
    compilers: dict[str, list[str]] = {
        f"{kotlin.version} -language-version {level}": [
            kotlin.binary,
            "-language-version",
            level,
            *tail,
        ]
        for level in ("1.4", "1.7")
    }
    if args.other:
        other = shutil.which(args.other) or args.other
        compilers[f"other: {os.path.realpath(other)}"] = [other, *tail]
    programs = [kotlin_program(p, s) for p in PROBLEMS for s in KOTLIN_STYLES]
    programs = programs[:6] if args.quick else programs
    figures: dict[str, list[tuple[float, float, bool]]] = {name: [] for name in compilers}
    for source in programs:
        for name, argv in compilers.items():
            figures[name].append(compile_once(argv, source, env))
    print(f"cold kotlinc, {len(programs)} programs, load average {os.getloadavg()[0]:.1f}")
    for name, runs in figures.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        ok = sum(r[2] for r in runs)
        print(f"  {name}: median {wall:.2f} s wall, {cpu:.2f} s CPU; {ok}/{len(runs)} compiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
