"""Grading a patch by a repository's own tests (SWE-bench style), with two backends.

- `local`: a scratch clone of a user-provided checkout, the patch and the task's test patch
  applied with git, pytest run inside the engine's sandbox with the grader's plugin, its signed
  report verified (`signed_report`), and the FAIL_TO_PASS/PASS_TO_PASS rule applied.
- `swebench`: the official harness (pinned version) run in Docker, its report read back.

Both take `RepoTestJob`s and return `RepoTestOutcome`s (patch applied?, tests run, per-test
status, resolved, and a separate `error` for failures that are not the patch's fault; `model.py`).
The files: `patching.py` (applying the patches), `in_sandbox.py` (a test command in the sandbox),
`pytest_plugin.py` and `signed_report.py` (the grader's report and its signature),
`log_parsers.py` (test logs per framework), `outcome_cache.py`, and the graders `local.py` and
`swebench_backend.py`.
"""

from .model import RepoTestJob, RepoTestOutcome, checkout_dir, decide

__all__ = ["RepoTestJob", "RepoTestOutcome", "checkout_dir", "decide"]
