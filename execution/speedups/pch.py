"""Precompiled headers for C++: the standard headers a program includes are parsed once.

Parsing the standard headers is most of a C++ compile, and model-written programs open with the
same few `#include <...>` lines. A program whose first non-blank lines are all such includes (and
nothing else before them) gets a precompiled header made from exactly those lines, in that order,
after the runtime's own `-include` headers; the program is then compiled with `-include` of that
header in place of the runtime's ones. The translation unit is the same token for token: the
precompiled header holds the same includes in the same order, and the program's own include
lines that follow are no-ops behind the headers' include guards. gcc ignores a precompiled
header that does not match the compile (and then reads the header's text, the same includes), so
a stale one can cost time but never change a compile.

A header is built once per toolchain fingerprint, flags and include list, in a sandbox under
the compile limits, from nothing but `#include <name>` lines, and kept under the compile cache
directory; the program's compile sandbox sees it read-only. `CODE_EVAL_PCH=0` turns it off.

A build costs about three plain compiles and saves about half of one per program that uses it,
so a header is built only for an include list that enough programs share (`BUILD_AFTER`): a
batch announces its programs (`expect`), so a list that many of them open with is built for its
first program, and a list only a few use is never built; programs judged one at a time count as
they come.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..caches.compiles import compile_key
from ..caches.files import atomic_write, cache_root
from ..isolation import SandboxError
from ..languages.registry import Runtime, catalog_commands
from ..limits import COMPILE_LIMITS, MB, Limits
from ..sandbox.outcome import default_env
from ..sandbox.view import SharedFolder
from ..types import Job
from . import BuildPlan, Host

ENV = config.BY_FIELD["pch"].env
HEADER = "pch.h"
#: a leading include line: angle brackets, a plain header name (no `..`, no quotes)
_INCLUDE = re.compile(
    r"[ \t]*#[ \t]*include[ \t]*<([A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*(?:\.[A-Za-z0-9_+]+)?)>[ \t]*"
)
#: how many leading include lines a key may hold (more: no precompiled header)
MAX_HEADERS = 40
#: the build's limits: the compile's, with room to send the header out through stdout
BUILD_LIMITS = COMPILE_LIMITS.scaled(output_bytes=512 * MB)


def enabled(switches: config.EngineConfig | None = None) -> bool:
    """The switch (None: as the environment sets it now)."""
    return config.or_env(switches).pch


def leading_headers(source: str) -> tuple[str, ...]:
    """The standard headers the source opens with (only blank lines may sit between them), or
    () when the first non-blank line is anything else or there are too many."""
    found: list[str] = []
    for line in source.split("\n"):
        text = line.rstrip("\r")
        if not text.strip():
            continue
        m = _INCLUDE.fullmatch(text)
        if m is None:
            break
        found.append(m.group(1))
        if len(found) > MAX_HEADERS:
            return ()
    return tuple(found)


def runtime_includes(argv: tuple[str, ...]) -> tuple[list[str], int]:
    """The `-include X` headers of a compile argv and the index of the first one (-1: none)."""
    names: list[str] = []
    first = -1
    for i, arg in enumerate(argv[:-1]):
        if arg == "-include":
            names.append(argv[i + 1])
            first = i if first < 0 else first
    return names, first


def header_text(runtime_headers: list[str], headers: tuple[str, ...]) -> str:
    return "".join(f"#include <{h}>\n" for h in (*runtime_headers, *headers))


def compile_argv(argv: tuple[str, ...], header: str) -> tuple[str, ...]:
    """The compile argv with its `-include` pairs replaced by one `-include header`."""
    _, first = runtime_includes(argv)
    out: list[str] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "-include" and i + 1 < len(argv):
            if i == first:
                out += ["-include", header]
            skip = True
            continue
        out.append(arg)
    if first < 0:
        out[1:1] = ["-include", header]
    return tuple(out)


@dataclass(frozen=True)
class Pch:
    """A built precompiled header: `header` is its host path (its `.gch` sits next to it);
    `directory` is mounted read-only into the compile sandbox, whose compile `-include`s the
    header at the folder's neutral path (`sandbox.SharedFolder`)."""

    header: Path
    directory: Path


#: builds the `.gch` for a header text in a sandbox: its bytes, or None when the build failed
Builder = Callable[[str, tuple[str, ...], Limits], bytes | None]

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()
_failed: set[str] = set()
#: programs of this process known to open with an include list: those met so far, or announced
#: by a batch (`expect`), whichever is more
_seen: dict[str, int] = {}
_expected: dict[str, int] = {}
#: programs that must share an include list before its header is built (measured on 2 cores:
#: a build about 1.3 s of CPU, a compile 0.45 s without the header and 0.2 s with it)
BUILD_AFTER = 5


def key(runtime: Runtime, build: tuple[str, ...], text: str) -> str:
    blob = json.dumps([runtime.fingerprint(), list(build), text])
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def store_root(compiled_root: Path | None, switches: config.EngineConfig | None = None) -> Path:
    return (compiled_root / "pch") if compiled_root is not None else cache_root(switches) / "pch"


def _plan(
    runtime: Runtime, source: str, switches: config.EngineConfig | None = None
) -> tuple[str, tuple[str, ...], str] | None:
    """(key, build argv, header text) of the header `source` would use, or None."""
    build = runtime.pch_build
    if not catalog_commands(runtime):
        return None  # a custom command or flags: the header was built for the catalog's
    if not enabled(switches) or runtime.compile is None or build is None or runtime.classic:
        return None
    headers = leading_headers(source)
    if not headers:
        return None
    own, _ = runtime_includes(runtime.compile)
    text = header_text(own, headers)
    return key(runtime, build, text), build, text


def expect(
    programs: Iterable[tuple[Runtime, str]], switches: config.EngineConfig | None = None
) -> None:
    """Announce a batch's (runtime, source) pairs, to be judged with `switches`: an include
    list that enough of them share gets its header built for the first of them."""
    counts: dict[str, int] = {}
    for runtime, source in programs:
        plan = _plan(runtime, source, switches)
        if plan is not None:
            counts[plan[0]] = counts.get(plan[0], 0) + 1
    with _locks_guard:
        for k, n in counts.items():
            _expected[k] = max(_expected.get(k, 0), n)


def for_source(
    runtime: Runtime,
    source: str,
    root: Path,
    build_one: Builder,
    switches: config.EngineConfig | None = None,
) -> tuple[Pch, tuple[str, ...]] | None:
    """The precompiled header for `source` (built now when missing and enough programs share
    its include list) and the compile argv that uses it, or None (not a C++ runtime with
    `pch_build`, switched off, no leading standard includes, too few programs, or the build
    failed)."""
    plan = _plan(runtime, source, switches)
    if plan is None:
        return None
    k, build, text = plan
    cold = runtime.compile or ()  # never empty here: `_plan` needs a compile command
    directory = root / k[:2] / k
    header = directory / HEADER
    gch = directory / (HEADER + ".gch")
    with _locks_guard:
        lock = _locks.setdefault(k, threading.Lock())
    with lock:
        if not gch.is_file():
            _seen[k] = _seen.get(k, 0) + 1
            if k in _failed or max(_seen[k], _expected.get(k, 0)) < BUILD_AFTER:
                return None
            data = build_one(text, build, BUILD_LIMITS)
            if not data:
                _failed.add(k)  # once per process: the program compiles as before
                return None
            with contextlib.suppress(OSError):
                directory.mkdir(parents=True, exist_ok=True)
                os.chmod(directory, 0o755)  # read by the sandbox's own uid
                for path, body in ((header, text.encode()), (gch, data)):
                    atomic_write(path, body)
                    os.chmod(path, 0o644)
            if not gch.is_file() or not header.is_file():
                return None
    # the compile names the header where its sandbox shows the folder (sandbox.SharedFolder)
    inside = SharedFolder(directory).inside_of(header)
    return Pch(header=header, directory=directory), compile_argv(cold, inside)


# -- the strategy ------------------------------------------------------------------------------


class PrecompiledHeader:
    """Applies to a compile that will really run (not one served from the compile cache) on a
    backend whose sandboxes see this host's files (the header lives here)."""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        if runtime.compile is None or runtime.pch_build is None:
            return False
        return host.backend.host_files and enabled(host.config)

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        compiled = host.compiled
        root = compiled.root if compiled is not None else None
        if compiled is not None:
            key = compile_key(
                plan.fingerprint or runtime.fingerprint(), job.source_code, plan.layout()
            )
            if compiled.get(key):
                return plan

        def build(text: str, argv: tuple[str, ...], limits: Limits) -> bytes | None:
            return _build_header(host, runtime, text, argv, limits)

        header = for_source(
            runtime, job.source_code, store_root(root, host.config), build, host.config
        )
        if header is None:
            return plan
        made, argv = header
        return plan.changed(
            "pch",
            compile_argv=argv,
            ours=(*plan.ours, made.header, made.header.with_name(HEADER + ".gch")),
            ro_paths=(*plan.ro_paths, SharedFolder(made.directory)),
        )


def _build_header(
    host: Host, runtime: Runtime, text: str, argv: tuple[str, ...], limits: Limits
) -> bytes | None:
    """Build one precompiled header in a sandbox of its own; its bytes, or None."""
    try:
        box = host.backend.open_session(
            files={HEADER: text.encode()},
            purposes=("compile",),
            policy=host.isolation,
            ro_paths=runtime.extra_ro_paths,
        )
    except (SandboxError, OSError):
        return None
    try:
        env = default_env(box.workdir) | runtime.compile_env
        out = box.run(runtime.expand(argv), limits=limits, env=env, purpose="compile")
        if not out.ok:
            return None
        got = box.run(
            ["cat", HEADER + ".gch"],
            limits=limits,
            env=default_env(box.workdir),
            purpose="compile",
        )
        return got.stdout if got.ok and got.stdout else None
    except SandboxError:
        return None
    finally:
        box.close()
