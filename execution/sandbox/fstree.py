"""Walk and remove directory trees a hostile program may have shaped.

A program controls its work dir: chains thousands of levels deep (paths longer than PATH_MAX,
recursion limits), modes set to 000, symlink loops, sockets and FIFOs. These walks never recurse,
never follow a symlink, never build a long path (each step opens one name relative to the
directory fd it is in, and climbs back with ".." checked against the inode it came from), never
cross into another file system, and hold at most two descriptors at a time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass
class _Frame:
    """A directory on the way down: its name in the parent, its identity, the subdirs left."""

    name: str
    ino: tuple[int, int]
    pending: list[str] = field(default_factory=list)


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _open_dir(
    parent_fd: int, name: str, errors: list[str], where: str | Callable[[], str]
) -> int | None:
    """Open subdir `name` of `parent_fd` without following a symlink; a directory whose mode
    keeps its owner out (000, 0500) is given 0700 first (possible when we own it)."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except PermissionError:
        pass
    except OSError as exc:
        errors.append(f"{_label(where)}: {exc.strerror}")
        return None
    try:
        pfd = os.open(
            name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=parent_fd
        )
        try:
            os.chmod(f"/proc/self/fd/{pfd}", 0o700)  # the O_PATH fd pins this very directory
        finally:
            os.close(pfd)
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        errors.append(f"{_label(where)}: {exc.strerror}")
        return None


def _label(where: str | Callable[[], str]) -> str:
    return where if isinstance(where, str) else where()


def _make_writable(fd: int) -> None:
    """Unlinking inside a directory needs its write and search bits (root does not)."""
    with contextlib.suppress(OSError):
        st = os.fstat(fd)
        if st.st_mode & 0o700 != 0o700 and st.st_uid == os.geteuid():
            os.fchmod(fd, stat.S_IMODE(st.st_mode) | 0o700)


def walk_tree(
    root: str | os.PathLike[str],
    on_entry: Callable[[int, str, os.stat_result], None],
    *,
    remove: bool = False,
) -> list[str]:
    """Visit every entry below `root` (and `root` itself, last) as `on_entry(dir_fd, name, st)`,
    children before their directory; with `remove`, unlink each entry after the visit.

    Returns what could not be visited or removed ("path: reason"); never raises for the tree's
    contents. Directories on another file system (mount points) are not entered."""
    errors: list[str] = []
    root_path = os.path.abspath(os.fspath(root))
    parent, base = os.path.split(root_path.rstrip("/") or "/")
    if not base:
        return ["/: refusing to walk the root directory"]
    try:
        top_fd = os.open(parent, _DIR_FLAGS & ~os.O_NOFOLLOW)
    except OSError as exc:
        return [f"{parent}: {exc.strerror}"]
    try:
        try:
            st = os.stat(base, dir_fd=top_fd, follow_symlinks=False)
        except FileNotFoundError:
            return []
        if not stat.S_ISDIR(st.st_mode):
            _visit(top_fd, base, st, on_entry, remove, errors, root_path)
            return errors
        _walk_dir(top_fd, base, st, on_entry, remove, errors, root_path)
    finally:
        os.close(top_fd)
    return errors


def _visit(
    dir_fd: int,
    name: str,
    st: os.stat_result,
    on_entry: Callable[[int, str, os.stat_result], None],
    remove: bool,
    errors: list[str],
    where: str | Callable[[], str],
) -> bool:
    """on_entry, then the unlink; `where` (the path, or how to build it) only for messages."""
    try:
        on_entry(dir_fd, name, st)
        if remove:
            if stat.S_ISDIR(st.st_mode):
                os.rmdir(name, dir_fd=dir_fd)
            else:
                os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    except OSError as exc:
        errors.append(f"{_label(where)}: {exc.strerror}")
        return False
    return True


def _walk_dir(
    top_fd: int,
    base: str,
    root_st: os.stat_result,
    on_entry: Callable[[int, str, os.stat_result], None],
    remove: bool,
    errors: list[str],
    root_path: str,
) -> None:
    dev = root_st.st_dev
    fd = _open_dir(top_fd, base, errors, root_path)
    if fd is None:
        return
    stack = [_Frame(root_path, _ident(root_st))]  # its name only labels messages
    descend = True  # True: `fd` was just entered and must be listed
    try:
        while True:
            frame = stack[-1]
            if descend:
                if remove:
                    _make_writable(fd)
                frame.pending = _visit_files(fd, dev, on_entry, remove, errors, stack)
            if frame.pending:
                name = frame.pending.pop()
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue  # gone meanwhile
                if not stat.S_ISDIR(st.st_mode) or st.st_dev != dev:
                    continue
                sub = _open_dir(fd, name, errors, functools.partial(_where, stack, name))
                if sub is None:
                    continue
                if _ident(os.fstat(sub)) != _ident(st):
                    os.close(sub)
                    errors.append(f"{_where(stack, name)}: replaced while walking")
                    continue
                os.close(fd)
                fd = sub
                stack.append(_Frame(name, _ident(st)))
                descend = True
                continue
            # every child done: climb to the parent, then visit (and remove) this directory
            done = stack.pop()
            if not stack:
                os.close(fd)
                fd = -1
                _visit(top_fd, base, root_st, on_entry, remove, errors, root_path)
                return
            parent_fd = os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent_fd
            if _ident(os.fstat(fd)) != stack[-1].ino:
                errors.append(f"{_where(stack, '')}: moved while walking; stopped")
                return
            descend = False
            try:
                st = os.stat(done.name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue  # gone meanwhile
            if _ident(st) == done.ino:
                _visit(
                    fd,
                    done.name,
                    st,
                    on_entry,
                    remove,
                    errors,
                    functools.partial(_where, stack, done.name),
                )
    finally:
        if fd >= 0:
            os.close(fd)


def _visit_files(
    fd: int,
    dev: int,
    on_entry: Callable[[int, str, os.stat_result], None],
    remove: bool,
    errors: list[str],
    stack: list[_Frame],
) -> list[str]:
    """Visit the non-directories of `fd`; the names of its subdirectories (to enter)."""
    subdirs: list[str] = []
    try:
        with os.scandir(fd) as it:
            entries = list(it)
    except OSError as exc:
        errors.append(f"{_where(stack, '')}: {exc.strerror}")
        return subdirs
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            if st.st_dev == dev:
                subdirs.append(entry.name)
            else:
                errors.append(f"{_where(stack, entry.name)}: another file system (mount point)")
            continue
        _visit(
            fd,
            entry.name,
            st,
            on_entry,
            remove,
            errors,
            functools.partial(_where, stack, entry.name),
        )
    return subdirs


def _where(stack: list[_Frame], name: str) -> str:
    """A readable location for messages, shortened for deep chains."""
    parts = [f.name for f in stack] + ([name] if name else [])
    if len(parts) > 6:
        parts = [*parts[:3], f"...({len(parts) - 5} more)...", *parts[-2:]]
    return "/".join(parts)


def remove_tree(root: str | os.PathLike[str]) -> list[str]:
    """Remove `root` and everything below it; the entries that could not be removed."""
    return walk_tree(root, lambda fd, name, st: None, remove=True)


def chown_tree(root: str | os.PathLike[str], uid: int, gid: int) -> list[str]:
    """lchown every entry of the tree (symlinks themselves, never their targets)."""

    def chown(fd: int, name: str, st: os.stat_result) -> None:
        os.chown(name, uid, gid, dir_fd=fd, follow_symlinks=False)

    return walk_tree(Path(root), chown)
