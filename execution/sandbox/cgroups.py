"""Per-sandbox cgroups (v1 or v2): memory limit and OOM-kill count, pids cap, CPU counter.

Why cgroups and not RLIMIT_AS: an address-space limit breaks the JVM, Node, Go and Mono, which
reserve far more virtual memory than they touch; the memory cgroup counts what is really resident
and OOM-kills past the limit, which is what MEMORY_LIMIT_EXCEEDED should mean. Swap is kept out
of the program's cgroup (v2: `memory.swap.max = 0`; v1: `memory.memsw.limit_in_bytes` = the limit
when swap accounting exists, and `memory.swappiness = 0` always), so a memory balloon is OOM-killed
at the limit instead of being swapped out and passing slowly. The CPU counter
covers every thread and child of the program, so a program cannot dodge the CPU limit by forking.

Cgroups are created below the engine's own cgroup (delegation-friendly, and a cgroup namespace
created by the sandbox then still contains them). One `CgroupSet` is created per sandbox and per
purpose (compile / run), then reused by every test of that program.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()
_lock = threading.Lock()


def _own_paths() -> dict[str, str]:
    """Controller (or "" for the v2 unified hierarchy) -> this process's cgroup path."""
    out: dict[str, str] = {}
    try:
        text = Path("/proc/self/cgroup").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, ctrls, path = parts
        if ctrls == "":
            out[""] = path
        for c in ctrls.split(","):
            if c:
                out[c] = path
    return out


@dataclass
class CgroupLayout:
    """Where this machine's cgroups live. `version` is "v1", "v2" or "" (unusable)."""

    version: str
    memory: Path | None = None  # v1: memory controller parent; v2: the parent cgroup
    pids: Path | None = None
    cpuacct: Path | None = None
    reason: str = ""


def _writable_dir(p: Path) -> bool:
    return p.is_dir() and os.access(p, os.W_OK)


def detect() -> CgroupLayout:
    """Find a usable cgroup hierarchy for memory + pids + CPU accounting."""
    own = _own_paths()
    v1_mem = CGROUP_ROOT / "memory"
    if (v1_mem / "memory.limit_in_bytes").exists():
        mem = v1_mem / own.get("memory", "/").lstrip("/")
        pids = CGROUP_ROOT / "pids" / own.get("pids", "/").lstrip("/")
        cpu = CGROUP_ROOT / "cpuacct" / own.get("cpuacct", "/").lstrip("/")
        if not (CGROUP_ROOT / "pids" / "pids.max").exists() and not (pids / "pids.max").exists():
            pids_ok = (CGROUP_ROOT / "pids" / "cgroup.procs").exists()
        else:
            pids_ok = True
        if not _writable_dir(mem):
            return CgroupLayout("", reason=f"cannot create cgroups under {mem}")
        return CgroupLayout(
            "v1",
            memory=mem,
            pids=pids if pids_ok and _writable_dir(pids) else None,
            cpuacct=cpu if (cpu / "cpuacct.usage").exists() and _writable_dir(cpu) else None,
        )
    # cgroup v2: the unified hierarchy mounted at /sys/fs/cgroup (or /sys/fs/cgroup/unified)
    for root in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        ctrl = root / "cgroup.controllers"
        if not ctrl.exists():
            continue
        if "memory" not in ctrl.read_text().split():
            continue
        parent, reason = _v2_parent(root, own.get("", "/"))
        if parent is None:
            return CgroupLayout("", reason=reason)
        return CgroupLayout("v2", memory=parent, pids=parent, cpuacct=parent)
    return CgroupLayout("", reason="no cgroup hierarchy with a memory controller")


def _subtree(d: Path) -> set[str]:
    try:
        return set((d / "cgroup.subtree_control").read_text().split())
    except OSError:
        return set()


def _evacuate(root: Path) -> None:
    """Move every process of a container's root cgroup into a leaf, as container init systems
    do: with processes in it, v2 forbids enabling controllers for its children."""
    leaf = root / "code-exec-host"
    leaf.mkdir(exist_ok=True)
    for _ in range(10):
        pids = (root / "cgroup.procs").read_text().split()
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):  # exited meanwhile, or a kernel thread
                _write(leaf / "cgroup.procs", pid)


def _v2_parent(root: Path, own: str) -> tuple[Path | None, str]:
    """A v2 cgroup whose children get the memory and pids controllers.

    The engine's own cgroup works when it is delegated with the controllers enabled for its
    children. Otherwise the "no internal processes" rule forbids enabling them there (the engine
    lives in it), so a dedicated `code-exec` subtree off the hierarchy root is used (root only;
    in a container whose root cgroup holds processes, they are first moved to a leaf).
    """
    wanted = {"memory", "pids"}
    own_dir = root / own.lstrip("/")
    if wanted <= _subtree(own_dir) and _writable_dir(own_dir):
        return own_dir, ""
    with contextlib.suppress(OSError):
        _write(own_dir / "cgroup.subtree_control", "+memory +pids")
    if wanted <= _subtree(own_dir) and _writable_dir(own_dir):
        return own_dir, ""
    if os.geteuid() != 0:
        return _delegated_parent(own_dir)
    base = root / "code-exec"
    try:
        if not wanted <= _subtree(root):
            if own == "/" and os.geteuid() == 0:
                _evacuate(root)
            _write(root / "cgroup.subtree_control", "+memory +pids")
        base.mkdir(exist_ok=True)
        if not wanted <= _subtree(base):
            _write(base / "cgroup.subtree_control", "+memory +pids")
    except OSError as exc:
        return None, f"cannot enable memory+pids controllers for sandbox cgroups: {exc}"
    return base, ""


def _delegated_parent(own_dir: Path) -> tuple[Path | None, str]:
    """Rootless on cgroup v2: use the engine's own cgroup when it is delegated to the user
    (a systemd user scope or service with `Delegate=yes`, e.g. `systemd-run --user --scope -p
    Delegate=yes ...`): owned by the user, with the memory and pids controllers available.

    The "no internal processes" rule forbids enabling controllers for the children of a cgroup
    that holds processes, so the engine first moves itself into a leaf `engine-<pid>` below it.
    Other processes in that cgroup (e.g. the shell that started the engine) make it unusable:
    the reason says so, and the sandbox then accounts by sampling its pid namespace instead.
    """
    wanted = {"memory", "pids"}
    files = ("cgroup.procs", "cgroup.subtree_control")
    if not _writable_dir(own_dir) or not all(os.access(own_dir / f, os.W_OK) for f in files):
        return None, f"the engine's cgroup {own_dir} is not delegated to this user"
    try:
        available = set((own_dir / "cgroup.controllers").read_text().split())
    except OSError as exc:
        return None, f"cannot read the controllers of {own_dir}: {exc}"
    if not wanted <= available:
        missing = " ".join(sorted(wanted - available))
        return None, f"the delegated cgroup {own_dir} lacks the controllers: {missing}"
    leaf = own_dir / f"engine-{os.getpid()}"
    try:
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", str(os.getpid()))
        _write(own_dir / "cgroup.subtree_control", "+memory +pids")
    except OSError as exc:
        others = _procs(own_dir)
        why = f" (it still holds other processes: {' '.join(others[:5])})" if others else ""
        return None, f"cannot enable memory+pids in the delegated cgroup {own_dir}: {exc}{why}"
    if not wanted <= _subtree(own_dir):
        return None, f"memory+pids did not become available below {own_dir}"
    return own_dir, ""


def delegate_v1(root: Path) -> str:
    """Make the sandboxes' cgroups below `root/memory`, `root/pids` and `root/cpuacct`: cgroup
    v1 folders that the host's root made for this process's user (the container backend binds
    them into its judge containers), where that user may create cgroups whose files it then
    owns and writes (limits, counters, `cgroup.procs`). Why they cannot be used ("" when they
    are): the caller refuses to judge then, as the folders were promised."""
    mem, pids, cpu = (root / c for c in ("memory", "pids", "cpuacct"))
    if not (mem / "memory.limit_in_bytes").exists() or not _writable_dir(mem):
        return f"no writable cgroup v1 memory folder at {mem}"
    if not (pids / "pids.max").exists() or not _writable_dir(pids):
        return f"no writable cgroup v1 pids folder at {pids}"
    if not (cpu / "cpuacct.usage").exists() or not _writable_dir(cpu):
        return f"no writable cgroup v1 cpuacct folder at {cpu}"
    global _layout
    with _lock:
        _layout = CgroupLayout("v1", memory=mem, pids=pids, cpuacct=cpu)
    return ""


def _procs(d: Path) -> list[str]:
    try:
        return (d / "cgroup.procs").read_text().split()
    except OSError:
        return []


_layout: CgroupLayout | None = None


def layout() -> CgroupLayout:
    global _layout
    with _lock:
        if _layout is None:
            _layout = detect()
        return _layout


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


@dataclass
class CgroupSet:
    """The cgroups of one sandbox purpose; the sandbox's processes join `procs_files`."""

    version: str
    dirs: list[Path] = field(default_factory=list)
    memory_dir: Path | None = None
    pids_dir: Path | None = None
    cpu_file: Path | None = None
    procs_files: list[Path] = field(default_factory=list)
    #: how swap is kept out: "swap.max" (v2), "swappiness" (v1) or "" (could not be set)
    swap_control: str = ""
    _memory_mb: int | None = None
    _pids: int | None = None
    _oom_fd: int | None = None

    @classmethod
    def create(cls, tag: str) -> CgroupSet:
        lay = layout()
        if not lay.version:
            raise OSError(lay.reason)
        name = f"code-exec-{os.getpid()}-{next(_counter)}-{tag}"
        cs = cls(version=lay.version)
        try:
            assert lay.memory is not None
            cs.memory_dir = cs._add(lay.memory / name)
            if lay.version == "v2":
                d = cs.memory_dir
                cs.pids_dir = d if (d / "pids.max").exists() else None
                cs.cpu_file = d / "cpu.stat"
                if not (d / "memory.max").exists():
                    raise OSError("memory controller not enabled in the engine's cgroup")
            else:
                if lay.pids is not None:
                    cs.pids_dir = cs._add(lay.pids / name)
                if lay.cpuacct is not None:
                    cs.cpu_file = cs._add(lay.cpuacct / name) / "cpuacct.usage"
            cs._disable_swap()
            cs._open_counters()
        except BaseException:
            cs.destroy()
            raise
        return cs

    def _add(self, d: Path) -> Path:
        """Create one cgroup directory of the set (one per v1 controller, one in all for v2)."""
        d.mkdir()
        self.dirs.append(d)
        self.procs_files.append(d / "cgroup.procs")
        return d

    def _disable_swap(self) -> None:
        """No swap for the program: without it, a balloon past the limit is swapped out
        instead of OOM-killed (v1 without swap accounting has no memsw limit to stop it)."""
        assert self.memory_dir is not None
        name, value = (
            ("memory.swap.max", "0") if self.version == "v2" else ("memory.swappiness", "0")
        )
        path = self.memory_dir / name
        if not path.exists():  # v2 without swap accounting: nothing can be swapped anyway
            return
        with contextlib.suppress(OSError):
            _write(path, value)
            self.swap_control = name.removeprefix("memory.")

    def _open_counters(self) -> None:
        assert self.memory_dir is not None
        events = "memory.oom_control" if self.version == "v1" else "memory.events"
        self._oom_fd = os.open(self.memory_dir / events, os.O_RDONLY)

    @property
    def cpu_is_v2(self) -> bool:
        return self.version == "v2"

    def set_memory(self, mb: int) -> None:
        if self._memory_mb == mb or self.memory_dir is None:
            return
        val = str(mb * 1024 * 1024)
        d = self.memory_dir
        if self.version == "v2":
            _write(d / "memory.max", val)
        else:
            memsw = d / "memory.memsw.limit_in_bytes"
            # memsw must stay >= limit: order the two writes by direction
            if memsw.exists():
                try:
                    _write(d / "memory.limit_in_bytes", val)
                    _write(memsw, val)
                except OSError:
                    _write(memsw, val)
                    _write(d / "memory.limit_in_bytes", val)
            else:
                _write(d / "memory.limit_in_bytes", val)
        self._memory_mb = mb

    def set_pids(self, n: int) -> None:
        if self._pids == n or self.pids_dir is None:
            return
        _write(self.pids_dir / "pids.max", str(n))
        self._pids = n

    def oom_kills(self) -> int:
        if self._oom_fd is None:
            return 0
        try:
            text = os.pread(self._oom_fd, 4096, 0).decode()
        except OSError:
            return 0
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def destroy(self) -> None:
        if self._oom_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._oom_fd)
        self._oom_fd = None
        for d in reversed(self.dirs):
            for attempt in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if self.version == "v2":
                        with contextlib.suppress(OSError):
                            _write(d / "cgroup.kill", "1")
                    time.sleep(0.002 * (attempt + 1))
        self.dirs.clear()


def cleanup_stale(alive: Callable[[int], bool]) -> None:
    """rmdir the (empty) cgroups of engines that died without cleaning up."""
    lay = layout()
    parents = {p for p in (lay.memory, lay.pids, lay.cpuacct) if p is not None}
    for parent in parents:
        try:
            entries = list(parent.glob("code-exec-*"))
        except OSError:
            continue
        for d in entries:
            pid = d.name.split("-")[2] if d.name.count("-") >= 3 else ""
            if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
                with contextlib.suppress(OSError):
                    d.rmdir()
        # the leaves of dead engines in a delegated v2 cgroup (see `_delegated_parent`)
        if lay.version == "v2":
            leaves: list[Path] = []
            with contextlib.suppress(OSError):
                leaves = list(parent.glob("engine-*"))
            for d in leaves:
                pid = d.name.removeprefix("engine-")
                if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
                    with contextlib.suppress(OSError):
                        d.rmdir()
