"""Compiled programs, kept so that the same source is never compiled twice.

xCodeEval-style scoring judges one program against several test sets (samples, then hidden
tests; re-runs with other limits), and compiling dominates the cost of compiled languages (Kotlin
takes seconds). An entry is keyed by the runtime's fingerprint (binary, version, registry entry)
and the source, and holds the compiler's verdict and output plus, for a successful compile, a tar
archive of the work dir right after compilation (made inside the sandbox before any program code
ran, and unpacked inside the next sandbox, so it is only ever compiler output).

Entries live in memory (bounded) and, when the engine has a result cache, on disk next to it
(`<cache>/compiled/`, written atomically), so a rerun of an interrupted batch does not recompile.

An entry records the isolation snapshot of the sandbox that compiled it (`isolation`), and the
runner uses it only when that snapshot meets the policy asked (`isolation.policy_refusal`): a
compile made with a layer missing could have read a host file into its output. An entry with no
snapshot (written by an older version) never serves `required`: it is compiled again. A policy
other than `required` is part of the runner's key, so `required` keys are those of older caches.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..isolation import policy_refusal
from ..version import ENGINE_VERSION
from .files import atomic_write

MAX_MEMORY_BYTES = 256 * 1024 * 1024


@dataclass
class CompiledEntry:
    ok: bool
    stdout: str
    stderr: str
    detail: str
    time_s: float
    archive: bytes | None  # tar of the work dir after a successful compile
    #: the compiling sandbox's isolation snapshot (None: unknown, an older entry)
    isolation: dict[str, Any] | None = None

    @property
    def size(self) -> int:
        """What the entry costs the memory layer (archive and captured output)."""
        return len(self.archive or b"") + len(self.stderr) + len(self.stdout)

    def meta(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "detail": self.detail,
            "time_s": self.time_s,
            "engine": ENGINE_VERSION,
            "has_archive": self.archive is not None,
            "isolation": self.isolation,
        }


def compile_key(fingerprint: str, source: str, layout: dict[str, str]) -> str:
    blob = json.dumps(
        {"runtime": fingerprint, "source": source, "layout": layout, "engine": ENGINE_VERSION},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


class CompileCache:
    """Thread-safe memory LRU with an optional on-disk layer."""

    def __init__(self, root: Path | None = None, max_bytes: int = MAX_MEMORY_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self._mem: OrderedDict[str, CompiledEntry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def _paths(self, key: str) -> tuple[Path, Path]:
        assert self.root is not None
        d = self.root / key[:2]
        return d / f"{key[2:]}.json", d / f"{key[2:]}.tar"

    def get(self, key: str) -> CompiledEntry | None:
        with self._lock:
            entry = self._mem.get(key)
            if entry is not None:
                self._mem.move_to_end(key)
                return entry
        if self.root is None:
            return None
        meta_path, tar_path = self._paths(key)
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if meta.get("engine") != ENGINE_VERSION:
                return None
            archive = tar_path.read_bytes() if meta.get("has_archive") else None
            entry = CompiledEntry(
                ok=bool(meta["ok"]),
                stdout=str(meta.get("stdout", "")),
                stderr=str(meta.get("stderr", "")),
                detail=str(meta.get("detail", "")),
                time_s=float(meta.get("time_s", 0.0)),
                archive=archive,
                isolation=meta["isolation"] if isinstance(meta.get("isolation"), dict) else None,
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if entry.ok and entry.archive is None:
            return None
        self._remember(key, entry)
        return entry

    def put(self, key: str, entry: CompiledEntry) -> None:
        self._remember(key, entry)
        if self.root is None:
            return
        meta_path, tar_path = self._paths(key)
        with contextlib.suppress(OSError):  # a full disk costs a recompile, never a verdict
            meta_path.parent.mkdir(parents=True, exist_ok=True)
            if entry.archive is not None:
                atomic_write(tar_path, entry.archive)
            atomic_write(meta_path, json.dumps(entry.meta()).encode())

    def _remember(self, key: str, entry: CompiledEntry) -> None:
        size = entry.size
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._mem.pop(key, None)
            if old is not None:
                self._bytes -= old.size
            self._mem[key] = entry
            self._bytes += size
            while self._bytes > self.max_bytes and self._mem:
                _, gone = self._mem.popitem(last=False)
                self._bytes -= gone.size


class PolicyView:
    """A compile cache as one policy sees it: `get` answers only entries whose recorded snapshot
    meets `policy` for the layers `promised` (an entry without one never meets `required`)."""

    def __init__(self, cache: CompileCache, policy: str, promised: tuple[str, ...]) -> None:
        self.cache = cache
        self.policy = policy
        self.promised = promised

    @property
    def root(self) -> Path | None:
        return self.cache.root

    def get(self, key: str) -> CompiledEntry | None:
        entry = self.cache.get(key)
        if entry is None:
            return None
        if entry.isolation is None and self.policy == "required":
            return None
        if policy_refusal(self.policy, self.promised, entry.isolation or {}):
            return None
        return entry

    def put(self, key: str, entry: CompiledEntry) -> None:
        self.cache.put(key, entry)
