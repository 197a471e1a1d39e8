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
per-test part, so the projection can be redone for another tests-per-program figure. Every
run starts with empty caches; Ray's start-up (cluster, node judges) is outside the timing, the
warm-up of compilers is not (it happens in the timed batch on both backends). Verdicts of the
backends must agree (else the bench fails).

The machine may be shared: other work takes wall time from whichever run it lands on. So the
equal workload is measured `--rounds` times per backend, the backends interleaved (each round in
another order), and the best wall time of each counts; every run also reports the CPU time of
its whole process tree (driver, Ray's daemons and node judges, compilers, sandboxes), which other
work does not inflate: the CPU ratio is what the backend costs on a machine of its own. The
container backend (`container.py`, one judge container of N job slots) joins the equal-workload
rounds when a Docker daemon and a judge image are there (else the reason is printed): the image
of every language when one was built (`make image`, label `code-eval.langs=all`; it then judges
the hidden-sized workload too), else
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
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import judge_workload as wl  # noqa: E402

from code_eval_taskpack.execution import Engine, Job, TestCase, resolve  # noqa: E402
from code_eval_taskpack.execution.backends.container import ContainerBackend  # noqa: E402
from code_eval_taskpack.execution.backends.raycluster import RayBackend  # noqa: E402
from code_eval_taskpack.execution.types import Result  # noqa: E402

PROBLEMS, LANGUAGES, SAMPLES = 952, 11, 20
PROTOCOL_PROGRAMS = PROBLEMS * LANGUAGES * SAMPLES  # 209,440
PROJECTED_CORES = 64
#: the assumed size of a hidden test set (see the module docstring: not in the shared data)
HIDDEN_TESTS = 50
GOAL_S = 600.0


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
    tree_cpu_s: float  # CPU of this process and all its descendants during the run
    results: list[Result]

    @property
    def busy(self) -> float:
        """Share of the CPUs' wall time that went into the sandboxed compiles and tests."""
        return self.sandbox_cpu_s / (self.wall_s * self.cpus)

    @property
    def per_core(self) -> float:
        return self.programs / self.wall_s / self.cpus


def workload(per_language: int, tests: int | None) -> list[Job]:
    """The first `per_language` programs of each language, on sample tests (None) or `tests`
    tests cycled from the samples."""
    programs = wl.equal_workload()
    chosen: list[dict[str, Any]] = []
    for lang in sorted({p["lang_cluster"] for p in programs}):
        chosen += [p for p in programs if p["lang_cluster"] == lang][:per_language]
    jobs = []
    for j in wl.jobs_for(chosen):
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


def tree_cpu_s() -> float:
    """CPU seconds of this process and every live descendant (with what they reaped), read
    from /proc: Ray's daemons and node judges are the driver's descendants on a local cluster."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        parent[int(entry.name)] = int(fields[1])
        cpu[int(entry.name)] = sum(int(f) for f in fields[11:15]) / tick
    mine, todo = {os.getpid()}, [os.getpid()]
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in mine:
                mine.add(child)
                todo.append(child)
    return sum(cpu.get(pid, 0.0) for pid in mine)


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


def measure(
    engine: Engine,
    jobs: list[Job],
    backend: str,
    name: str,
    cpus: int,
    container: ContainerBackend | None = None,
) -> Run:
    """One timed batch; the CPU time of `container`'s judge containers counts with the tree."""
    cpu0 = tree_cpu_s() + (container_cpu_s(container) if container else 0.0)
    start = time.perf_counter()
    results: list[Result] = engine.judge_many(jobs)
    wall = time.perf_counter() - start
    tree = tree_cpu_s() + (container_cpu_s(container) if container else 0.0) - cpu0
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
        tree,
        results,
    )


def cold_caches(root: Path, name: str) -> None:
    """A fresh cache folder (precompiled headers, start-up files, launcher) for the next run:
    no run profits from what an earlier one left on disk or in warm compilers."""
    from code_eval_taskpack.execution import warm_compiler

    warm_compiler.POOL.close()
    os.environ["CODE_EVAL_CACHE"] = str(root / name)


def local_run(jobs: list[Job], name: str, cpus: int, root: Path) -> Run:
    cold_caches(root, f"local-{name}")
    return measure(Engine(workers=cpus, backend="local"), jobs, "local", name, cpus)


def ray_run(jobs: list[Job], name: str, cpus: int, root: Path) -> Run:
    """On a local Ray cluster started for this run (its nodes see the fresh cache folder)."""
    cold_caches(root, f"ray-{name}")
    ray = RayBackend(num_cpus=str(cpus))
    try:
        warm = Job("Python 3", "print(1)\n", (TestCase("", ("1",)),))
        Engine(backend=ray).judge(warm)  # the cluster and its node judges, outside the timing
        return measure(Engine(backend=ray), jobs, "ray", name, cpus)
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


def container_run(jobs: list[Job], name: str, cpus: int, root: Path, image: str) -> Run:
    """One judge container of N job slots (started before the timing, as Ray's node judges
    are; a fresh one each run, so its warm compilers and headers start cold as local's do)."""
    cold_caches(root, f"container-{name}")
    backend = ContainerBackend(image=image, jobs_per_container=str(cpus))
    try:
        warm = [Job("Python 3", f"print({k})\n", (TestCase("", (str(k),)),)) for k in range(cpus)]
        Engine(workers=cpus, backend=backend).judge_many(warm)
        engine = Engine(workers=cpus, backend=backend)
        return measure(engine, jobs, "container", name, cpus, container=backend)
    finally:
        backend.close()


RUNNERS = {"local": local_run, "ray": ray_run}


def best(runs: list[Run], backend: str, workload: str) -> Run:
    """The least disturbed (shortest) of a backend's runs of a workload."""
    return min(
        (r for r in runs if (r.backend, r.workload) == (backend, workload)),
        key=lambda r: r.wall_s,
    )


def report(r: Run, rounds: int) -> None:
    print(
        f"  {r.backend:9} {r.workload:9} {r.tests / r.programs:5.1f} tests/program: "
        f"{r.wall_s:7.1f} s (best of {rounds}), {r.programs / r.wall_s:6.2f} programs/s, "
        f"{r.per_core:6.3f} programs/s/core, {r.tree_cpu_s / r.programs:5.2f} CPU-s/program "
        "(process tree), "
        f"{r.busy:4.0%} of CPU time in sandboxes"
    )


def sandbox_cpu(run: Run, jobs: list[Job]) -> dict[str, tuple[float, set[str]]]:
    """Per language cluster: the sandboxes' CPU seconds of a run and its toolchain versions."""
    out: dict[str, tuple[float, set[str]]] = {}
    for job, r in zip(jobs, run.results, strict=True):
        cluster = resolve(job.language).cluster
        cpu, versions = out.get(cluster, (0.0, set()))
        cpu += (r.compile.time_s if r.compile else 0.0) + sum(t.time_s for t in r.tests)
        out[cluster] = (cpu, versions | {str(r.runtime.get("version"))})
    return out


def language_split(local: Run, boxed: Run, jobs: list[Job]) -> list[str]:
    """Lines comparing the sandboxes' CPU time per language, and the ratio over the languages
    whose toolchain versions agree between the host and the image."""
    lo, co = sandbox_cpu(local, jobs), sandbox_cpu(boxed, jobs)
    lines, same_lo, same_co, differ = [], 0.0, 0.0, []
    for cluster in sorted(lo):
        (a, va), (b, vb) = lo[cluster], co[cluster]
        same = va == vb
        if same:
            same_lo, same_co = same_lo + a, same_co + b
        else:
            differ.append(cluster)
        versions = "/".join(sorted(va)) + ("" if same else f" on the host, {'/'.join(sorted(vb))}")
        lines.append(
            f"    {cluster:10} sandbox CPU local {a:6.1f} s, container {b:6.1f} s "
            f"(x{a / max(1e-9, b):.2f}); toolchain {versions}{'' if same else ' in the image'}"
        )
    total_lo, total_co = sum(v[0] for v in lo.values()), sum(v[0] for v in co.values())
    lines.append(
        f"    sandbox CPU, all languages: x{total_lo / max(1e-9, total_co):.2f}; the "
        f"{len(lo) - len(differ)} with the same toolchain versions: "
        f"x{same_lo / max(1e-9, same_co):.2f}"
        + (f" (versions differ: {', '.join(differ)})" if differ else "")
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-language", type=int, default=12, help="programs per language")
    ap.add_argument("--tests", type=int, default=HIDDEN_TESTS, help="tests per program (hidden)")
    ap.add_argument("--cpus", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--rounds", type=int, default=2, help="runs per backend of the equal workload")
    ap.add_argument("--no-container", action="store_true", help="leave the container backend out")
    ap.add_argument("--no-ray", action="store_true", help="leave the Ray backend out")
    ap.add_argument(
        "--image", default="", help="judge image (default: the full one when built, else latest)"
    )
    args = ap.parse_args(argv)
    equal, hidden = workload(args.per_language, None), workload(args.per_language, args.tests)
    cpus, rounds = args.cpus, max(1, args.rounds)
    image = args.image
    if not image and not args.no_container and shutil.which("docker"):
        image = full_image() or "code-eval-judge:latest"
    boxed, why = ([], "--no-container") if args.no_container else container_jobs(equal, image)
    # the image of every language judges the equal workload itself; a partial one a subset
    boxed_name = "equal" if len(boxed) == len(equal) else "container"
    others = [] if args.no_ray else ["ray"]
    plan: list[tuple[str, str, list[Job]]] = []
    for k in range(rounds):  # interleaved, each round in another order
        order = [("local", "equal", equal)] + [(b, "equal", equal) for b in others]
        if boxed:
            order.append(("container", boxed_name, boxed))
            if boxed_name != "equal":
                order.append(("local", boxed_name, boxed))
        order = order[k % len(order) :] + order[: k % len(order)]
        plan += order
    # the hidden-sized workload on the container too when its image holds every language
    hidden_by = others + (["container"] if boxed and boxed_name == "equal" else [])
    plan += [("local", "hidden", hidden)] + [(b, "hidden", hidden) for b in hidden_by]
    saved = os.environ.get("CODE_EVAL_CACHE")
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="protocol-bench-") as tmp:
        try:
            for n, (backend, name, jobs) in enumerate(plan):
                if backend == "container":
                    runs.append(container_run(jobs, f"{name}-{n}", cpus, Path(tmp), image))
                else:
                    runs.append(RUNNERS[backend](jobs, f"{name}-{n}", cpus, Path(tmp)))
                runs[-1].workload = name
        finally:
            if saved is None:
                os.environ.pop("CODE_EVAL_CACHE", None)
            else:
                os.environ["CODE_EVAL_CACHE"] = saved
    for r in runs:  # every run of a workload gives the verdicts of the first local run
        ref = next(x for x in runs if (x.backend, x.workload) == ("local", r.workload))
        diff = [k for k, (x, y) in enumerate(zip(ref.verdicts, r.verdicts, strict=True)) if x != y]
        if diff:
            jobs = {"equal": equal, "hidden": hidden, "container": boxed}[r.workload]
            shown = [(jobs[k].id, ref.verdicts[k], r.verdicts[k]) for k in diff[:5]]
            print(f"bench: {r.workload}: local and {r.backend} disagree on {len(diff)}: {shown}")
            return 1
    load = os.getloadavg()
    n = len(equal)
    sample_tests = best(runs, "local", "equal").tests / n
    print(
        f"protocol bench: {n} programs ({args.per_language} per language, 11 languages), "
        f"{cpus} CPUs, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} (1, 5, 15 min)"
    )
    names = [("local", "equal")] + [(b, "equal") for b in others]
    if boxed:
        names += [("local", boxed_name)] if boxed_name != "equal" else []
        names += [("container", boxed_name)]
    names += [("local", "hidden")] + [(b, "hidden") for b in hidden_by]
    for backend, name in names:
        report(best(runs, backend, name), rounds if name != "hidden" else 1)

    def ratios(backend: str, name: str) -> str:
        a, b = best(runs, "local", name), best(runs, backend, name)
        goal = "within" if b.per_core >= 0.9 * a.per_core else "outside"
        wall = f"x{b.per_core / a.per_core:.2f} wall ({goal} 10%)"
        by_cpu = a.tree_cpu_s / max(1e-9, b.tree_cpu_s)
        return wall + f", x{by_cpu:.2f} by CPU time ({'within' if by_cpu >= 0.9 else 'outside'})"

    for b in others:
        print(f"  {b} {cpus} CPUs / local {cpus} workers, equal workload: {ratios(b, 'equal')}")
    if boxed:
        langs = sorted({resolve(j.language).cluster for j in boxed})
        kind = (
            f"the full judge image ({len(langs)} languages)"
            if boxed_name == "equal"
            else f"a PARTIAL judge image ({len(langs)} of 11 languages: {', '.join(langs)}; "
            "`make image` builds the full one)"
        )
        print(
            f"  container {cpus} job slots / local {cpus} workers, equal workload on {kind}, "
            f"{len(boxed)} programs, image {ContainerBackend(image=image).image_id()[:19]}: "
            f"{ratios('container', boxed_name)}; CPU time with the container's cgroup"
        )
        print("\n".join(language_split(best(runs, "local", boxed_name),
                                        best(runs, "container", boxed_name), boxed)))  # fmt: skip
    else:
        print(f"  container backend left out: {why}")
    for b in hidden_by:
        print(f"  {b} / local, hidden-sized: {ratios(b, 'hidden')}")
    print(
        f"  tests per program: {args.tests} assumed for a hidden set (not in the shared data); "
        f"the sample tests are {sample_tests:.1f} a program"
    )
    for backend in ["local", *hidden_by]:
        eq, hid = best(runs, backend, "equal"), best(runs, backend, "hidden")
        # core-seconds per program = fixed + per_test * tests (two points)
        c_eq, c_hid = 1 / eq.per_core, 1 / hid.per_core
        per_test = max(0.0, (c_hid - c_eq) / max(1e-9, args.tests - sample_tests))
        fixed = max(0.0, c_eq - per_test * sample_tests)
        wall = PROTOCOL_PROGRAMS * c_hid / PROJECTED_CORES
        verdict = "within" if wall <= GOAL_S else "over"
        print(
            f"  {backend}: {fixed:.3f} core-s per program + {per_test * 1000:.1f} core-ms per test;"
            f" {PROTOCOL_PROGRAMS:,} programs x {args.tests} tests on {PROJECTED_CORES} cores: "
            f"{wall / 60:.1f} min ({verdict} the {GOAL_S / 60:.0f}-min goal)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
