"""What a task run records about how it was scored, and the check that no setting is misspelt.

lm-eval writes every task's config into the results file, its `metadata` included
(`results_<date>.json` -> `configs.<task>.metadata`). Each task template declares an empty
`protocol` mapping in that metadata. lm-eval calls the dataset hook with the metadata's own values
(`custom_dataset(**metadata, **dataset_kwargs)`), so the hook receives that very mapping and fills
it (`record`): what it writes is in the results file as `configs.<task>.metadata.protocol`, for
every run, with or without `--log_samples`. A step that runs later in the same process (xCodeEval's
judging filter) adds what only it knows through `update`, by the key the documents carry.

Every hook first calls `check_settings`: a key with one of the pack's prefixes (`xcodeeval_`,
`clozetest_`, `sg_infilling_`, `exec_`, `ray_`) that no benchmark declares is an error naming the
nearest declared key, raised while the tasks are built, before any generation.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from code_eval_taskpack.utils.settings import check_known, known_keys
from lm_eval_tasks.clozetest_maxmin import settings as cloze
from lm_eval_tasks.code_infilling import settings as infill
from lm_eval_tasks.xcodeeval import settings as xce

PROTOCOL_KEY = "protocol"

#: key prefixes the pack owns: a key with one of them must be a declared setting
PREFIXES = ("xcodeeval_", "exec_", "ray_", "clozetest_", "sg_infilling_")
#: every key the benchmarks read
KNOWN = tuple(
    known_keys(
        (
            *xce.SETTINGS,
            *cloze.SETTINGS,
            *infill.DATA_SETTINGS,
            *infill.BUDGET_SETTINGS,
            *infill.GRADING_SETTINGS,
        )
    )
)
#: prefixed keys the task files themselves set (task selection), never the user's
INTERNAL = ("clozetest_language", "sg_infilling_variant", "sg_infilling_exec")

# key carried by a task's documents -> its protocol mapping (the one lm-eval will write)
_RECORDS: dict[str, dict[str, Any]] = {}
_OWNERS: dict[str, tuple[str, str]] = {}  # key -> (label, task YAML file) that wrote it
_LATEST: dict[str, str] = {}  # task -> key of its latest record


def check_settings(kwargs: Mapping[str, Any]) -> None:
    """A ValueError for every key with the pack's prefixes that no benchmark reads."""
    check_known(kwargs, PREFIXES, KNOWN, INTERNAL)


def record(kwargs: Mapping[str, Any], label: str, fields: Mapping[str, Any]) -> str:
    """Write `fields` into the task's protocol mapping (see the module docstring); returns the
    key by which later steps of the run `update` it. `label` (the task, or the benchmark and
    language) names the task in errors and, for xCodeEval, finds its latest record. Called
    without the key (not by lm-eval: the tests' direct calls), it records nothing; every task
    YAML of the pack declares it (a test checks).

    A task may build its documents again (lm-eval's `download`): its own mapping, seen again with
    the same `label` and YAML file (`config_source`), gets the new record in place of the old
    one. The same mapping reaching another task can only come from --metadata, and is refused."""
    if PROTOCOL_KEY not in kwargs:
        return ""
    slot = kwargs[PROTOCOL_KEY]
    if not isinstance(slot, dict):
        raise ValueError(
            f"{label}: metadata key {PROTOCOL_KEY!r} must be the task YAML's empty mapping "
            f"(`metadata: {{{PROTOCOL_KEY}: {{}}}}`), got {type(slot).__name__}; it is written by "
            "the task, never set in --metadata"
        )
    owner = (label, str(kwargs.get("config_source") or ""))
    for seen, other in list(_RECORDS.items()):
        if other is not slot:
            continue
        if _OWNERS[seen] != owner:
            # each task has its own copy of its YAML: one mapping of two tasks came from --metadata
            raise ValueError(
                f"{label}: metadata key {PROTOCOL_KEY!r} is shared by several tasks: it is "
                "written by each task, never set in --metadata"
            )
        del _RECORDS[seen], _OWNERS[seen]  # the same task again: its new record replaces it
    slot.clear()
    slot.update(fields)
    key = f"{label}#{uuid.uuid4().hex}"
    _RECORDS[key] = slot  # kept alive, so `is` above never meets a recycled id
    _OWNERS[key] = owner
    _LATEST[label] = key
    return key


def update(key: str, task: str, fields: Mapping[str, Any]) -> bool:
    """Add `fields` to the protocol recorded under `key` (or, for documents read back from
    lm-eval's request cache, the latest record of `task`); False if there is none."""
    slot = _RECORDS.get(key) or _RECORDS.get(_LATEST.get(task, ""))
    if slot is None:
        return False
    slot.update(fields)
    return True
