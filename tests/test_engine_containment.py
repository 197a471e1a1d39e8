"""The sandbox fails closed and cleans up after hostile programs.

- isolation is decided once per process by a probe; a failure after it is that job's error, never
  a rerun with fewer layers, and the `required` policy (the default) refuses degraded hosts;
- cleanup survives what a program can build (deep chains, mode 000, symlink loops, FIFOs,
  sockets), and a stale tree that cannot be removed never breaks a new engine;
- nothing of the host shows inside (/proc/1/cmdline, /proc/1/environ, /proc/self/mountinfo);
- the production launcher has no test hook and a real usage message.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase, Verdict
from code_eval_taskpack.execution.backends import local as local_backend
from code_eval_taskpack.execution.caches.files import cache_root
from code_eval_taskpack.execution.cli.main import main as cli_main
from code_eval_taskpack.execution.isolation import REQUIRED_LAYERS, IsolationRefused, SandboxError
from code_eval_taskpack.execution.limits import Limits
from code_eval_taskpack.execution.sandbox import host_probe
from code_eval_taskpack.execution.sandbox.command import Sandbox, run_command
from code_eval_taskpack.execution.sandbox.fstree import chown_tree, remove_tree
from code_eval_taskpack.execution.sandbox.host_probe import HostIsolation, host_isolation
from code_eval_taskpack.execution.sandbox.launcher import launcher_binary
from tests.conftest import ROOT, require, require_binary, require_runtime

PY = "/usr/bin/python3"
CLI = (sys.executable, "-m", "code_eval_taskpack.execution")
DEPTH = 5000
#: on a journaling disk each level costs milliseconds: deep enough to defeat recursion (1000)
DISK_DEPTH = 1500


def _no_namespaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the start-up probe finds on a host without namespaces."""
    monkeypatch.setattr(
        host_probe, "_host", HostIsolation(False, True, "unshare: Operation not permitted (test)")
    )


def _escape_job(marker: Path, padding: int = 0) -> Job:
    """A program that would leave `marker` on the host if it ran outside the namespaces."""
    src = f"import os\nopen({str(marker)!r}, 'w').write('escaped')\nprint('ok')\n" + (
        "#" * 79 + "\n"
    ) * (padding // 80)
    return Job("Python 3", src, (TestCase("", ("ok",)),), time_limit_s=5)


def _require_full_sandbox() -> None:
    host = host_isolation()
    require(host.namespaces, f"no namespaces here: {host.detail}")
    require(host.seccomp, "launcher built without libseccomp")


# -- §1 never fall back -----------------------------------------------------------------------


def test_required_refuses_a_host_without_namespaces(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_runtime("Python 3")
    _no_namespaces(monkeypatch)
    with pytest.raises(IsolationRefused, match="best-effort"):
        Sandbox()
    marker = tmp_path / "escaped"
    r = Engine(workers=1).judge(_escape_job(marker))
    assert r.verdict is Verdict.INFRA_ERROR and "best-effort" in r.detail, r.detail
    assert not marker.exists()
    # the CLI refuses before taking any work, naming the way out
    src = tmp_path / "a.py"
    src.write_text(_escape_job(marker).source_code)
    tests = tmp_path / "t.json"
    tests.write_text('[{"input": "", "output": ["ok"]}]')
    argv = ["run", "--language", "Python 3", "--source", str(src), "--tests", str(tests)]
    assert cli_main(argv) == 1
    assert "--isolation best-effort" in capsys.readouterr().err
    assert not marker.exists()


def test_degraded_sandbox_is_reported_and_still_contained(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only under an explicit best-effort policy does a host without namespaces run programs,
    and `isolation` lists every missing layer."""
    require_binary("python3")
    _no_namespaces(monkeypatch)
    code = (
        b"import os, time\npid = os.fork()\nif pid == 0:\n    os.setsid()\n    time.sleep(60)\n"
        b"print(pid)\n"
    )
    with Sandbox(files={"a.py": code}, isolation="best-effort") as sb:
        out = sb.run([PY, "a.py"], limits=Limits(cpu_s=5))
        assert out.ok, out
        daemon = int(out.stdout)  # a host pid: no pid namespace here
        if out.isolation["cgroup"]:
            with pytest.raises(ProcessLookupError):  # killed through the cgroup
                os.kill(daemon, 0)
        else:  # nothing can find a setsid() daemon without a pid namespace or cgroup
            os.kill(daemon, 9)
        iso = out.isolation
        assert iso["policy"] == "best-effort"
        assert not iso["pid_namespace"] and not iso["fs_view"]
        assert {"pid_namespace", "net_namespace", "fs_view"} <= set(iso["missing"])
        assert any("namespaces unavailable" in n for n in iso["notes"])
        if os.geteuid() == 0:
            assert iso["unprivileged_uid"]
            who = sb.run([PY, "-c", "import os; print(os.getuid())"], limits=Limits(cpu_s=5))
            assert int(who.stdout) == sb.uid != 0


def test_full_sandbox_reports_policy_and_no_missing_required_layer() -> None:
    _require_full_sandbox()
    with Sandbox() as sb:
        iso = sb.isolation_snapshot()
    assert iso["policy"] == "required"
    assert not set(REQUIRED_LAYERS) & set(iso["missing"]), iso


def test_source_larger_than_the_box_never_runs_outside_namespaces(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The copy into the work tmpfs fails with ENOSPC: an error of this job, not a reason to run
    the program on the host (1 MiB box, 2 MiB source: the same path as 512 MiB and more)."""
    require_runtime("Python 3")
    _require_full_sandbox()
    monkeypatch.setattr(local_backend, "Sandbox", functools.partial(Sandbox, box_mb=1))
    marker = tmp_path / "escaped"
    for policy in ("required", "best-effort"):
        r = Engine(workers=1, isolation=policy).judge(_escape_job(marker, padding=2 << 20))
        assert r.verdict in (Verdict.INFRA_ERROR, Verdict.COMPILATION_ERROR), r.detail
        assert not r.tests or all(t.verdict is not Verdict.PASSED for t in r.tests)
        assert not marker.exists(), f"{policy}: the program ran on the host"
        assert "copy" in r.detail, r.detail  # the launcher's own reason


def test_namespace_start_failing_after_the_probe_is_an_error(tmp_path: Path) -> None:
    require_runtime("Python 3")
    _require_full_sandbox()  # the probe has run and found namespaces
    failing = ("unshare", "run")
    marker = tmp_path / "escaped"
    for policy in ("required", "best-effort"):
        with pytest.raises(SandboxError, match="unshare"):
            Sandbox(isolation=policy, test_fail_stage=failing)
        backend = local_backend.LocalBackend(test_fail_stage=failing)
        r = Engine(workers=1, isolation=policy, backend=backend).judge(_escape_job(marker))
        assert r.verdict is Verdict.INFRA_ERROR and "unshare" in r.detail, r.detail
        assert r.compile is None and not r.tests
        assert not marker.exists(), f"{policy}: the program ran without namespaces"


def test_cgroup_failing_after_the_probe_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a host whose probe made a cgroup, a later failure to make one is the job's error, not
    a run limited by an address-space rlimit instead."""
    from code_eval_taskpack.execution.sandbox import cgroups

    host = host_isolation()
    require(host.cgroups, f"no usable cgroups here: {host.cgroup_detail}")

    def fail(tag: str) -> cgroups.CgroupSet:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cgroups.CgroupSet, "create", staticmethod(fail))
    for policy in ("required", "best-effort"):
        with pytest.raises(SandboxError, match="cgroup"):
            Sandbox(isolation=policy)


def test_unknown_policy_is_rejected() -> None:
    with pytest.raises(ValueError, match="best-effort"):
        Engine(isolation="none")
    with pytest.raises(SystemExit):
        cli_main(["run", "--isolation", "none", "--language", "C", "--source", "x", "--tests", "y"])


# -- launcher contract ------------------------------------------------------------------------


def _launch(launcher: Path, config: list[str]) -> subprocess.CompletedProcess[bytes]:
    payload = b"".join(w.encode() + b"\0" for w in config)
    return subprocess.run(
        ["sandbox-init"],
        executable=str(launcher),
        input=str(len(payload)).encode() + b"\n" + payload,
        capture_output=True,
        timeout=60,
    )


def test_production_launcher_has_no_test_hook(tmp_path: Path) -> None:
    require_binary("gcc")
    prod, reason = launcher_binary()
    test, _ = launcher_binary(test_hooks=True)
    assert prod is not None and test is not None, reason
    assert prod != test
    io = tmp_path / "io"
    io.mkdir()
    hook = ["--io", str(io), "--test-fail-stage", "exec:0"]
    refused = _launch(prod, hook)
    assert refused.returncode == 2
    assert b"bad configuration word: --test-fail-stage" in refused.stderr
    assert b"usage:" in refused.stderr
    accepted = _launch(test, hook)
    assert accepted.returncode == 0 and accepted.stdout.startswith(b"ready=1"), accepted


def test_launcher_usage_for_bad_configuration(tmp_path: Path) -> None:
    require_binary("gcc")
    prod, reason = launcher_binary()
    assert prod is not None, reason
    unknown = _launch(prod, ["--io", str(tmp_path), "--frobnicate"])
    assert unknown.returncode == 2 and b"--frobnicate" in unknown.stderr
    assert b"usage:" in unknown.stderr and b"exit codes" in unknown.stderr
    no_io = _launch(prod, ["--seccomp"])
    assert no_io.returncode == 2 and b"--io missing" in no_io.stderr
    # flags on the command line are refused: the configuration travels on fd 0 only
    argv = subprocess.run([str(prod), "--io", str(tmp_path)], capture_output=True, timeout=60)
    assert argv.returncode == 2 and b"usage:" in argv.stderr


# -- §2 cleanup ---------------------------------------------------------------------------------

#: builds, below each directory given as DIR:DEPTH, a DEPTH-deep chain, mode 000 directories,
#: symlink loops, FIFOs and a listening socket; prints "ok"
HOSTILE_TREE = """
import os, socket, sys
for arg in sys.argv[1:]:
    base, depth = arg.rsplit(":", 1)
    fd = os.open(base, os.O_RDONLY)
    os.mkdir("chain", dir_fd=fd)
    cur = os.open("chain", os.O_RDONLY, dir_fd=fd)
    for _ in range(int(depth)):
        os.mkdir("d", dir_fd=cur)
        nxt = os.open("d", os.O_RDONLY, dir_fd=cur)
        os.close(cur)
        cur = nxt
    os.mkfifo("fifo", dir_fd=cur)
    os.symlink("..", "up", dir_fd=cur)
    os.chmod(f"/proc/self/fd/{cur}", 0)
    os.close(cur)
    os.symlink("loop-b", os.path.join(base, "loop-a"))
    os.symlink("loop-a", os.path.join(base, "loop-b"))
    os.symlink("/", os.path.join(base, "host-root"))
    os.mkfifo(os.path.join(base, "fifo"))
    os.makedirs(os.path.join(base, "zero", "sub"))
    open(os.path.join(base, "zero", "sub", "f"), "w").write("x")
    os.chmod(os.path.join(base, "zero", "sub"), 0)
    os.chmod(os.path.join(base, "zero"), 0)
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(base, "sock"))
    s.listen(1)
print("ok")
"""


@pytest.fixture
def fast_tmp(tmp_path: Path) -> Iterator[Path]:
    """A scratch dir on tmpfs when the machine has one (/dev/shm): thousands of directory
    creations and removals cost seconds on a journaling disk, milliseconds there."""
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else tmp_path
    d = Path(tempfile.mkdtemp(prefix="containment-", dir=base))
    try:
        yield d
    finally:
        remove_tree(d)


def _own_sandbox_dirs() -> set[str]:
    prefix = f"code-exec-{os.getpid()}-"
    return {p.name for p in Path(tempfile.gettempdir()).iterdir() if p.name.startswith(prefix)}


def test_hostile_tree_in_work_area_and_tmp_then_next_job_works() -> None:
    require_runtime("Python 3")
    before = _own_sandbox_dirs()
    engine = Engine(workers=1)
    # the private /tmp holds 4096 inodes: its chain is shorter
    src = HOSTILE_TREE.replace("sys.argv[1:]", f"['/box:{DEPTH}', '/tmp:4000']")
    r = engine.judge(Job("Python 3", src, (TestCase("", ("ok",)),), time_limit_s=20))
    assert r.verdict is Verdict.PASSED, (r.detail, r.tests[0].stderr if r.tests else "")
    nxt = engine.judge(Job("Python 3", "print(6 * 7)\n", (TestCase("", ("42",)),)))
    assert nxt.verdict is Verdict.PASSED, nxt.detail
    assert _own_sandbox_dirs() <= before  # every sandbox tree of this process is gone


def test_hostile_tree_on_the_host_is_removed(
    monkeypatch: pytest.MonkeyPatch, fast_tmp: Path, tmp_path: Path
) -> None:
    """Where the work area is on the host (best-effort without namespaces, or run_command's
    cwd), the walks that hand it back and remove it survive the same tree."""
    require_binary("python3")
    before = _own_sandbox_dirs()
    scratch = tmp_path / "repo"  # bound at its host path: not below /dev, which is private
    scratch.mkdir()
    out = run_command(
        [PY, "-c", HOSTILE_TREE, f"{scratch}:{DISK_DEPTH}"],
        cwd=scratch,
        limits=Limits(cpu_s=20, wall_s=60),
    )
    assert out.ok and out.stdout.strip() == b"ok", out
    assert scratch.stat().st_uid == os.geteuid()  # ownership came back through the chain
    assert remove_tree(scratch) == [] and not scratch.exists()
    assert _own_sandbox_dirs() <= before
    monkeypatch.setattr(tempfile, "tempdir", str(fast_tmp))
    os.chmod(fast_tmp, 0o711)  # like /tmp: the sandbox uid may pass through
    before = _own_sandbox_dirs()
    _no_namespaces(monkeypatch)
    with Sandbox(files={"a.py": HOSTILE_TREE.encode()}, isolation="best-effort") as sb:
        out = sb.run([PY, "a.py", f"{sb.workdir}:{DEPTH}"], limits=Limits(cpu_s=20, wall_s=60))
        assert out.ok and out.stdout.strip() == b"ok", out
        work = Path(sb.workdir)
    assert not work.exists()
    assert _own_sandbox_dirs() <= before


def test_tree_walks_never_follow_symlinks(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    (tree / "a" / "link").symlink_to(outside)
    (tree / "file-link").symlink_to(outside / "keep")
    os.mkfifo(tree / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tree / "sock"))
    os.chmod(tree / "a", 0)
    mode = outside.stat().st_mode
    assert chown_tree(tree, os.geteuid(), os.getegid()) == []
    assert remove_tree(tree) == []
    sock.close()
    assert not tree.exists()
    assert (outside / "keep").read_text() == "x" and outside.stat().st_mode == mode
    assert remove_tree(tmp_path / "absent") == []


def _plant_tree(base: Path, depth: int) -> socket.socket:
    """The same hostile tree, planted by the test itself: a chain, mode 000, loops, FIFO, socket."""
    fd = os.open(base, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.mkfifo("fifo", dir_fd=fd)
    os.symlink("..", "up", dir_fd=fd)
    os.chmod(f"/proc/self/fd/{fd}", 0)
    os.close(fd)
    (base / "loop-a").symlink_to("loop-b")
    (base / "loop-b").symlink_to("loop-a")
    (base / "host-root").symlink_to("/")
    (base / "zero" / "sub").mkdir(parents=True)
    os.chmod(base / "zero" / "sub", 0)
    os.chmod(base / "zero", 0)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(base / "sock"))
    return sock


def test_launcher_cleanup_tree_survives_a_hostile_tree(fast_tmp: Path) -> None:
    """The launcher's outer process removes `--cleanup-tree` when the sandbox ends (what runs
    when the engine was SIGKILLed); no recursion, no symlink followed."""
    _require_full_sandbox()
    launcher, reason = launcher_binary()
    assert launcher is not None, reason
    tree = fast_tmp / "code-exec-tree"
    (tree / "io").mkdir(parents=True)
    (tree / "root").mkdir()
    sock = _plant_tree(tree / "io", DEPTH)
    keep = fast_tmp / "keep"
    keep.write_text("x")
    (tree / "keep-link").symlink_to(keep)
    config = ["--io", str(tree / "io"), "--ns", "--root", str(tree / "root")]
    config += ["--cleanup-tree", str(tree)]
    if os.geteuid() != 0:
        config.append("--userns")
    done = _launch(launcher, config)
    sock.close()
    assert done.returncode == 0 and done.stdout.startswith(b"ready=1"), done
    assert not tree.exists()
    assert keep.read_text() == "x"


@pytest.fixture
def stale_tmp(fast_tmp: Path) -> Iterator[tuple[Path, Path]]:
    """A temp dir holding a stale sandbox tree of a dead engine that cannot be fully removed:
    a DEPTH-deep chain and, as root, a mount point (EBUSY)."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tmp = fast_tmp / "tmp"
    stale = tmp / f"code-exec-{dead.pid}-stale"
    (stale / "io").mkdir(parents=True)
    fd = os.open(stale / "io", os.O_RDONLY)
    for _ in range(DEPTH):
        os.mkdir("d", dir_fd=fd)
        nxt = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.close(fd)
    busy = stale / "busy"
    busy.mkdir()
    mounted = False
    if os.geteuid() == 0:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "none", str(busy)]).returncode == 0
    try:
        yield tmp, stale
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(busy)])
        remove_tree(tmp)


def test_unremovable_stale_tree_never_breaks_a_new_engine(
    stale_tmp: tuple[Path, Path], tmp_path: Path
) -> None:
    require_runtime("Python 3")
    tmp, stale = stale_tmp
    src = tmp_path / "a.py"
    src.write_text("print(6 * 7)\n")
    tests = tmp_path / "t.json"
    tests.write_text('[{"input": "", "output": ["42"]}]')
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(ROOT))
    for _ in range(2):  # and again: the tree left behind does not break the next one either
        proc = subprocess.run(
            [*CLI, "run", "--language", "Python 3", "--source", str(src), "--tests", str(tests)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        assert '"PASSED"' in proc.stdout
    assert not (stale / "io").exists()  # the chain went
    if os.geteuid() == 0:
        assert (stale / "busy").exists()  # the mount point stayed, and was logged
        assert "stale sandbox cleanup" in proc.stderr and str(stale) in proc.stderr


# -- §7 nothing of the host inside -----------------------------------------------------------

SHOW_PROC = """
for p in ("/proc/1/cmdline", "/proc/1/environ", "/proc/self/mountinfo", "/proc/1/mountinfo"):
    try:
        data = open(p, "rb").read()
    except OSError as exc:
        data = repr(exc).encode()
    print(p, data.replace(b"\\0", b" ").decode(errors="replace"))
"""


def _host_paths() -> list[str]:
    """Host paths nothing inside may name (toolchain directories, e.g. ~/.rustup, may show)."""
    launcher, _ = launcher_binary()
    paths = ["code-exec-", str(cache_root()), "/sys/fs/cgroup", tempfile.gettempdir() + "/"]
    paths.append(str(ROOT))
    if launcher is not None:
        paths += [str(launcher), launcher.name]
    return [p for p in paths if p not in ("/", "")]


def test_nothing_of_the_host_in_proc_at_run_time() -> None:
    require_runtime("Python 3")
    _require_full_sandbox()
    with Sandbox(files={"a.py": SHOW_PROC.encode()}, purposes=("compile", "run")) as sb:
        for purpose in ("compile", "run"):
            out = sb.run([PY, "a.py"], limits=Limits(cpu_s=5), purpose=purpose)
            assert out.ok, out
            text = out.stdout.decode()
            assert "/proc/1/cmdline sandbox-init" in text
            assert "/proc/self/mountinfo" in text and " /box " in text
            leaks = [p for p in _host_paths() if p in text]
            assert not leaks, (purpose, leaks, text)


def test_nothing_of_the_host_in_proc_at_compile_time() -> None:
    """A Rust program embeds init's command line and the compiler's mount table at compile time
    (`include_bytes!`), then checks them for host paths when it runs."""
    require_runtime("Rust 2018")
    _require_full_sandbox()
    needles = ", ".join(json.dumps(p) for p in _host_paths())
    src = (
        "fn main() {\n"
        '    let cmd: &[u8] = include_bytes!("/proc/1/cmdline");\n'
        '    let mounts: &[u8] = include_bytes!("/proc/self/mountinfo");\n'
        "    let cmd = String::from_utf8_lossy(cmd).replace('\\0', \" \");\n"
        "    let mounts = String::from_utf8_lossy(mounts);\n"
        f"    let needles = [{needles}];\n"
        "    let mut clean = true;\n"
        "    for n in needles.iter() {\n"
        '        if cmd.contains(n) || mounts.contains(n) { println!("LEAK {}", n); clean = false; }\n'
        "    }\n"
        '    if clean { print!("clean "); }\n'
        '    println!("{} {}", cmd.trim(), if mounts.contains(" /box ") { "box" } else { "nobox" });\n'
        "}\n"
    )
    r = Engine(workers=1).judge(Job("Rust 2018", src, (TestCase("", ("clean sandbox-init box",)),)))
    assert r.verdict is Verdict.PASSED, (r.detail, r.compile, r.tests)
