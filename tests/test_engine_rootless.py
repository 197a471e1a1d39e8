"""Rootless mode for real: the engine run by a non-root user (user namespaces, no cgroups).

Root creates the conditions (CI runs as root): an unused uid, a copy of the package and a
writable cache that uid can use, and a Python it can execute (the machine's own Python may live
under /root, which other users cannot enter). The engine then judges, as that uid, programs that
spread their CPU time and memory over several processes: without cgroups only the sandbox's init,
pid 1 of its pid namespace, sees all of them.
"""

from __future__ import annotations

import errno
import json
import os
import pwd
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, require

#: C programs (GNU C11) and what rootless mode must judge them
BURN = r"""
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
static double cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}
static void burn(double s) { volatile unsigned long x = 0; while (cpu() < s) x++; }
"""

#: two children burn 0.8 s each; SIGCHLD is ignored, so they are reaped by the kernel and their
#: time never reaches the main process's counters
AUTOREAPED = (
    BURN
    + r"""
int main(void) {
    signal(SIGCHLD, SIG_IGN);
    for (int i = 0; i < 2; i++)
        if (fork() == 0) { burn(0.8); _exit(0); }
    while (wait(NULL) > 0) {}  /* -1 (ECHILD) once both children are gone */
    puts("ok");
    return 0;
}
"""
)

#: two grandchildren (orphans, reaped by pid 1) burn 0.8 s each; the main process waits for
#: them through a pipe
ORPHANS = (
    BURN
    + r"""
int main(void) {
    int p[2];
    if (pipe(p) != 0) return 1;
    for (int i = 0; i < 2; i++) {
        if (fork() == 0) {
            if (fork() == 0) { close(p[0]); burn(0.8); _exit(0); }
            _exit(0);
        }
    }
    close(p[1]);
    while (wait(NULL) > 0) {}
    char c;
    while (read(p[0], &c, 1) > 0) {}  /* EOF: both grandchildren are gone */
    puts("ok");
    return 0;
}
"""
)

#: six children of 200 MB each (one more every 50 ms), each under the per-process limit
BALLOONS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    for (int i = 0; i < 6; i++) {
        if (fork() == 0) {
            volatile char *m = malloc(200 << 20);  /* volatile: every page really written */
            if (!m) _exit(3);
            for (int k = 0; k < 200 << 20; k += 4096) m[k] = 1;
            usleep(400000);
            _exit(m[8192] == 1 ? 0 : 4);
        }
        usleep(50000);
    }
    while (wait(NULL) > 0) {}
    puts("ok");
    return 0;
}
"""

#: well-behaved: 150 MB touched, then a child that shares those pages copy-on-write (their
#: resident sets add up to 300 MB, their proportional total stays 150 MB), and children that
#: burn a little CPU and are waited for
SHARED = (
    BURN
    + r"""
int main(void) {
    volatile char *m = malloc(150 << 20);
    for (int k = 0; k < 150 << 20; k += 4096) m[k] = 7;
    pid_t c = fork();
    if (c == 0) { usleep(300000); _exit(m[4096] == 7 ? 0 : 5); }
    int st;
    waitpid(c, &st, 0);
    for (int i = 0; i < 3; i++)
        if (fork() == 0) { burn(0.1); _exit(0); }
    while (wait(NULL) > 0) {}
    int a, b;
    if (scanf("%d %d", &a, &b) != 2) return 1;
    printf("%d\n", a + b);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 6;
}
"""
)

#: one allocation twice the limit, then touched: the sampled total, not a failed malloc (which
#: RLIMIT_AS alone would give), must decide, as the cgroup does as root
BIG_ALLOCATION = r"""
#include <stdlib.h>
int main(void) {
    volatile char *m = malloc(512 << 20);
    if (!m) return 3;
    for (int k = 0; k < 512 << 20; k += 4096) m[k] = 1;
    return m[4096] == 1 ? 0 : 4;
}
"""

CASES: dict[str, tuple[str, str, str]] = {  # id -> (source, stdin, expected verdict)
    "one_big_allocation": (BIG_ALLOCATION, "", "MEMORY_LIMIT_EXCEEDED"),
    "autoreaped_children_cpu": (AUTOREAPED, "", "TIME_LIMIT_EXCEEDED"),
    "orphan_grandchildren_cpu": (ORPHANS, "", "TIME_LIMIT_EXCEEDED"),
    "six_children_memory": (BALLOONS, "", "MEMORY_LIMIT_EXCEEDED"),
    "well_behaved": (SHARED, "2 3\n", "PASSED"),
}

#: run by the unprivileged user: judges the jobs of argv[1] (JSON) and prints the results
DRIVER = """
import json, sys
from execution import Engine, Job, TestCase  # the engine folder on its own, copied for the user
jobs = json.load(open(sys.argv[1]))
engine = Engine(workers=2)
todo = [Job("GNU C11", j["source"], (TestCase(j["stdin"], j["expected"]),),
            time_limit_s=j["time_limit_s"], memory_limit_mb=256, id=j["id"]) for j in jobs]
print(json.dumps([r.to_dict() for r in engine.judge_many(todo)]))
"""


@dataclass
class Rootless:
    uid: int
    python: str
    home: Path

    def run(self, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home / "home"),
            "PYTHONPATH": str(self.home / "pkg"),
            "CODE_EVAL_CACHE": str(self.home / "home" / "cache"),
            "TMPDIR": str(self.home / "home" / "tmp"),
            "LANG": "C.UTF-8",
        }
        ids = [f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups"]
        return subprocess.run(
            ["setpriv", *ids, *argv],
            env=env,
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _unused_uid() -> int:
    rng = random.Random()
    for _ in range(100):
        uid = rng.randrange(61000, 64000)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            owned = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) == uid]
            if not owned:
                return uid
    raise AssertionError("no unused uid found")


def _owner(p: Path) -> int:
    try:
        return p.stat().st_uid
    except OSError:
        return -1


def _python_for(uid: int, home: Path) -> str | None:
    """A Python >= 3.11 (tomllib) that `uid` can execute: this one if its path is traversable
    by others, else the system's."""
    for cand in (sys.executable, "/usr/bin/python3"):
        if not os.path.exists(cand):
            continue
        probe = subprocess.run(
            [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                cand,
                "-c",
                "import tomllib",
            ],
            capture_output=True,
            cwd=home,
        )
        if probe.returncode == 0:
            return cand
    return None


@pytest.fixture(scope="module")
def rootless() -> Iterator[Rootless]:
    require(os.geteuid() == 0, "creating a non-root user for the rootless test needs root")
    for tool in ("setpriv", "unshare", "gcc"):
        require(shutil.which(tool) is not None, f"{tool} is not installed")
    uid = _unused_uid()
    top = Path(tempfile.mkdtemp(prefix="rootless-engine-"))
    try:
        os.chmod(top, 0o755)
        shutil.copytree(
            ROOT / "execution",
            top / "pkg" / "execution",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
        for dirpath, _dirs, filenames in os.walk(top / "pkg"):
            os.chmod(dirpath, 0o755)
            for name in filenames:
                os.chmod(os.path.join(dirpath, name), 0o644)
        (top / "home" / "tmp").mkdir(parents=True)
        for p in (top / "home", top / "home" / "tmp"):
            os.chown(p, uid, uid)
            os.chmod(p, 0o700)
        userns = subprocess.run(
            [
                "setpriv",
                f"--reuid={uid}",
                f"--regid={uid}",
                "--clear-groups",
                "unshare",
                "-U",
                "-r",
                "-p",
                "-f",
                "-n",
                "true",
            ],
            capture_output=True,
            text=True,
            cwd=top,
        )
        require(
            userns.returncode == 0,
            f"unprivileged user namespaces are disabled here: {userns.stderr.strip()}",
        )
        python = _python_for(uid, top)
        require(python is not None, f"no Python >= 3.11 that uid {uid} can execute")
        assert python is not None
        yield Rootless(uid, python, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def outcomes(rootless: Rootless) -> dict[str, dict[str, Any]]:
    jobs = [
        {
            "id": k,
            "source": src,
            "stdin": stdin,
            "expected": ["5"] if k == "well_behaved" else ["ok"],
            # the well-behaved program gets room for a loaded machine (wall = 3 x CPU + 1 s)
            "time_limit_s": 3.0 if k == "well_behaved" else 1.0,
        }
        for k, (src, stdin, _) in CASES.items()
    ]
    spec = rootless.home / "jobs.json"
    spec.write_text(json.dumps(jobs))
    os.chmod(spec, 0o644)
    driver = rootless.home / "driver.py"
    driver.write_text(DRIVER)
    os.chmod(driver, 0o644)
    proc = rootless.run([rootless.python, str(driver), str(spec)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r["id"]: r for r in json.loads(proc.stdout)}


def test_rootless_engine_is_really_unprivileged(outcomes: dict[str, dict[str, Any]]) -> None:
    iso = outcomes["well_behaved"]["isolation"]
    assert iso["user_namespace"] and iso["pid_namespace"], iso
    assert not iso["cgroup"] and not iso["unprivileged_uid"], iso
    assert iso["cpu_enforcement"] == "pid_namespace_sampling", iso
    assert iso["memory_enforcement"] == "pid_namespace_sampling", iso
    assert iso["unenforced"] == [], iso


@pytest.mark.parametrize("case_id", list(CASES))
def test_rootless_limits_cover_every_process(
    outcomes: dict[str, dict[str, Any]], case_id: str
) -> None:
    r = outcomes[case_id]
    expected = CASES[case_id][2]
    assert r["verdict"] == expected, json.dumps(r)[-3000:]
    test = r["tests"][0]
    if expected == "TIME_LIMIT_EXCEEDED":
        # the other processes' CPU was counted (the main process itself burns next to nothing);
        # on a loaded machine the wall limit (4 s) may strike before 1 s of CPU, hence 0.3
        assert test["time_s"] >= 0.3, test
    if expected == "MEMORY_LIMIT_EXCEEDED":
        assert test["memory_mb"] > 256, test


# --------------------------------------------------------------------------------------------
# delegated cgroup v2 (no machine here has one: a fake cgroupfs that enforces the kernel's rules)


class FakeCgroupFS:
    """Writes to a temp-dir cgroup tree behave as the kernel's: `cgroup.procs` moves a process
    out of every other cgroup, `cgroup.subtree_control` enables only controllers the cgroup has
    and refuses (EBUSY) while the cgroup itself holds processes."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, path: Path, text: str) -> None:
        d = path.parent
        if path.name == "cgroup.procs":
            for procs in self.root.rglob("cgroup.procs"):
                procs.write_text("".join(f"{p}\n" for p in procs.read_text().split() if p != text))
            before = path.read_text() if path.exists() else ""  # created by mkdir in the kernel
            path.write_text(before + f"{text}\n")
            return
        if path.name == "cgroup.subtree_control":
            if (d / "cgroup.procs").read_text().split():
                raise OSError(errno.EBUSY, "Device or resource busy")
            have = set((d / "cgroup.controllers").read_text().split())
            enabled = set(path.read_text().split())
            for tok in text.split():
                if tok[1:] not in have:
                    raise OSError(errno.ENOENT, "No such file or directory")
                enabled = enabled | {tok[1:]} if tok[0] == "+" else enabled - {tok[1:]}
            path.write_text(" ".join(sorted(enabled)))
            return
        path.write_text(text)

    def cgroup(self, rel: str, controllers: str, procs: str = "") -> Path:
        d = self.root / rel
        d.mkdir(parents=True, exist_ok=True)
        (d / "cgroup.controllers").write_text(controllers + "\n")
        (d / "cgroup.subtree_control").write_text("")
        (d / "cgroup.procs").write_text(procs)
        return d


def _fake_v2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, own: str, controllers: str) -> Path:
    from code_eval_taskpack.execution.sandbox import cgroups

    fs = FakeCgroupFS(tmp_path / "cg")
    fs.cgroup("", "cpu memory pids")
    (fs.root / "cgroup.subtree_control").write_text("cpu memory pids")
    scope = fs.cgroup(own, controllers, procs=f"{os.getpid()}\n")
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", fs.root)
    monkeypatch.setattr(cgroups, "_own_paths", lambda: {"": "/" + own})
    monkeypatch.setattr(cgroups, "_write", fs.write)
    monkeypatch.setattr(cgroups.os, "geteuid", lambda: 61234)
    return scope


SCOPE = "user.slice/user-61234.slice/user@61234.service/app.slice/run-engine.scope"


def test_delegated_cgroup_v2_is_used_rootless(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user scope with Delegate=yes: the engine moves into a leaf, the scope gets the memory
    and pids controllers for its children, and sandboxes are created below the scope."""
    from code_eval_taskpack.execution.sandbox import cgroups

    scope = _fake_v2(monkeypatch, tmp_path, SCOPE, "memory pids")
    lay = cgroups.detect()
    assert lay.version == "v2" and lay.memory == scope and lay.pids == scope, lay
    leaf = scope / f"engine-{os.getpid()}"
    assert (leaf / "cgroup.procs").read_text().split() == [str(os.getpid())]
    assert (scope / "cgroup.procs").read_text().split() == []
    assert set((scope / "cgroup.subtree_control").read_text().split()) == {"memory", "pids"}
    # a second detection (a new engine in the same process) finds it ready
    assert cgroups.detect().memory == scope


def test_delegated_cgroup_v2_refusals_name_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from code_eval_taskpack.execution.sandbox import cgroups

    # the scope lacks the pids controller (not delegated by the service manager)
    scope = _fake_v2(monkeypatch, tmp_path / "a", SCOPE, "memory")
    lay = cgroups.detect()
    assert lay.version == "" and "lacks the controllers: pids" in lay.reason, lay
    # another process (the shell that started the engine) shares the scope
    scope = _fake_v2(monkeypatch, tmp_path / "b", SCOPE, "memory pids")
    (scope / "cgroup.procs").write_text(f"{os.getpid()}\n4242\n")
    lay = cgroups.detect()
    assert lay.version == "" and "other processes: 4242" in lay.reason, lay
    # not the user's: read-only scope directory
    scope = _fake_v2(monkeypatch, tmp_path / "c", SCOPE, "memory pids")
    monkeypatch.setattr(cgroups.os, "access", lambda p, mode: False)
    lay = cgroups.detect()
    assert lay.version == "" and "not delegated" in lay.reason, lay


# --------------------------------------------------------------------------------------------
# the same accounting without setpriv: cgroups refused in-process (as root: with a uid switch)


@pytest.fixture(scope="module")
def programs() -> Iterator[Path]:
    """The C programs above, compiled static, in a directory every sandbox uid can read."""
    require(shutil.which("gcc") is not None, "gcc is not installed")
    d = Path(tempfile.mkdtemp(prefix="rootless-progs-"))
    try:
        os.chmod(d, 0o755)
        for name, (src, _, _) in CASES.items():
            (d / f"{name}.c").write_text(src)
            subprocess.run(
                ["gcc", "-O2", "-static", "-o", str(d / name), str(d / f"{name}.c")], check=True
            )
            os.chmod(d / name, 0o755)
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_sampling_counts_every_process_when_cgroups_are_refused(
    programs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from code_eval_taskpack.execution.limits import Limits
    from code_eval_taskpack.execution.sandbox import cgroups, host_probe
    from code_eval_taskpack.execution.sandbox.command import Sandbox

    def refuse(tag: str) -> cgroups.CgroupSet:
        raise OSError("refused by the test")

    monkeypatch.setattr(cgroups.CgroupSet, "create", refuse)
    # the host probe runs again under the refusal (and its earlier answer comes back afterwards)
    monkeypatch.setattr(host_probe, "_host", None)
    with Sandbox(ro_paths=[str(programs)]) as sb:
        iso = sb.isolation_snapshot()
        require(bool(iso["pid_namespace"]), f"no pid namespace here: {iso['notes']}")
        assert iso["cpu_enforcement"] == iso["memory_enforcement"] == "pid_namespace_sampling"
        assert iso["unenforced"] == [] and not iso["cgroup"]
        lim = Limits(cpu_s=1.0, memory_mb=256)
        cpu = sb.run([str(programs / "orphan_grandchildren_cpu")], limits=lim)
        assert cpu.timed_out and cpu.cpu_s >= 0.3, cpu
        mem = sb.run([str(programs / "six_children_memory")], limits=lim)
        assert mem.memory_exceeded and mem.peak_memory_mb > 256, mem
        ok = sb.run([str(programs / "well_behaved")], limits=lim.scaled(cpu_s=3.0), stdin=b"2 3")
        assert ok.ok and ok.stdout == b"5\n" and not ok.memory_exceeded, ok


def test_cgroup_path_reports_cgroup_enforcement() -> None:
    from code_eval_taskpack.execution.limits import Limits
    from code_eval_taskpack.execution.sandbox import cgroups
    from code_eval_taskpack.execution.sandbox.command import Sandbox

    lay = cgroups.layout()
    require(bool(lay.version), f"no usable cgroups here: {lay.reason}")
    with Sandbox() as sb:
        out = sb.run(["/bin/true"], limits=Limits(cpu_s=2))
    assert out.ok, out
    iso = out.isolation
    assert iso["memory_enforcement"] == "cgroup" and iso["unenforced"] == [], iso
    if lay.cpuacct is not None:
        assert iso["cpu_enforcement"] == "cgroup", iso
