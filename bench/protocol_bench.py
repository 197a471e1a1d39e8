"""The paper protocol's judging cost: programs per second per core, local and Ray, projected to
one model's full xCodeEval program-synthesis run (952 problems x 11 languages x 20 samples =
209,440 programs) on 64 cores. One run, two measurements per backend, on N CPUs (default: this
machine's):

- `equal`: the equal-weight judge workload (`judge_workload.py`: real and hand-written programs
  of the 11 languages, the first `--per-language` of each), on the problems' public sample tests
  (about 2 a program). Local with N workers against a local Ray cluster of N CPUs: the ratio is
  what the Ray backend costs against one machine judging alone.
- `hidden`: the same programs with `--tests` tests each, the size of a hidden test set. The
  hidden tests (`unittest_db.json`) are not in the shared data (its README), and neither the
  shared reference (REFERENCE.md sections 2 and 7: the file's format, and 1,831 sample tests for
  848 programs) nor the data give their number per problem: `--tests` is an assumption, stated
  in the output (default `HIDDEN_TESTS`). The tests are the problem's sample tests cycled, so a
  wrong program stops at its first failing test (stop on first fail, as ExecEval and xCodeEval
  judge) and a right one runs them all, as on the hidden set.

From the two measurements the cost is split into a per-program part (compile, sandbox) and a
per-test part, so the projection can be redone for another tests-per-program figure.

Every run is a fresh process on fresh caches: what a process prepares once (the interpreters'
start-up files, the Go tools, the compiler servers' classes, the count of programs sharing a
header, the toolchains' versions) is prepared in every run, on every backend, as a node judge
(a fresh actor per run) must. Each run first judges one tiny program (outside the timing, on
both backends: Ray's cluster and node judge come up then); the warm-up of compilers is inside
the timing on both. Verdicts of the backends must agree (else the bench fails).

The machine may be shared: other work takes wall time from whichever run it lands on. So the
equal workload is measured `--rounds` times, local and Ray alternating (each round in the other
order), and the median of the rounds' ratios is the figure, printed with their spread and each
run's load average. Every run also reports the CPU time of its whole process tree by part
(`process_cpu.py`: driver, Ray's daemons, node judges, programs), which other work inflates
much less: the CPU ratio is what the backend costs on a machine of its own. Ray's processes
also spend CPU at rest (heartbeats, monitors): measured after each Ray run and printed
apart, never subtracted. The container backend (`container/backend.py`, one judge container of N job
slots) joins the equal-workload rounds when a Docker daemon and a judge image are there (else
the reason is printed): the image of every language when one was built (`make image`, label
`code-eval.langs=all`; it then judges the hidden-sized workload too), else
`code-eval-judge:latest` on the languages it holds (local is then measured on the same subset,
and the output says the image is partial). The container's CPU time is its cgroup's (the
programs run under the Docker daemon, outside this process tree) plus the driver's tree. On a
shared machine the container's wall time is at a disadvantage that is not the backend's: the
daemon puts every container in one cgroup, which the kernel weighs as one task against each
process of the rest of the machine, so the CPU ratio is the figure to read there. Per language,
the sandboxes' CPU time of both backends and the toolchain versions (the host's and the
image's may differ: the ratio is also given over the languages whose versions agree).

Run: `python bench/protocol_bench.py` (`make bench`), `--per-language 4` for a quick look.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import judge_workload as wl  # noqa: E402
import process_cpu  # noqa: E402

from code_eval_taskpack.execution import Engine, Job, TestCase, resolve  # noqa: E402
from code_eval_taskpack.execution.backends.container.backend import ContainerBackend  # noqa: E402
from code_eval_taskpack.execution.backends.ray.cluster import RayBackend  # noqa: E402
from code_eval_taskpack.execution.types import Result  # noqa: E402

PROBLEMS, LANGUAGES, SAMPLES = 952, 11, 20
PROTOCOL_PROGRAMS = PROBLEMS * LANGUAGES * SAMPLES  # 209,440
PROJECTED_CORES = 64
#: the assumed size of a hidden test set (see the module docstring: not in the shared data)
HIDDEN_TESTS = 50
GOAL_S = 600.0
#: seconds Ray's processes are watched at rest after a Ray run
REST_S = 5.0
#: the marker of a run's line in a child's output
RUN_LINE = "protocol-bench-run "
#: the judge image when no image of every language was built (the CI one: a few languages)
DEFAULT_IMAGE = "code-eval-judge:latest"


@dataclass
class Run:
    backend: str
    workload: str
    programs: int
    tests: int  # tests the programs were given in all
    wall_s: float
    cpus: int
    verdicts: list[str]
    sandbox_cpu_s: float  # compile and test CPU the results record
    cpu: dict[str, float]  # CPU seconds of the process tree by part (`process_cpu.PARTS`)
    # per language cluster: the sandboxes' CPU seconds and the toolchain versions seen
    languages: dict[str, tuple[float, list[str]]] = dataclasses.field(default_factory=dict)
    # per language cluster: the compiles' CPU seconds and the number of programs
    compiles: dict[str, tuple[float, int]] = dataclasses.field(default_factory=dict)
    load: float = 0.0  # 1-minute load average as the run started
    rest_cpu_per_s: float = 0.0  # CPU seconds a second of Ray's processes at rest (Ray only)
    order: int = 0  # place in the plan

    @property
    def tree_cpu_s(self) -> float:
        return sum(self.cpu.values())

    @property
    def busy(self) -> float:
        """Share of the CPUs' wall time that went into the sandboxed compiles and tests."""
        return self.sandbox_cpu_s / (self.wall_s * self.cpus)

    @property
    def per_core(self) -> float:
        return self.programs / self.wall_s / self.cpus


def workload(per_language: int, tests: int | None, languages: Sequence[str] = ()) -> list[Job]:
    """The first `per_language` programs of each language (of `languages` only, when given),
    on sample tests (None) or `tests` tests cycled from the samples."""
    programs = wl.equal_workload()
    chosen: list[dict[str, Any]] = []
    for lang in sorted({p["lang_cluster"] for p in programs}):
        chosen += [p for p in programs if p["lang_cluster"] == lang][:per_language]
    jobs = []
    for j in wl.jobs_for(chosen):
        if languages and j["language"] not in languages:
            continue
        samples = [TestCase(t["input"], tuple(t["output"])) for t in j["tests"]]
        cases = samples if tests is None else [samples[k % len(samples)] for k in range(tests)]
        jobs.append(
            Job(
                j["language"],
                j["source_code"],
                tuple(cases),
                time_limit_s=float(j["time_limit_s"]),
                memory_limit_mb=int(j["memory_limit_mb"]),
                id=j["id"],
            )
        )
    return jobs


# -- one run (in a process of its own) -----------------------------------------------------------

WARM = Job("Python 3", "print(1)\n", (TestCase("", ("1",)),))


def container_cpu_s(backend: ContainerBackend) -> float:
    """CPU seconds of the backend's live judge containers so far, from their cgroups (v1
    cpuacct or v2 cpu.stat, found through the container's first process)."""
    total = 0.0
    for name in backend.container_names():
        proc = subprocess.run(
            [backend.docker, "inspect", "-f", "{{.State.Pid}}", name],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        pid = proc.stdout.strip()
        if proc.returncode != 0 or not pid.isdigit() or pid == "0":
            continue
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if "cpuacct" in controllers.split(","):
                usage = Path("/sys/fs/cgroup/cpuacct", path.lstrip("/"), "cpuacct.usage")
                total += int(usage.read_text()) / 1e9
                break
            if controllers == "":
                stat = Path("/sys/fs/cgroup", path.lstrip("/"), "cpu.stat")
                if stat.is_file():
                    fields = dict(ln.split() for ln in stat.read_text().splitlines())
                    total += int(fields.get("usage_usec", 0)) / 1e6
    return total


def by_language(jobs: list[Job], results: list[Result]) -> dict[str, tuple[float, list[str]]]:
    """Per language cluster: the sandboxes' CPU seconds of a run and its toolchain versions."""
    cpu: dict[str, float] = {}
    versions: dict[str, set[str]] = {}
    for job, r in zip(jobs, results, strict=True):
        cluster = resolve(job.language).cluster
        spent = (r.compile.time_s if r.compile else 0.0) + sum(t.time_s for t in r.tests)
        cpu[cluster] = cpu.get(cluster, 0.0) + spent
        versions.setdefault(cluster, set()).add(str(r.runtime.get("version")))
    return {c: (cpu[c], sorted(versions[c])) for c in cpu}


def compiles_by_language(jobs: list[Job], results: list[Result]) -> dict[str, tuple[float, int]]:
    """Per language cluster: the compiles' CPU seconds of a run and its number of programs
    (an interpreted language's programs compile nothing: 0 seconds)."""
    out: dict[str, tuple[float, int]] = {}
    for job, r in zip(jobs, results, strict=True):
        cluster = resolve(job.language).cluster
        spent, count = out.get(cluster, (0.0, 0))
        out[cluster] = (spent + (r.compile.time_s if r.compile else 0.0), count + 1)
    return out


def measure(
    engine: Engine,
    jobs: list[Job],
    backend: str,
    name: str,
    cpus: int,
    container: ContainerBackend | None = None,
) -> Run:
    """One timed batch; the CPU of `container`'s judge containers is a part of its own."""
    load = os.getloadavg()[0]
    before = process_cpu.by_part()
    boxed0 = container_cpu_s(container) if container else 0.0
    start = time.perf_counter()
    results: list[Result] = engine.judge_many(jobs)
    wall = time.perf_counter() - start
    cpu = process_cpu.spent(before, process_cpu.by_part())
    if container:
        cpu["container"] = max(0.0, container_cpu_s(container) - boxed0)
    if any(r.cached for r in results):
        raise SystemExit(f"bench: {backend} {name}: cache hits in a cold run")
    return Run(
        backend,
        name,
        len(jobs),
        sum(len(j.tests) for j in jobs),
        wall,
        cpus,
        [r.verdict.value for r in results],
        sum(
            (r.compile.time_s if r.compile else 0.0) + sum(t.time_s for t in r.tests)
            for r in results
        ),
        cpu,
        by_language(jobs, results),
        compiles_by_language(jobs, results),
        load,
    )


def local_run(jobs: list[Job], name: str, cpus: int, image: str = "") -> Run:
    Engine(workers=cpus, backend="local").judge(WARM)  # as Ray's warm-up, outside the timing
    return measure(Engine(workers=cpus, backend="local"), jobs, "local", name, cpus)


def ray_run(jobs: list[Job], name: str, cpus: int, image: str = "") -> Run:
    """On a local Ray cluster started for this run (its nodes see the fresh cache folder)."""
    ray = RayBackend(num_cpus=str(cpus))
    try:
        Engine(backend=ray).judge(WARM)  # the cluster and its node judges, outside the timing
        run = measure(Engine(backend=ray), jobs, "ray", name, cpus)
        before = process_cpu.by_part()
        time.sleep(REST_S)
        run.rest_cpu_per_s = sum(process_cpu.spent(before, process_cpu.by_part()).values()) / (
            REST_S
        )
        return run
    finally:
        ray.close()


def full_image() -> str:
    """The newest judge image of every language (`make image`), "" when none was built."""
    proc = subprocess.run(
        ["docker", "images", "-q", "--filter", "label=code-eval.langs=all"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    ids = proc.stdout.split() if proc.returncode == 0 else []
    return ids[0] if ids else ""


def container_jobs(jobs: list[Job], image: str) -> tuple[list[Job], str]:
    """The jobs the judge image can judge, or none and why the container backend is left out."""
    if not shutil.which("docker"):
        return [], "no docker command (make container-tools image)"
    backend = ContainerBackend(image=image)
    try:
        why = backend.host_refusal("required")
        if why:
            return [], why
        clusters = backend.clusters()
    finally:
        backend.close()
    if clusters is None:
        return list(jobs), ""
    kept = [j for j in jobs if resolve(j.language).cluster in clusters]
    return kept, "" if kept else f"the judge image holds none of the languages ({clusters})"


def container_run(jobs: list[Job], name: str, cpus: int, image: str = "") -> Run:
    """One judge container of N job slots (started before the timing, as Ray's node judges
    are; a fresh one each run, so its warm compilers and headers start cold as local's do)."""
    backend = ContainerBackend(image=image or DEFAULT_IMAGE, jobs_per_container=str(cpus))
    try:
        warm = [Job("Python 3", f"print({k})\n", (TestCase("", (str(k),)),)) for k in range(cpus)]
        Engine(workers=cpus, backend=backend).judge_many(warm)
        engine = Engine(workers=cpus, backend=backend)
        return measure(engine, jobs, "container", name, cpus, container=backend)
    finally:
        backend.close()


RUNNERS: dict[str, Callable[[list[Job], str, int, str], Run]] = {
    "local": local_run,
    "ray": ray_run,
    "container": container_run,
}


@dataclass(frozen=True)
class Spec:
    """What a run judges: the workload's programs, with sample or `tests` tests."""

    per_language: int
    tests: int | None
    languages: tuple[str, ...] = ()

    def jobs(self) -> list[Job]:
        return workload(self.per_language, self.tests, self.languages)

    def argv(self) -> list[str]:
        out = ["--per-language", str(self.per_language)]
        out += ["--run-tests", str(self.tests or 0), "--languages", ",".join(self.languages)]
        return out


def run_fresh(
    backend: str, name: str, spec: Spec, cpus: int, cache: Path, order: int, image: str
) -> Run:
    """One run in a fresh Python process whose `CODE_EVAL_CACHE` is the empty folder `cache`."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--one", backend, name]
    argv += [*spec.argv(), "--cpus", str(cpus), "--image", image]
    env = {**os.environ, "CODE_EVAL_CACHE": str(cache)}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith(RUN_LINE)]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout)[-2000:]
        raise SystemExit(f"bench: the {backend} {name} run failed ({done.returncode}): {tail}")
    fields = json.loads(lines[-1][len(RUN_LINE) :])
    langs = {c: (float(v[0]), list(v[1])) for c, v in fields.pop("languages").items()}
    compiles = {c: (float(v[0]), int(v[1])) for c, v in fields.pop("compiles").items()}
    return Run(**{**fields, "languages": langs, "compiles": compiles, "order": order})


def one(argv: Sequence[str]) -> int:
    """The child's side of `run_fresh`: judge, print the run as one JSON line."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--one", nargs=2, metavar=("BACKEND", "WORKLOAD"), required=True)
    ap.add_argument("--per-language", type=int, required=True)
    ap.add_argument("--run-tests", type=int, required=True)
    ap.add_argument("--languages", default="")
    ap.add_argument("--cpus", type=int, required=True)
    ap.add_argument("--image", default="")
    args = ap.parse_args(argv)
    backend, name = args.one
    langs = tuple(x for x in args.languages.split(",") if x)
    spec = Spec(args.per_language, args.run_tests or None, langs)
    run = RUNNERS[backend](spec.jobs(), name, args.cpus, args.image)
    print(RUN_LINE + json.dumps(dataclasses.asdict(run)), flush=True)
    return 0


# -- the report ----------------------------------------------------------------------------------


@dataclass
class Pair:
    """A round's two runs of one workload: local and the other backend."""

    local: Run
    other: Run

    @property
    def wall(self) -> float:
        return self.other.per_core / self.local.per_core

    @property
    def cpu(self) -> float:
        return self.local.tree_cpu_s / max(1e-9, self.other.tree_cpu_s)


def median_run(runs: list[Run]) -> Run:
    """The run of median wall time (the lower one of an even count)."""
    ordered = sorted(runs, key=lambda r: r.wall_s)
    return ordered[(len(ordered) - 1) // 2]


def cpu_parts(r: Run) -> str:
    per = {k: v / r.programs for k, v in r.cpu.items() if v > 0.0 or k == "programs"}
    return ", ".join(f"{k} {v:.3f}" for k, v in per.items())


def report(runs: list[Run]) -> None:
    r = median_run(runs)
    walls = sorted(x.wall_s for x in runs)
    spread = f", {walls[0]:.1f}-{walls[-1]:.1f} s" if len(runs) > 1 else ""
    print(
        f"  {r.backend:9} {r.workload:9} {r.tests / r.programs:5.1f} tests/program: "
        f"{r.wall_s:7.1f} s (median of {len(runs)}{spread}; load {r.load:.1f}), "
        f"{r.per_core:6.3f} programs/s/core, {r.tree_cpu_s / r.programs:5.3f} CPU-s/program "
        f"({cpu_parts(r)}), {r.busy:4.0%} of CPU time in sandboxes"
    )


def ratio_line(pairs: list[Pair]) -> str:
    """The median of the rounds' ratios, with their spread and the 10% goal's verdict."""
    walls, cpus = [p.wall for p in pairs], [p.cpu for p in pairs]
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    goal = "within" if wall >= 0.9 else "outside"
    out = f"x{wall:.2f} wall ({goal} 10%"
    if len(pairs) > 1:
        inside = sum(w >= 0.9 for w in walls)
        out += f"; median of {len(pairs)} rounds, x{min(walls):.2f}-x{max(walls):.2f}, "
        out += f"{inside} of {len(pairs)} within"
    out += f"), x{cpu:.2f} by CPU time ({'within' if cpu >= 0.9 else 'outside'}"
    if len(pairs) > 1:
        out += f"; x{min(cpus):.2f}-x{max(cpus):.2f}"
    return out + ")"


def rounds_table(pairs: list[Pair]) -> None:
    for k, p in enumerate(pairs, 1):
        first, second = sorted((p.local, p.other), key=lambda r: r.order)
        print(
            f"    round {k}: {first.backend} {first.wall_s:.1f} s (load {first.load:.1f}, "
            f"{first.tree_cpu_s:.1f} CPU-s), then {second.backend} {second.wall_s:.1f} s "
            f"(load {second.load:.1f}, {second.tree_cpu_s:.1f} CPU-s): x{p.wall:.2f} wall, "
            f"x{p.cpu:.2f} by CPU"
        )


def pairs_of(runs: list[Run], backend: str, workload: str) -> list[Pair]:
    """Each round's local run of `workload` with its `backend` run (in plan order)."""
    mine = sorted((r for r in runs if r.workload == workload), key=lambda r: r.order)
    local = [r for r in mine if r.backend == "local"]
    other = [r for r in mine if r.backend == backend]
    return [Pair(a, b) for a, b in zip(local, other, strict=True)]


def check_verdicts(runs: list[Run], jobs: dict[str, list[Job]]) -> bool:
    """Every run of a workload gives the verdicts of its first local run."""
    for r in runs:
        ref = next(x for x in runs if (x.backend, x.workload) == ("local", r.workload))
        diff = [k for k, (x, y) in enumerate(zip(ref.verdicts, r.verdicts, strict=True)) if x != y]
        if diff:
            shown = [(jobs[r.workload][k].id, ref.verdicts[k], r.verdicts[k]) for k in diff[:5]]
            print(f"bench: {r.workload}: local and {r.backend} disagree on {len(diff)}: {shown}")
            return False
    return True


def language_split(pairs: list[Pair]) -> list[str]:
    """Lines comparing the sandboxes' CPU time per language (summed over the rounds), and the
    ratio over the languages whose toolchain versions agree between the host and the image."""
    lo: dict[str, float] = {}
    co: dict[str, float] = {}
    versions: dict[str, tuple[set[str], set[str]]] = {}
    for p in pairs:
        for cluster, (cpu, vs) in p.local.languages.items():
            lo[cluster] = lo.get(cluster, 0.0) + cpu
            versions.setdefault(cluster, (set(), set()))[0].update(vs)
        for cluster, (cpu, vs) in p.other.languages.items():
            co[cluster] = co.get(cluster, 0.0) + cpu
            versions.setdefault(cluster, (set(), set()))[1].update(vs)
    lines, same_lo, same_co, differ = [], 0.0, 0.0, []
    for cluster in sorted(lo):
        a, b = lo[cluster], co.get(cluster, 0.0)
        va, vb = versions[cluster]
        same = va == vb
        if same:
            same_lo, same_co = same_lo + a, same_co + b
        else:
            differ.append(cluster)
        shown = "/".join(sorted(va)) + ("" if same else f" on the host, {'/'.join(sorted(vb))}")
        lines.append(
            f"    {cluster:10} sandbox CPU local {a:6.1f} s, container {b:6.1f} s "
            f"(x{a / max(1e-9, b):.2f}); toolchain {shown}{'' if same else ' in the image'}"
        )
    lines.append(
        f"    sandbox CPU, all languages: x{sum(lo.values()) / max(1e-9, sum(co.values())):.2f}; "
        f"the {len(lo) - len(differ)} with the same toolchain versions: "
        f"x{same_lo / max(1e-9, same_co):.2f}"
        + (f" (versions differ: {', '.join(differ)})" if differ else "")
    )
    return lines


def rest_line(runs: list[Run]) -> str:
    ray = [r for r in runs if r.backend == "ray"]
    rate = statistics.median(r.rest_cpu_per_s for r in ray)
    wall = sum(r.wall_s for r in ray)
    tree = sum(r.tree_cpu_s for r in ray)
    return (
        f"  Ray's processes at rest (driver, daemons, node judge; {REST_S:.0f} s after each Ray "
        f"run): {rate * 1000:.0f} CPU-ms per second, ~{rate * wall:.1f} CPU-s of the Ray runs' "
        f"{tree:.1f} over their {wall:.0f} s: counted in Ray's CPU time above, not subtracted"
    )


def projection(c_eq: float, c_hid: float, sample_tests: float, tests: int) -> str:
    """Core-seconds a program = fixed + per test x tests (from the two workloads), and the
    protocol's wall time on `PROJECTED_CORES` cores from the hidden-sized cost."""
    per_test = max(0.0, (c_hid - c_eq) / max(1e-9, tests - sample_tests))
    fixed = max(0.0, c_eq - per_test * sample_tests)
    wall = PROTOCOL_PROGRAMS * c_hid / PROJECTED_CORES
    verdict = "within" if wall <= GOAL_S else "over"
    return (
        f"{fixed:.3f} core-s per program + {per_test * 1000:.1f} core-ms per test; "
        f"{PROTOCOL_PROGRAMS:,} programs x {tests} tests on {PROJECTED_CORES} cores: "
        f"{wall / 60:.1f} min ({verdict} the {GOAL_S / 60:.0f}-min goal)"
    )


def compile_floor(runs: list[Run]) -> str:
    """What the compiles alone cost the protocol: the mean compile CPU of a program with the
    languages weighted equally (the protocol judges as many programs of each), over the local
    runs of the equal workload, times the protocol's programs, spread over the projected cores.
    No backend and no tests-per-program figure takes a protocol below it."""
    spent: dict[str, float] = {}
    count: dict[str, int] = {}
    for r in runs:
        if (r.backend, r.workload) != ("local", "equal"):
            continue
        for cluster, (s, n) in r.compiles.items():
            spent[cluster] = spent.get(cluster, 0.0) + s
            count[cluster] = count.get(cluster, 0) + n
    per = {c: spent[c] / count[c] for c in sorted(spent) if count[c]}
    mean = statistics.fmean(per.values()) if per else 0.0
    wall = PROTOCOL_PROGRAMS * mean / PROJECTED_CORES
    shown = ", ".join(f"{c} {v * 1000:.0f}" for c, v in per.items())
    runs_of = sum(1 for r in runs if (r.backend, r.workload) == ("local", "equal"))
    each = max(count.values(), default=0) // max(1, runs_of)
    return (
        f"  compiles alone (local, equal workload, {each} programs a language a run, the "
        f"compile servers' warm-up included; CPU-ms per program: {shown}): mean "
        f"{mean:.3f} core-s per program with the {len(per)} languages weighted equally; "
        f"{PROTOCOL_PROGRAMS:,} programs on {PROJECTED_CORES} cores: {wall / 60:.1f} min "
        f"before any test runs"
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--one" in argv:
        return one(argv)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-language", type=int, default=12, help="programs per language")
    ap.add_argument("--tests", type=int, default=HIDDEN_TESTS, help="tests per program (hidden)")
    ap.add_argument("--cpus", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the equal workload")
    ap.add_argument("--hidden-rounds", type=int, default=1, help="rounds of the hidden one")
    ap.add_argument("--no-container", action="store_true", help="leave the container backend out")
    ap.add_argument("--no-ray", action="store_true", help="leave the Ray backend out")
    ap.add_argument(
        "--image", default="", help="judge image (default: the full one when built, else latest)"
    )
    ap.add_argument("--runs-json", type=Path, help="also write every run (CPU by part) here")
    args = ap.parse_args(argv)
    cpus, rounds = args.cpus, max(1, args.rounds)
    equal, hidden = Spec(args.per_language, None), Spec(args.per_language, args.tests)
    image = args.image
    if not image and not args.no_container and shutil.which("docker"):
        image = full_image() or DEFAULT_IMAGE
    boxed_jobs, why = (
        ([], "--no-container") if args.no_container else container_jobs(equal.jobs(), image)
    )
    # the image of every language judges the equal workload itself; a partial one a subset
    full = bool(boxed_jobs) and len(boxed_jobs) == len(equal.jobs())
    boxed_name = "equal" if full else "container"
    boxed = Spec(args.per_language, None, tuple(sorted({j.language for j in boxed_jobs})))
    others = [] if args.no_ray else ["ray"]
    plan: list[tuple[str, str, Spec]] = []
    for k in range(rounds):  # local and the others alternate: each round in the other order
        order = [("local", "equal", equal)] + [(b, "equal", equal) for b in others]
        if boxed_jobs:
            if not full:
                order.append(("local", boxed_name, boxed))
            order.append(("container", boxed_name, boxed))
        plan += order if k % 2 == 0 else order[::-1]
    # the hidden-sized workload on the container too when its image holds every language
    hidden_by = others + (["container"] if full else [])
    for k in range(max(1, args.hidden_rounds)):
        order = [("local", "hidden", hidden)] + [(b, "hidden", hidden) for b in hidden_by]
        plan += order if k % 2 == 0 else order[::-1]
    runs: list[Run] = []
    start_load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="protocol-bench-") as tmp:
        for n, (backend, name, spec) in enumerate(plan):
            cache = Path(tmp) / f"{n}-{backend}"
            runs.append(run_fresh(backend, name, spec, cpus, cache, n, image))
    if args.runs_json:
        args.runs_json.write_text(json.dumps([dataclasses.asdict(r) for r in runs], indent=1))
    jobs = {"equal": equal.jobs(), "hidden": hidden.jobs(), "container": boxed.jobs()}
    if not check_verdicts(runs, jobs):
        return 1
    load = os.getloadavg()
    n = len(jobs["equal"])
    print(
        f"protocol bench: {n} programs ({args.per_language} per language, 11 languages), "
        f"{cpus} CPUs, each run a fresh process on fresh caches; load average "
        f"{start_load[0]:.1f} {start_load[1]:.1f} {start_load[2]:.1f} at the start, "
        f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end (1, 5, 15 min)"
    )
    names = [("local", "equal")] + [(b, "equal") for b in others]
    if boxed_jobs:
        names += [] if full else [("local", boxed_name)]
        names += [("container", boxed_name)]
    names += [("local", "hidden")] + [(b, "hidden") for b in hidden_by]
    for backend, name in names:
        report([r for r in runs if (r.backend, r.workload) == (backend, name)])
    for b in others:
        eq_pairs = pairs_of(runs, b, "equal")
        print(f"  {b} {cpus} CPUs / local {cpus} workers, equal workload: {ratio_line(eq_pairs)}")
        rounds_table(eq_pairs)
    if boxed_jobs:
        langs = sorted({resolve(j.language).cluster for j in boxed_jobs})
        kind = (
            f"the full judge image ({len(langs)} languages)"
            if full
            else f"a PARTIAL judge image ({len(langs)} of 11 languages: {', '.join(langs)}; "
            "`make image` builds the full one)"
        )
        box_pairs = pairs_of(runs, "container", boxed_name)
        print(
            f"  container {cpus} job slots / local {cpus} workers, equal workload on {kind}, "
            f"{len(boxed_jobs)} programs, image {ContainerBackend(image=image).image_id()[:19]}: "
            f"{ratio_line(box_pairs)}; CPU time with the container's cgroup"
        )
        rounds_table(box_pairs)
        print("\n".join(language_split(box_pairs)))
    else:
        print(f"  container backend left out: {why}")
    for b in hidden_by:
        hid_pairs = pairs_of(runs, b, "hidden")
        print(f"  {b} / local, hidden-sized: {ratio_line(hid_pairs)}")
        if len(hid_pairs) > 1:
            rounds_table(hid_pairs)
    if others:
        print(rest_line(runs))
    first = next(r for r in runs if r.workload == "equal")
    sample_tests = first.tests / first.programs
    print(
        f"  tests per program: {args.tests} assumed for a hidden set (not in the shared data); "
        f"the sample tests are {sample_tests:.1f} a program"
    )
    for backend in ["local", *hidden_by]:
        eq = median_run([r for r in runs if (r.backend, r.workload) == (backend, "equal")])
        hid = median_run([r for r in runs if (r.backend, r.workload) == (backend, "hidden")])
        for basis, c_eq, c_hid in (
            ("wall", 1 / eq.per_core, 1 / hid.per_core),
            ("CPU", eq.tree_cpu_s / eq.programs, hid.tree_cpu_s / hid.programs),
        ):
            print(f"  {backend} by {basis}: {projection(c_eq, c_hid, sample_tests, args.tests)}")
    print(compile_floor(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
