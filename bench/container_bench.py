"""The container backend against the local backend on the same jobs, in one run: programs/s at
1 and 2 workers, and the cost per program and per test that the container adds (from jobs of 1
and of 8 tests: the per-test cost is the slope, the rest is per program). Needs a Docker daemon
and the judge image (`make image`); says so and exits 0 without them."""

from __future__ import annotations

import argparse
import time

from code_eval_taskpack.execution import Engine, Job, TestCase, resolve
from code_eval_taskpack.execution.backends.container.backend import ContainerBackend

# {tag} makes every source distinct (no cache can serve one program from another)
PYTHON = "# {tag}\na, b = map(int, input().split())\nprint(a + b)\n"
C = '/* {tag} */\n#include <stdio.h>\nint main(void) {{ int a, b; scanf("%d %d", &a, &b); printf("%d\\n", a + b); return 0; }}\n'


def jobs(lang: str, n: int, tests: int, salt: str) -> list[Job]:
    src = PYTHON if lang == "Python 3" else C
    cases = tuple(TestCase(f"{k} 1\n", (str(k + 1),)) for k in range(tests))
    return [Job(lang, src.format(tag=f"{salt}-{i}"), cases, id=str(i)) for i in range(n)]


def seconds(engine: Engine, batch: list[Job]) -> float:
    start = time.perf_counter()
    results = engine.judge_many(batch)
    took = time.perf_counter() - start
    bad = [r for r in results if not r.passed]
    if bad:
        raise SystemExit(f"bench: {len(bad)} jobs failed, e.g. {bad[0].verdict}: {bad[0].detail}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-n", type=int, default=16, help="programs per measurement")
    args = ap.parse_args()
    container = ContainerBackend()
    why = container.host_refusal("required")
    if why:
        print(f"container bench skipped: {why}")
        return
    try:
        print(f"container vs local backend ({args.n} programs a row, no result cache)")
        clusters = container.clusters()
        for lang in ("Python 3", "GNU C11"):
            if clusters is not None and resolve(lang).cluster not in clusters:
                print(f"  {lang}: not in the image")
                continue
            # seconds per program: (backend, workers, tests per program) -> measured
            took: dict[tuple[str, int, int], float] = {}
            for workers in (1, 2):
                for tests in (1, 8):
                    for name, backend in (("local", "local"), ("container", container)):
                        eng = Engine(workers=workers, backend=backend, cache=None)
                        batch = jobs(lang, args.n, tests, f"{name}{workers}{tests}")
                        took[name, workers, tests] = seconds(eng, batch) / args.n
            for workers in (1, 2):
                lo, co = took["local", workers, 8], took["container", workers, 8]
                print(
                    f"  {lang}, {workers} worker(s), 8 tests: local {1 / lo:.1f} programs/s, "
                    f"container {1 / co:.1f} programs/s (x{lo / co:.2f})"
                )
            # 1 worker: the per-test cost is the slope from 1 to 8 tests, the rest per program
            test_ms = {n: (took[n, 1, 8] - took[n, 1, 1]) / 7 * 1e3 for n in ("local", "container")}
            prog_ms = {n: took[n, 1, 1] * 1e3 - test_ms[n] for n in ("local", "container")}
            print(
                f"  {lang}, 1 worker: per test local {test_ms['local']:.1f} ms, container "
                f"{test_ms['container']:.1f} ms ({test_ms['container'] - test_ms['local']:+.1f} ms);"
                f" per program local {prog_ms['local']:.0f} ms, container "
                f"{prog_ms['container']:.0f} ms"
            )
    finally:
        container.close()


if __name__ == "__main__":
    main()
