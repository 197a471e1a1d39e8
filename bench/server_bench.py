"""HTTP server load benchmark on loopback: requests/s and latency at several concurrencies.

A server (default queue, `--workers` engine workers) is started in this process on 127.0.0.1 and
an ephemeral port; at each concurrency (1, 8, 64 by default) that many client threads send a
bounded number of requests, each a tiny static C program printing its own request number (one
compile is shared through the compile cache, so the figure is the server's and the sandbox's cost
per request, not the compiler's). Printed per concurrency: requests/s, p50 and p99 latency, and
the counts that must be zero: lost (no answer or a connection error), wrong (an answer that is not
the client's own program's verdict: swapped or duplicated) and refused (503; the default queue
holds 64 waiting requests, so none is expected up to that concurrency).

Bounded: at most `--requests` per concurrency and `--deadline` seconds overall; loopback only.
Run: `python bench/server_bench.py` (about a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from code_eval_taskpack.execution.languages.registry import resolve
from code_eval_taskpack.execution.server.http import ExecServer, make_server

PROGRAM = '#include <stdio.h>\nint main(void){int n;if(scanf("%d",&n)!=1)return 1;printf("%d\\n",n);return 0;}\n'


@dataclass
class Round:
    concurrency: int
    latencies: list[float] = field(default_factory=list)
    lost: int = 0
    wrong: int = 0
    refused: int = 0
    seconds: float = 0.0


def _one(srv: ExecServer, n: int, deadline: float) -> tuple[str, float]:
    """("ok" | "lost" | "wrong" | "refused", latency in s) of request number n."""
    body = {
        "language": "GNU C11",
        "source_code": PROGRAM,
        "unittests": [{"input": f"{n}\n", "output": [str(n)]}],
    }
    host, port = srv.server_address[:2]
    start = time.perf_counter()
    timeout = max(1.0, deadline - time.monotonic())
    conn = http.client.HTTPConnection(str(host), port, timeout=timeout)
    try:
        conn.request("POST", "/api/execute_code", body=json.dumps(body).encode())
        resp = conn.getresponse()
        payload = json.loads(resp.read())
    except (OSError, ValueError, http.client.HTTPException):
        return "lost", time.perf_counter() - start
    finally:
        conn.close()
    elapsed = time.perf_counter() - start
    if resp.status == 503:
        return "refused", elapsed
    data = payload.get("data") if isinstance(payload, dict) else None
    ok = (
        resp.status == 200
        and isinstance(data, list)
        and len(data) == 1
        and data[0].get("exec_outcome") == "PASSED"
        and data[0].get("result") == str(n)
    )
    return ("ok" if ok else "wrong"), elapsed


def run_round(srv: ExecServer, concurrency: int, requests: int, deadline: float) -> Round:
    rnd = Round(concurrency)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        outcomes = list(pool.map(lambda n: _one(srv, n, deadline), range(requests)))
    rnd.seconds = time.perf_counter() - start
    for status, latency in outcomes:
        if status == "ok":
            rnd.latencies.append(latency)
        else:
            setattr(rnd, status, getattr(rnd, status) + 1)
    return rnd


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workers", type=int, default=None, help="engine workers (default: CPUs)")
    parser.add_argument("--concurrency", default="1,8,64", help="client threads per round")
    parser.add_argument("--requests", type=int, default=128, help="requests per round (max)")
    parser.add_argument("--deadline", type=float, default=300.0, help="seconds for all rounds")
    args = parser.parse_args(argv)
    if not resolve("GNU C11").available:
        print("GNU C11 (gcc) is not available: nothing to measure", file=sys.stderr)
        return 1
    levels = [int(c) for c in args.concurrency.split(",")]
    deadline = time.monotonic() + args.deadline
    srv = make_server("127.0.0.1", 0, workers=args.workers)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    failures = 0
    try:
        run_round(srv, 1, 2, deadline)  # warm-up: compiles once, builds the launcher
        print(f"server load on loopback: {srv.engine.workers} workers, queue {srv.queue_size}")
        print(
            f"{'clients':>7} {'requests':>8} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} "
            f"{'lost':>4} {'wrong':>5} {'503':>4}"
        )
        for level in levels:
            if time.monotonic() >= deadline:
                print(f"{level:>7} skipped: the {args.deadline:g} s deadline has passed")
                continue
            count = max(level, min(args.requests, level * 16))
            rnd = run_round(srv, level, count, deadline)
            rate = count / rnd.seconds if rnd.seconds else float("nan")
            print(
                f"{level:>7} {count:>8} {rate:>7.1f} {_pct(rnd.latencies, 0.5) * 1000:>7.0f} "
                f"{_pct(rnd.latencies, 0.99) * 1000:>7.0f} {rnd.lost:>4} {rnd.wrong:>5} "
                f"{rnd.refused:>4}"
            )
            failures += rnd.lost + rnd.wrong + rnd.refused
            if rnd.latencies:
                mean = statistics.fmean(rnd.latencies)
                print(f"{'':>7} mean latency {mean * 1000:.0f} ms")
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)
    if failures:
        print(f"FAIL: {failures} requests lost, wrong or refused", file=sys.stderr)
        return 1
    print("every request answered with its own verdict")
    return 0


if __name__ == "__main__":
    sys.exit(main())
