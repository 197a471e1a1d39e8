"""Every task and group of the pack as lm-eval resolves it, dumped to JSON.

The YAML files are generated and include templates, so a change to a generator or a template can
change tasks it was not meant to touch. This loads every task and group through lm-eval's own
TaskManager (includes merged, `!function` hooks imported, defaults filled in by `TaskConfig`) and
writes one canonical JSON document; two dumps, taken before and after a change, must be equal
unless the change was meant to alter a task.

    python -m tests.task_configs dump OUT.json [--tasks-dir DIR] [--metadata JSON]
    python -m tests.task_configs compare BEFORE.json AFTER.json

Hooks are written as the file that defines them (relative to the tasks folder) plus their name,
so a hook that starts resolving to another `utils.py` shows up as a difference. The path of a
task's YAML file (`config_source`) is reduced to its file name: moving a file into a subfolder
does not change the task.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.conftest import ROOT, SHARED_DATA

FIXTURES = ROOT / "tests" / "fixtures"


def loading_metadata(repos_dir: Path) -> dict[str, Any]:
    """`--metadata` values under which every task can build its documents offline; `repos_dir`
    receives the infilling fixture repository (its `_exec` tasks check it when loading)."""
    from tests.infilling_support import build_repos

    build_repos(repos_dir)
    return {
        "clozetest_data_dir": str(SHARED_DATA / "codexglue_clozetest_maxmin"),
        "clozetest_predict_only": True,
        "xcodeeval_data_dir": str(FIXTURES / "xcodeeval"),
        "sg_infilling_data": str(FIXTURES / "infilling" / "rows.jsonl"),
        "sg_infilling_format": "qwen",  # what sg_infilling_custom[_exec] needs to load
        "grader": "local",
        "repos_dir": str(repos_dir),
    }


class _Encoder:
    """Turns lm-eval config values into plain JSON, naming hooks by their defining file."""

    def __init__(self, tasks_dir: Path) -> None:
        self.tasks_dir = tasks_dir.resolve()

    def _where(self, fn: Any) -> str:
        try:
            source = Path(inspect.getfile(fn)).resolve()
        except TypeError:
            return "<builtin>"
        if source.is_relative_to(self.tasks_dir):
            return "tasks:" + source.relative_to(self.tasks_dir).as_posix()
        if source.is_relative_to(self.tasks_dir.parent):
            return "pack:" + source.relative_to(self.tasks_dir.parent).as_posix()
        return "lib:" + (getattr(inspect.getmodule(fn), "__name__", None) or source.name)

    def encode(self, value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return {"__class__": type(value).__name__, **self.encode(fields)}
        if isinstance(value, Mapping):
            return {
                str(k): self.encode(v) for k, v in sorted(value.items(), key=lambda i: str(i[0]))
            }
        if isinstance(value, (list, tuple)):
            return [self.encode(v) for v in value]
        if isinstance(value, functools.partial):
            return {"__partial__": self.encode(value.func), "args": self.encode(value.args)}
        if inspect.isfunction(value) or inspect.isbuiltin(value) or inspect.isclass(value):
            return {"__callable__": value.__qualname__, "file": self._where(value)}
        if value is None or isinstance(value, (str, int, float, bool)):
            return value
        return {"__object__": type(value).__qualname__, "file": self._where(type(value))}


def hook_files(config: Any, tasks_dir: Path) -> set[str]:
    """Where each hook (function, filter, class) named by `config` is defined, as in a dump."""
    found: set[str] = set()

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            if "file" in value and ("__callable__" in value or "__object__" in value):
                found.add(value["file"])
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    visit(_Encoder(tasks_dir).encode(config))
    return found


def _without_run_values(config: Any, meta: Mapping[str, Any]) -> Any:
    """The encoded config minus what the run passed in (`--metadata` lands in the metadata of
    every task and group) and with `config_source` reduced to the file name, at any depth."""
    if isinstance(config, list):
        return [_without_run_values(item, meta) for item in config]
    if not isinstance(config, dict):
        return config
    out = {key: _without_run_values(value, meta) for key, value in config.items()}
    metadata = out.get("metadata")
    if isinstance(metadata, dict):
        for key, value in meta.items():
            if metadata.get(key) == value:
                del metadata[key]
        if isinstance(metadata.get("config_source"), str):
            metadata["config_source"] = Path(metadata["config_source"]).name
    return out


def dump(tasks_dir: Path, meta: Mapping[str, Any]) -> dict[str, Any]:
    """{"tasks": {name: resolved config}, "groups": {name: {config, members}}, "tags": [...]} of
    every entry lm-eval indexes under `tasks_dir`, loaded with `--metadata` values `meta`."""
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(tasks_dir), include_defaults=False, metadata=dict(meta))
    encoder = _Encoder(tasks_dir)
    names = sorted(manager.all_subtasks)
    loaded = manager.load(names)["tasks"]
    tasks = {name: _without_run_values(encoder.encode(loaded[name].config), meta) for name in names}
    groups = {}
    for name in sorted(manager.all_groups):
        built = manager.load([name])
        (group,) = [g for g in built["groups"].values() if g.name == name]
        fields = {
            "alias": group.alias,
            "aggregate_metric_list": group.aggregate_metric_list,
            "metadata": group.metadata,
            "config": group._config,
        }
        groups[name] = {
            **_without_run_values(encoder.encode(fields), meta),
            "members": sorted(built["tasks"]),
        }
    return {"tasks": tasks, "groups": groups, "tags": sorted(manager.all_tags)}


def differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """One line per task or group that differs between two dumps (empty: identical)."""
    lines = []
    for kind in ("tasks", "groups"):
        old, new = before[kind], after[kind]
        lines += [f"{kind}: only before: {name}" for name in sorted(set(old) - set(new))]
        lines += [f"{kind}: only after: {name}" for name in sorted(set(new) - set(old))]
        for name in sorted(set(old) & set(new)):
            if old[name] != new[name]:
                keys = sorted(
                    k
                    for k in set(old[name]) | set(new[name])
                    if old[name].get(k) != new[name].get(k)
                )
                lines.append(f"{kind}: {name} differs in {', '.join(keys)}")
    if before["tags"] != after["tags"]:
        lines.append(f"tags: {before['tags']} -> {after['tags']}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="write the resolved configs of every task and group")
    d.add_argument("out", type=Path)
    d.add_argument("--tasks-dir", type=Path, default=ROOT / "lm_eval_tasks")
    d.add_argument("--metadata", type=json.loads, default={}, help="JSON over the defaults")
    c = sub.add_parser("compare", help="list what differs between two dumps")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        with tempfile.TemporaryDirectory() as repos:
            result = dump(args.tasks_dir, {**loading_metadata(Path(repos)), **args.metadata})
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{len(result['tasks'])} tasks, {len(result['groups'])} groups -> {args.out}")
        return 0
    before, after = (json.loads(p.read_text(encoding="utf-8")) for p in (args.before, args.after))
    found = differences(before, after)
    for line in found:
        print(line)
    print(
        f"{len(before['tasks'])} / {len(after['tasks'])} tasks, {len(before['groups'])} / "
        f"{len(after['groups'])} groups: {'identical' if not found else f'{len(found)} differ'}"
    )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
