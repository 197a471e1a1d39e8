"""Jobs and outcomes of repository-test grading (a patch judged by a repository's own tests).

The rule is SWE-bench's: a patch resolves its task when every test of `fail_to_pass` (tests the
change must fix) and every test of `pass_to_pass` (tests it must not break) passes. A test the
runner did not report counts as failed. `error` is set only for failures of the grading
machinery or of the task data (a test patch that does not apply, a missing checkout, a crashed
harness): those are never the patch's fault and are reported apart from unresolved patches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .log_parsers import PASSING

#: Characters of a log kept in an outcome's `log_tail` (both backends).
LOG_TAIL = 4000


@dataclass(frozen=True)
class RepoTestJob:
    """One patch to grade against one repository state."""

    id: str
    repo: str  # "owner/name", used to find the checkout and in messages
    base_commit: str
    patch: str  # the candidate change (unified diff, paths a/ b/)
    test_patch: str  # the task's tests, applied after `patch`
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    #: files whose content after `patch` is known in advance (path, content); a mismatch means
    #: the patch was applied somewhere else than intended (fuzz) or the task data is broken
    expected_files: tuple[tuple[str, str], ...] = ()
    #: extra fields a backend may need (SWE-bench: version, environment_setup_commit, ...)
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass
class RepoTestOutcome:
    id: str
    patch_applied: bool = False
    resolved: bool = False
    tests_run: int = 0  # result lines the runner reported
    test_status: dict[str, str] = field(default_factory=dict)  # wanted test -> status
    fail_to_pass_passed: int = 0
    fail_to_pass_total: int = 0
    pass_to_pass_passed: int = 0
    pass_to_pass_total: int = 0
    backend: str = ""
    apply_method: str = ""
    detail: str = ""  # short human-readable reason
    error: str = ""  # grading/data failure, never the patch's fault
    command: dict[str, Any] = field(default_factory=dict)
    isolation: dict[str, Any] = field(default_factory=dict)
    log_tail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def decide(
    outcome: RepoTestOutcome,
    statuses: Mapping[str, str],
    fail_to_pass: Sequence[str],
    pass_to_pass: Sequence[str],
    *,
    killed: str | None = None,
) -> RepoTestOutcome:
    """Fill the F2P/P2P counts and `resolved` from per-test statuses (MISSING counts as failed).

    `killed` says why the test run had to be stopped (a time limit): such a run is never
    resolved, even when every wanted test was reported passed before it hung (e.g. on a thread
    that never ends), as in SWE-bench, and the reason leads the detail.
    """
    outcome.test_status = {t: statuses.get(t, "MISSING") for t in (*fail_to_pass, *pass_to_pass)}
    f2p = sum(outcome.test_status[t] in PASSING for t in fail_to_pass)
    p2p = sum(outcome.test_status[t] in PASSING for t in pass_to_pass)
    outcome.fail_to_pass_passed, outcome.fail_to_pass_total = f2p, len(fail_to_pass)
    outcome.pass_to_pass_passed, outcome.pass_to_pass_total = p2p, len(pass_to_pass)
    outcome.resolved = (
        outcome.patch_applied
        and not outcome.error
        and bool(fail_to_pass)
        and f2p == len(fail_to_pass)
        and p2p == len(pass_to_pass)
    )
    if not outcome.detail:
        outcome.detail = (
            f"FAIL_TO_PASS {f2p}/{len(fail_to_pass)} passed, "
            f"PASS_TO_PASS {p2p}/{len(pass_to_pass)} passed"
        )
    if killed:
        outcome.resolved = False
        outcome.detail = f"{killed}; {outcome.detail}"
    return outcome


def checkout_dir(repos_dir: Path, repo: str) -> Path:
    """Where the checkout of `owner/name` lives: `repos_dir/owner__name` (SWE-bench's naming)."""
    return Path(repos_dir) / repo.replace("/", "__")
