"""On-disk cache of judged programs, so reruns and interrupted batches never judge twice.

A result is stored under the SHA-256 of everything that can change a verdict: the runtime's
fingerprint (toolchain binary and version), the source, the tests, the limits, the comparator,
stop-on-first-fail, ENGINE_VERSION and an isolation policy other than `required`. The job's `id`
is deliberately not part of the key, so identical submissions share one entry.

A verdict is served only under the policy that judged it: a `best-effort` result has keys of its
own, and every hit's isolation snapshot is checked against the policy and the layers the backend
promises (`Engine`), so a result judged with a layer missing (e.g. by an older version that
keyed both policies alike) never answers a `required` request; it is judged again and replaced.
A `required` result does not serve a `best-effort` request either (other key): one re-judge.

Entries are JSON files sharded by the first two hex digits of the key and written atomically
(temporary file + os.replace), so a process killed mid-write leaves either the old state or the
full entry; an unreadable entry is a miss. INFRA_ERROR results are never stored: they are the
engine's failure, not the program's, and must be retried.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..types import Job, Result, Verdict
from ..version import ENGINE_VERSION
from .files import absolute, atomic_write


class _HasFingerprint(Protocol):
    def fingerprint(self) -> str: ...


Fingerprint = str | _HasFingerprint


def job_key(job: Job, fingerprint: Fingerprint, policy: str = "required") -> str:
    """Cache key of `job` judged by the runtime with `fingerprint` (a str or a Runtime) under the
    isolation `policy`. A `required` key is the one of caches made before policies were keyed;
    any other policy is part of the key, so its results are kept apart (the hit check,
    `Engine`, still checks every stored snapshot against the policy asked).

    The source and the tests' texts are hashed piece by piece with their lengths (never
    serialised whole), so a 100 MB expected output costs no copy of itself."""
    fp = fingerprint if isinstance(fingerprint, str) else fingerprint.fingerprint()
    header: dict[str, Any] = {
        "engine": ENGINE_VERSION,
        "runtime": fp,
        "time_limit_s": float(job.time_limit_s),
        "memory_limit_mb": int(job.memory_limit_mb),
        "comparator": job.comparator,
        "stop_on_first_fail": bool(job.stop_on_first_fail),
        "tests": [len(t.output) for t in job.tests],
    }
    if job.overrides is not None:  # absent otherwise
        header["overrides"] = job.overrides.to_dict()
    if policy != "required":  # absent otherwise: existing `required` keys stay valid
        header["isolation_policy"] = policy
    hasher = hashlib.sha256()
    _hash_text(hasher, json.dumps(header, sort_keys=True, separators=(",", ":")))
    _hash_text(hasher, job.source_code)
    for test in job.tests:
        _hash_text(hasher, test.input)
        for expected in test.output:
            _hash_text(hasher, expected)
    return hasher.hexdigest()


_HASH_PIECE = 1 << 20


def _hash_text(hasher: hashlib._Hash, text: str) -> None:
    """Length-prefixed, so concatenations of different texts never collide."""
    hasher.update(f"{len(text)}:".encode())
    for start in range(0, len(text), _HASH_PIECE):
        hasher.update(text[start : start + _HASH_PIECE].encode("utf-8", "surrogatepass"))


def cacheable(result: Result) -> bool:
    """Engine failures are never cached (they must be retried, not remembered)."""
    if result.verdict is Verdict.INFRA_ERROR:
        return False
    return all(t.verdict is not Verdict.INFRA_ERROR for t in result.tests)


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    stores: int = 0
    corrupt: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "hits": self.hits,
            "misses": self.misses,
            "stores": self.stores,
            "corrupt": self.corrupt,
        }


class ResultCache:
    """Thread-safe: several workers (threads or processes) may read and write concurrently."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = absolute(root)
        self.stats = CacheStats()
        self._lock = threading.Lock()

    def path_for(self, key: str) -> Path:
        return self.root / key[:2] / f"{key[2:]}.json"

    def get(self, job: Job, fingerprint: Fingerprint) -> Result | None:
        """The stored result for `job` (re-labelled with its id, `cached=True`), or None."""
        key = job_key(job, fingerprint)
        result = self.get_key(key)
        if result is not None:
            result.id = job.id
        return result

    def put(self, job: Job, fingerprint: Fingerprint, result: Result) -> bool:
        """Store `result` for `job`; returns False (and stores nothing) for INFRA_ERROR."""
        return self.put_key(job_key(job, fingerprint), result)

    def get_key(self, key: str, accept: Callable[[Result], bool] | None = None) -> Result | None:
        """The stored result under `key`, or None; with `accept`, a stored result it refuses
        (e.g. judged under a weaker isolation than asked) is a miss too."""
        path = self.path_for(key)
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            if raw.get("key") != key or raw.get("engine") != ENGINE_VERSION:
                raise ValueError("entry does not belong to this key")
            result = Result.from_dict(raw["result"])
        except FileNotFoundError:
            self._count("misses")
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self._count("misses")
            self._count("corrupt")
            return None
        if accept is not None and not accept(result):
            self._count("misses")
            return None
        result.cached = True
        self._count("hits")
        return result

    def put_key(self, key: str, result: Result) -> bool:
        if not cacheable(result):
            return False
        data: dict[str, Any] = {
            "key": key,
            "engine": ENGINE_VERSION,
            "result": {**result.to_dict(), "cached": False, "id": ""},
        }
        path = self.path_for(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # ASCII escapes (json's default) keep lone surrogates of odd output storable
            atomic_write(path, json.dumps(data).encode("ascii"))
        except OSError:
            return False  # a full or read-only disk costs a re-judge later, never a verdict now
        self._count("stores")
        return True

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)
