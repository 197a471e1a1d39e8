"""On-disk cache of repository-test outcomes, so a rerun grades only what it has not graded yet.

An outcome is stored under the SHA-256 of everything that decides it: the repository and base
commit, the candidate patch and the file contents it must produce, the task's test patch and
wanted tests, the backend's other inputs (SWE-bench instance, version, environment commit), the
grader's identity (test command and the executable it resolves to, log parser, limits; or the
harness version and image namespace) and ENGINE_VERSION. The job's `id` is not part of the key,
so identical patches share one entry.

An outcome with an `error` (a grading or data failure, never the patch's fault) is never stored:
it must be graded again. Entries are written atomically (`cache.atomic_write`); an unreadable
or foreign entry is a miss.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from ..caches.files import absolute, atomic_write
from ..caches.results import CacheStats
from ..version import ENGINE_VERSION
from .model import RepoTestJob, RepoTestOutcome

_OUTCOME_FIELDS = {f.name for f in fields(RepoTestOutcome)}


def outcome_key(job: RepoTestJob, grader: Mapping[str, Any]) -> str:
    """The cache key of `job` graded by the grader whose identity is `grader` (JSON values)."""
    content = {
        "engine": ENGINE_VERSION,
        "grader": dict(grader),
        "job": {k: v for k, v in asdict(job).items() if k != "id"},
    }
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class OutcomeCache:
    """Thread-safe (the local grader grades jobs in parallel threads)."""

    def __init__(self, root: str | Path) -> None:
        self.root = absolute(root)
        self.stats = CacheStats()
        self._lock = threading.Lock()

    def path_for(self, key: str) -> Path:
        return self.root / key[:2] / f"{key[2:]}.json"

    def get(self, job: RepoTestJob, grader: Mapping[str, Any]) -> RepoTestOutcome | None:
        """The stored outcome of `job` (re-labelled with its id), or None."""
        key = outcome_key(job, grader)
        try:
            raw = json.loads(self.path_for(key).read_text(encoding="utf-8"))
            if raw.get("key") != key or raw.get("engine") != ENGINE_VERSION:
                raise ValueError("entry does not belong to this key")
            stored = raw["outcome"]
            if not isinstance(stored, dict) or set(stored) != _OUTCOME_FIELDS:
                raise ValueError("not an outcome")
            outcome = RepoTestOutcome(**{**stored, "id": job.id})
        except FileNotFoundError:
            self._count("misses")
            return None
        except (OSError, ValueError, KeyError, TypeError):
            self._count("misses")
            self._count("corrupt")
            return None
        if outcome.error:  # never stored; a planted one is not trusted either
            self._count("misses")
            return None
        self._count("hits")
        return outcome

    def put(self, job: RepoTestJob, grader: Mapping[str, Any], outcome: RepoTestOutcome) -> bool:
        """Store `outcome`; False (nothing stored) for a grading error or an unwritable disk."""
        if outcome.error:
            return False
        key = outcome_key(job, grader)
        data = {"key": key, "engine": ENGINE_VERSION, "outcome": {**outcome.to_dict(), "id": ""}}
        path = self.path_for(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps(data).encode("ascii"))
        except OSError:
            return False  # costs a regrade later, never an outcome now
        self._count("stores")
        return True

    def _count(self, name: str) -> None:
        with self._lock:
            setattr(self.stats, name, getattr(self.stats, name) + 1)
