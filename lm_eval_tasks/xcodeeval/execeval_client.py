"""A client that talks to an ExecEval-style server exactly as the xCodeEval authors' scripts do.

ExecEval's `eval_passk.py` reads samples `{src_uid, task_id, lang, source_code}` and a unit-test
database keyed by src_uid, asks `/api/all_runtimes` for the runtime names, sends one
`/api/execute_code` request per sample with the fields below, and counts a sample as correct when
every returned test has `exec_outcome == "PASSED"`; a response without `data` (an error) is
printed and the sample dropped. This module reproduces that protocol field for field (our own code,
written from the API description) so tests and `bench/execeval_passk.py` can check our server
against it; unlike the original it counts the dropped samples instead of hiding them.

Request body: `{language, source_code, unittests, limits, compile_cmd, compile_flags,
execute_cmd, execute_flags, block_network, stop_on_first_fail, use_sanitizer}`, with `limits`
from the client's `limits_by_lang.yaml` (`LIMITS_BY_LANG`) and the four commands null unless a
per-language configuration sets them.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from code_eval_taskpack.execution.execeval.compat import EXECEVAL_LIMITS_BY_LANG
from code_eval_taskpack.execution.execeval.compat import OUTCOMES as EXECEVAL_OUTCOMES
from code_eval_taskpack.execution.languages.registry import CLUSTER_RUNTIMES
from code_eval_taskpack.utils.metrics import pass_at_k
from lm_eval_tasks.xcodeeval.data import problem_set, read_jsonl

#: the authors' `limits_by_lang.yaml`, as shipped (see ../shared/docs/EXECEVAL_RUNTIMES.md)
LIMITS_BY_LANG: dict[str, dict[str, int]] = EXECEVAL_LIMITS_BY_LANG

#: the runtime names the published ExecEval run of the shared ChatGPT predictions (MapCoder's
#: client) judged each cluster with, where they are not the cluster's own (the engine registry's
#: [clusters]): ExecEval's outcomes for those programs are for these names
PREDICTIONS_JUDGED_AS: dict[str, str] = {
    "C": "GNU C",
    "C#": "C# 10",
    "Python": "Python 3",
    "Ruby": "Ruby",
    "Rust": "Rust",
}
#: the runtime each cluster of the shared predictions is judged with
CLUSTER_RUNTIME: dict[str, str] = {
    cluster: PREDICTIONS_JUDGED_AS.get(cluster, own) for cluster, own in CLUSTER_RUNTIMES.items()
}
#: ExecEval's outcome set
OUTCOMES = frozenset(EXECEVAL_OUTCOMES)


class ExecEvalClient:
    """`/api/all_runtimes` and `/api/execute_code` of a server at `url` (one connection per
    request, so the client is safe to share between threads)."""

    def __init__(self, url: str = "http://localhost:5000", timeout: float = 600.0) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme != "http" or not parsed.hostname:
            raise ValueError(f"expected an http://host:port URL, got {url!r}")
        self.host = parsed.hostname
        self.port = parsed.port or 80
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            data = None if body is None else json.dumps(body).encode("utf-8")
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())
        finally:
            conn.close()

    def get_runtimes(self) -> list[dict[str, Any]]:
        status, reply = self._call("GET", "/api/all_runtimes")
        if status != 200 or not isinstance(reply, list):
            raise RuntimeError(f"/api/all_runtimes answered {status}: {reply!r}")
        return reply

    def execute_code(
        self,
        language: str,
        source_code: str,
        unittests: list[dict[str, Any]],
        limits: dict[str, Any] | None,
        block_network: bool | int = True,
        stop_on_first_fail: bool | int = True,
        use_sanitizer: bool | int = False,
        compile_cmd: str | None = None,
        compile_flags: str | None = None,
        execute_cmd: str | None = None,
        execute_flags: str | None = None,
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """The `data` list, or the whole reply (e.g. `{"error": ...}`) when it has none."""
        body = {
            "language": language,
            "source_code": source_code,
            "unittests": unittests,
            "limits": limits if isinstance(limits, dict) else {},
            "compile_cmd": compile_cmd,
            "compile_flags": compile_flags,
            "execute_cmd": execute_cmd,
            "execute_flags": execute_flags,
            "block_network": block_network,
            "stop_on_first_fail": stop_on_first_fail,
            "use_sanitizer": use_sanitizer,
        }
        _, reply = self._call("POST", "/api/execute_code", body)
        if isinstance(reply, dict) and "data" in reply:
            return list(reply["data"])
        return reply if isinstance(reply, dict) else {"error": f"unexpected reply {reply!r}"}


@dataclass
class SampleResult:
    index: int
    task_id: str
    lang: str
    passed: bool
    outcome: str  # the first non-PASSED outcome, or PASSED (eval_passk's `exec_outcome`)
    unittests: list[dict[str, Any]]


@dataclass
class PassKReport:
    """What eval_passk computes, plus what it silently drops."""

    results: list[SampleResult] = field(default_factory=list)
    skipped_unsupported: Counter[str] = field(default_factory=Counter)
    skipped_no_tests: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)
    pass_at_k: dict[str, float] = field(default_factory=dict)

    def passed_by_lang(self) -> dict[str, tuple[int, int]]:
        """lang -> (programs passing, programs judged)."""
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for r in self.results:
            out[r.lang][0] += r.passed
            out[r.lang][1] += 1
        return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def evaluate(
    client: ExecEvalClient,
    samples: Sequence[Mapping[str, Any]],
    unittest_db: Mapping[str, list[dict[str, Any]]],
    ks: Sequence[int] = (1,),
    n_workers: int = 4,
    limits_by_lang: Mapping[str, dict[str, Any]] = LIMITS_BY_LANG,
    commands_by_lang: Mapping[str, Mapping[str, str | None]] | None = None,
    progress: Callable[[int, int], None] | None = None,
    block_network: bool | int = True,
    stop_on_first_fail: bool | int = True,
    use_sanitizer: bool | int = False,
) -> PassKReport:
    """eval_passk's loop: filter samples as it does, one request each, pass@k over task_id.
    The three flags are sent as given, as eval_passk does: its command line (`fire`) makes
    `--use_sanitizer 0` the integer 0, which its authors' README passes."""
    report = PassKReport()
    supported = {r["runtime_name"] for r in client.get_runtimes()}
    commands_by_lang = commands_by_lang or {}
    jobs: list[tuple[int, Mapping[str, Any], list[dict[str, Any]]]] = []
    for idx, sample in enumerate(samples):
        tests = unittest_db.get(sample["src_uid"])
        if tests is None or len(tests) == 0:
            report.skipped_no_tests += 1
            continue
        if sample["lang"] not in supported:
            report.skipped_unsupported[sample["lang"]] += 1
            continue
        jobs.append((idx, sample, tests))

    def run(job: tuple[int, Mapping[str, Any], list[dict[str, Any]]]) -> Any:
        _, sample, tests = job
        lang = sample["lang"]
        cmds = commands_by_lang.get(lang, {})
        return client.execute_code(
            lang,
            sample["source_code"],
            tests,
            limits_by_lang[lang],
            block_network,
            stop_on_first_fail,
            use_sanitizer,
            cmds.get("compile_cmd"),
            cmds.get("compile_flags"),
            cmds.get("execute_cmd"),
            cmds.get("execute_flags"),
        )

    by_task: dict[str, list[tuple[int, bool]]] = defaultdict(list)
    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        for done, ((idx, sample, _), reply) in enumerate(
            zip(jobs, pool.map(run, jobs), strict=True), 1
        ):
            if progress is not None:
                progress(done, len(jobs))
            if not isinstance(reply, list):
                report.errors.append((idx, str(reply.get("error", reply))))
                continue
            passed = all(x.get("exec_outcome") == "PASSED" for x in reply)
            failing = [x.get("exec_outcome") for x in reply if x.get("exec_outcome") != "PASSED"]
            task_id = str(sample.get("task_id", sample["src_uid"]))
            report.results.append(
                SampleResult(
                    idx, task_id, sample["lang"], passed, str((failing or ["PASSED"])[0]), reply
                )
            )
            by_task[task_id].append((idx, passed))
    report.pass_at_k = _mean_pass_at_k([[p for _, p in v] for v in by_task.values()], ks)
    return report


def _mean_pass_at_k(problems: Sequence[Sequence[bool]], ks: Sequence[int]) -> dict[str, float]:
    """pass@k averaged over problems, as eval_passk reports it; a k that some problem has fewer
    samples for is left out of the table rather than estimated."""
    return {
        f"pass@{k}": sum(pass_at_k(len(p), sum(p), k) for p in problems) / len(problems)
        for k in ks
        if problems and all(len(p) >= k for p in problems)
    }


def shared_samples(
    predictions: Path, problems: Path
) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """The shared ChatGPT programs as eval_passk samples, and a unit-test database of the
    problems' public sample tests (`{"input", "output": [...]}` per test)."""
    db = {uid: p.sample_tests() for uid, p in problem_set(problems).usable.items()}
    samples = []
    for row in read_jsonl(predictions):
        samples.append(
            {
                "src_uid": row["src_uid"],
                "task_id": row["src_uid"],
                "lang": CLUSTER_RUNTIME[row["lang_cluster"]],
                "source_code": row["source_code"],
            }
        )
    return samples, db
