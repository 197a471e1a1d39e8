"""Programs/s of the remote backend (1 vs 2 judge servers on loopback) and the Ray backend
(a local cluster of 1 vs 2 CPUs) on the same jobs, printed as ratios (one machine: the servers
and the Ray workers share its CPUs, so this measures the backends' overhead and spreading, not a
real cluster's scaling)."""

from __future__ import annotations

import threading
import time

from code_eval_taskpack.execution import Engine, Job, TestCase
from code_eval_taskpack.execution.backends.ray.cluster import RayBackend
from code_eval_taskpack.execution.backends.remote.client import RemoteBackend
from code_eval_taskpack.execution.server.http import make_server

N = 24


def jobs() -> list[Job]:
    src = (
        "import time\ntime.sleep(0.05)\na, b = map(int, input().split())\nprint(a + b + 0 * {i})\n"
    )
    tests = tuple(TestCase(f"{k} 1\n", (str(k + 1),)) for k in range(4))
    return [Job("Python 3", src.format(i=i), tests, id=str(i)) for i in range(N)]


def rate(engine: Engine) -> float:
    start = time.perf_counter()
    engine.judge_many(jobs())
    return N / (time.perf_counter() - start)


def remote(servers: int) -> float:
    srvs = [make_server("127.0.0.1", 0, workers=1) for _ in range(servers)]
    for s in srvs:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    try:
        urls = ",".join(f"http://127.0.0.1:{s.server_address[1]}" for s in srvs)
        return rate(Engine(backend=RemoteBackend(servers=urls)))
    finally:
        for s in srvs:
            s.shutdown()
            s.server_close()


def ray(cpus: int) -> float:
    backend = RayBackend(num_cpus=str(cpus))
    try:
        backend.resolve("Python 3")  # start the cluster outside the timing
        return rate(Engine(backend=backend))
    finally:
        backend.close()


def main() -> None:
    local = rate(Engine(workers=1, backend="local"))
    r1, r2 = remote(1), remote(2)
    print(f"backend scaling ({N} programs x 4 tests): local 1 worker {local:.1f} programs/s")
    print(f"  remote: 1 server {r1:.1f}/s, 2 servers {r2:.1f}/s (x{r2 / r1:.2f})")
    y1, y2 = ray(1), ray(2)
    print(f"  ray: 1 CPU {y1:.1f}/s, 2 CPUs {y2:.1f}/s (x{y2 / y1:.2f})")
    print(f"  overhead vs local 1 worker: remote x{r1 / local:.2f}, ray x{y1 / local:.2f}")


if __name__ == "__main__":
    main()
