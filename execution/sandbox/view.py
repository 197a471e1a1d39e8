"""What a sandbox sees of the host's file system: the system directories bound read-only, the
secrets masked over them, the engine's own folders at `/shared/<name>` (`SharedFolder`), and
the launcher's words that bind a host path so that no mount line inside names a host folder
(`ro_mount_words`, from the engine's own mount table; rootless, through a snapshot)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..isolation import SandboxError
from ..limits import MB
from .fstree import remove_tree
from .host_probe import host_isolation

#: directories a toolchain may need, bound read-only (absent ones are skipped)
SYSTEM_RO_PATHS: tuple[str, ...] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
)


def is_system_path(path: str | os.PathLike[str]) -> bool:
    """True for a path inside (or equal to) one of SYSTEM_RO_PATHS, which every sandbox sees
    anyway; compared by whole path components, so `/library` is not under `/lib`."""
    p = os.fspath(path)
    return any(p == d or p.startswith(d + "/") for d in SYSTEM_RO_PATHS)


#: secrets masked inside the view even though the uid could not read most of them anyway
MASKED_PATHS: tuple[str, ...] = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
)
#: where the engine's own read-only folders show inside a sandbox (`SharedFolder`)
SHARED_ROOT = "/shared"


class SharedFolder(str):
    """A read-only folder of the engine's own (CPython's bytecode, a precompiled header, the
    direct Go build's import configurations, a start-up prelude, a warm compiler's server
    program), given in `ro_paths` as its host path: a sandbox shows it at `inside`,
    `/shared/<its name>` (names are content hashes), as a read-only overlay whose mountinfo line
    names neither the host path nor the file system it lives on. Commands name it by `inside`.

    Only the best-effort sandbox of a host without namespaces (no private root to mount it in)
    leaves it at its host path, which `inside` then is."""

    @property
    def inside(self) -> str:
        if not host_isolation().namespaces:
            return str(self)
        return f"{SHARED_ROOT}/{Path(self).name}"

    def inside_of(self, host_path: str | os.PathLike[str]) -> str:
        """Where the sandbox shows `host_path`, a path in this folder."""
        rel = Path(host_path).relative_to(self)
        return self.inside if rel == Path(".") else f"{self.inside}/{rel.as_posix()}"


#: file systems whose mountinfo line says nothing of the host but the mount's own path (when
#: the mount's root is its file system's root or that very path); any other (an overlay names
#: its layers' host folders, a bind shows the folder it came from) is shown through a view
PLAIN_FILESYSTEMS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "devtmpfs", "squashfs", "erofs", "vfat"}
)


@dataclass(frozen=True)
class _Mount:
    point: str
    root: str
    fstype: str

    @property
    def plain(self) -> bool:
        return self.fstype in PLAIN_FILESYSTEMS and self.root in ("/", self.point)


def _unescape(field: str) -> str:
    """A mountinfo path field: spaces, tabs, newlines and backslashes are octal escapes."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _mount_table() -> list[_Mount]:
    """The engine's own mounts (what a bind of one of its paths would carry into a sandbox)."""
    mounts = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            if "-" not in fields[6:]:
                continue
            sep = fields.index("-", 6)
            mounts.append(_Mount(_unescape(fields[4]), _unescape(fields[3]), fields[sep + 1]))
    return mounts


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def ro_mount_words(path: str, mounts: Sequence[_Mount], rootless: bool = False) -> list[str]:
    """The launcher's words that show the host's `path` read-only at the same place, so that
    the sandbox's mountinfo names nothing of the host but `path` itself: the plain recursive
    bind of today where every mount it carries is plain (`_Mount.plain`), else a view (a
    read-only overlay, `--view`) of each mount that is not, flat binds of those that are, and
    none of a file mounted over another that is not plain (Docker's /etc/hosts: the file below
    shows instead). A symlink is recreated, as ever.

    Rootless, the kernel locks the mounts the engine's namespace holds: neither a view nor a
    flat bind may uncover what lies under a mount below `path`. Such a tree (Docker's /etc)
    is shown through a view of its snapshot (`_snapshot`: a copy made once per process, the
    mounts below as the engine sees them)."""
    if os.path.islink(path):
        return ["--ro", path]
    base: _Mount | None = None
    for m in mounts:
        if _under(path, m.point) and (base is None or len(m.point) >= len(base.point)):
            base = m
    below: dict[str, _Mount] = {}
    for m in mounts:
        if m.point != path and _under(m.point, path):
            below[m.point] = m  # the last one mounted at a point is the one on top
    if (base is None or base.plain) and all(m.plain for m in below.values()):
        return ["--ro", path]
    if rootless and below:
        return ["--view", _snapshot(path), path]
    words = ["--ro1", path] if base is not None and base.plain else ["--view", path, path]
    for point in sorted(below, key=lambda p: p.count("/")):
        m = below[point]
        if m.plain:
            words += ["--ro1", point]
        elif os.path.isdir(point):
            words += ["--view", point, point]
    return words


#: the most a snapshot may hold (bytes, entries): a tree past it is refused, never bound as is
SNAPSHOT_MAX_BYTES = 64 * MB
SNAPSHOT_MAX_ENTRIES = 20000
_snapshots: dict[str, str] = {}
_snapshot_lock = threading.Lock()


def _snapshot(path: str) -> str:
    """A copy of the tree at `path` (symlinks as links, files the engine cannot read left out:
    the sandbox's uid could not read them either), made once per process in a folder the
    stale-sandbox cleanup removes once this process is gone. SandboxError when it is too big."""
    with _snapshot_lock:
        if path in _snapshots:
            return _snapshots[path]
        top = Path(tempfile.gettempdir()) / f"code-exec-{os.getpid()}-snapshots"
        top.mkdir(mode=0o755, exist_ok=True)
        copy = Path(tempfile.mkdtemp(dir=top))
        os.chmod(copy, 0o755)
        total = entries = 0
        for dirpath, dirnames, filenames in os.walk(path):
            rel = os.path.relpath(dirpath, path)
            into = copy / rel
            for name in [*dirnames, *filenames]:
                entries += 1
                src, dst = os.path.join(dirpath, name), into / name
                if os.path.islink(src):
                    os.symlink(os.readlink(src), dst)
                    if name in dirnames:
                        dirnames.remove(name)  # os.walk would not enter it anyway
                elif name in dirnames:
                    dst.mkdir()
                    shutil.copymode(src, dst)
                elif os.path.isfile(src) and os.access(src, os.R_OK):
                    total += os.path.getsize(src)
                    if total > SNAPSHOT_MAX_BYTES:
                        break
                    shutil.copy2(src, dst)
            if total > SNAPSHOT_MAX_BYTES or entries > SNAPSHOT_MAX_ENTRIES:
                remove_tree(copy)
                raise SandboxError(
                    f"{path} holds mounts a rootless sandbox cannot show as they are and is too "
                    f"big to copy (over {SNAPSHOT_MAX_BYTES // MB} MB or "
                    f"{SNAPSHOT_MAX_ENTRIES} entries)"
                )
        _snapshots[path] = str(copy)
        return str(copy)
