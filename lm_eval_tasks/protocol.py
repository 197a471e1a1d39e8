"""What a task run records about how it was scored, and the check that no setting is misspelt.

lm-eval writes every task's config into the results file, its `metadata` included
(`results_<date>.json` -> `configs.<task>.metadata`), and keeps that config, metadata dict and
all, on the task object from the dataset hook to the results file (`TaskConfig.to_dict`). Each
task template declares an empty `protocol` mapping in that metadata. The dataset hook `record`s
into the task's own metadata: the task's `Record` (a mapping that knows its task) takes that
mapping's place, so what it holds is in the results file as `configs.<task>.metadata.protocol`,
for every run, with or without `--log_samples`. A step that runs later in the same process
(xCodeEval's judging filter) adds what only it knows through `update`, into the metadata of the
task applying it. lm-eval hands its hooks only their data, never the task: `task_metadata` finds
the task on the call stack (`lm_eval_tasks.predict_only.calling_task`).

Every hook first calls `check_settings`: a key with one of the pack's prefixes (`xcodeeval_`,
`clozetest_`, `sg_infilling_`, `exec_`, `ray_`) that no benchmark declares is an error naming the
nearest declared key, raised while the tasks are built, before any generation.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from code_eval_taskpack.utils.settings import check_known, known_keys
from lm_eval_tasks.clozetest_maxmin import settings as cloze
from lm_eval_tasks.code_infilling import settings as infill
from lm_eval_tasks.predict_only import calling_task
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

#: the key a template's own `protocol` mapping gets once a task has claimed it: the same mapping
#: reaching another task (only --metadata can share one) is then refused there
CLAIMED_KEY = "recorded_by"


class Record(dict[str, Any]):
    """A task's protocol, in its metadata where the template's empty mapping was: a plain dict
    to lm-eval (which copies it into the results file) that knows the task that owns it."""

    #: (label, task YAML file) of the task that recorded it
    owner: tuple[str, str] = ("", "")


def check_settings(kwargs: Mapping[str, Any]) -> None:
    """A ValueError for every key with the pack's prefixes that no benchmark reads."""
    check_known(kwargs, PREFIXES, KNOWN, INTERNAL)


def task_metadata(fallback: dict[str, Any]) -> dict[str, Any]:
    """The metadata of the lm-eval task running the caller (its dataset hook or its filter): the
    dict lm-eval writes into the results file (a hook's kwargs are a copy of it); `fallback`
    when called outside lm-eval."""
    task = calling_task()
    metadata = getattr(getattr(task, "config", None), "metadata", None)
    return metadata if isinstance(metadata, dict) else fallback


def record(metadata: MutableMapping[str, Any], label: str, fields: Mapping[str, Any]) -> None:
    """Make `fields` the protocol of the task whose metadata is `metadata` (see the module
    docstring). `label` (the task, or the benchmark and language) and the task's YAML file
    (`config_source`) identify the task. Without the key (not under lm-eval: the tests' direct
    calls) it records nothing; every task YAML of the pack declares it (a test checks).

    A task may build its documents again (lm-eval's `download`): its own `Record` gets the new
    fields in place of the old ones. A mapping that reached another task first can only come
    from --metadata, and is refused, as is one given non-empty."""
    if PROTOCOL_KEY not in metadata:
        return
    slot = metadata[PROTOCOL_KEY]
    owner = (label, str(metadata.get("config_source") or ""))
    shared = ValueError(
        f"{label}: metadata key {PROTOCOL_KEY!r} is shared by several tasks: it is written by "
        "each task, never set in --metadata"
    )
    if isinstance(slot, Record):
        if slot.owner != owner:
            raise shared
    elif isinstance(slot, dict) and CLAIMED_KEY in slot:
        raise shared  # each task has its own copy of its YAML's: this one came from --metadata
    elif not isinstance(slot, dict) or slot:
        got = "a non-empty mapping" if isinstance(slot, dict) else type(slot).__name__
        raise ValueError(
            f"{label}: metadata key {PROTOCOL_KEY!r} must be the task YAML's empty mapping "
            f"(`metadata: {{{PROTOCOL_KEY}: {{}}}}`), got {got}; it is written by the task, "
            "never set in --metadata"
        )
    else:
        slot[CLAIMED_KEY] = label
        slot = metadata[PROTOCOL_KEY] = Record()
        slot.owner = owner
    slot.clear()
    slot.update(fields)


def update(metadata: Mapping[str, Any], fields: Mapping[str, Any]) -> bool:
    """Add `fields` to the protocol recorded in a task's `metadata`; False if there is none."""
    slot = metadata.get(PROTOCOL_KEY)
    if not isinstance(slot, Record):
        return False
    slot.update(fields)
    return True
