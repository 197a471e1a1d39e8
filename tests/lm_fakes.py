"""Deterministic lm-eval models for tests.

`ScriptedLM` answers every request through plain Python functions, so a test can build an oracle
(knows the gold answer), an always-wrong model, or a fixed reply. It is registered in lm-eval's
model registry as `scripted`; from the CLI, `--model scripted --model_args script=MODULE:FUNC`
names a function `FUNC(kind, context, extra) -> str | float` (kind is "generate" or
"loglikelihood"; extra is gen_kwargs or the continuation). `tests/run_lm_eval.py` imports this
module and then runs lm-eval's real CLI entry point.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from tests.conftest import ROOT, TASKS_DIR

Script = Callable[[str, str, Any], Any]


def _load(spec: str) -> Script:
    module, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(module), name)
    return fn  # type: ignore[no-any-return]


RECORD_ENV = "CODE_EVAL_TEST_MODEL_EVENTS"


def _record(event: str) -> None:
    """Append `event` to the file named by $CODE_EVAL_TEST_MODEL_EVENTS (CLI runs in a
    subprocess tell the test when the model was built and whether it generated)."""
    path = os.environ.get(RECORD_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(event + "\n")


@register_model("scripted")
class ScriptedLM(LM):
    """An LM whose answers come from `script(kind, context, extra)`."""

    def __init__(self, script: Script | str | None = None, **_: Any) -> None:
        super().__init__()
        if isinstance(script, str):
            script = _load(script)
        self.script: Script = script or (lambda kind, ctx, extra: "" if kind == "generate" else 0.0)
        self.generate_calls: list[tuple[str, dict[str, Any]]] = []
        self.loglikelihood_calls: list[tuple[str, str]] = []
        _record("constructed")

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):  # type: ignore[no-untyped-def,override]
        args = dict(kv.split("=", 1) for kv in arg_string.split(",") if kv)
        return cls(**args)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:  # type: ignore[no-untyped-def,override]
        out = []
        _record("generate")
        for req in requests:
            context, gen_kwargs = req.args
            self.generate_calls.append((context, dict(gen_kwargs)))
            out.append(str(self.script("generate", context, gen_kwargs)))
        return out

    def loglikelihood(self, requests, disable_tqdm: bool = False) -> list[tuple[float, bool]]:  # type: ignore[no-untyped-def,override]
        out = []
        for req in requests:
            context, continuation = req.args
            self.loglikelihood_calls.append((context, continuation))
            out.append((float(self.script("loglikelihood", context, continuation)), False))
        return out

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False) -> list[float]:  # type: ignore[no-untyped-def,override]
        return [float(self.script("loglikelihood", "", req.args[0])) for req in requests]

    # Chat-template support, so tests can exercise --apply_chat_template offline.
    @property
    def tokenizer_name(self) -> str:
        return "scripted"

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        return "scripted-chat"

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        text = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in chat_history)
        return text + ("<|assistant|>\n" if add_generation_prompt else "")


def task_manager(
    include_path: Path | str = TASKS_DIR, metadata: Mapping[str, Any] | None = None
) -> Any:
    """A TaskManager seeing only this pack's tasks under `include_path` (no lm-eval defaults)."""
    from lm_eval.tasks import TaskManager

    return TaskManager(
        include_path=str(include_path), include_defaults=False, metadata=dict(metadata or {})
    )


def evaluate(
    script: Script | None,
    tasks: list[str],
    metadata: Mapping[str, Any],
    include_path: Path | str = TASKS_DIR,
    **kwargs: Any,
) -> tuple[dict[str, Any], ScriptedLM]:
    """In-process lm-eval run with a `ScriptedLM`; returns (results dict, the model)."""
    import lm_eval

    lm = ScriptedLM(script=script)
    out = lm_eval.simple_evaluate(
        model=lm, tasks=tasks, task_manager=task_manager(include_path, metadata), **kwargs
    )
    assert out is not None
    return out, lm


@dataclass
class CliRun:
    """What one `lm_eval` command-line run left behind."""

    returncode: int
    stdout: str
    stderr: str
    report: dict[str, Any] = field(default_factory=dict)  # the results_*.json file, if any
    sample_files: dict[str, Path] = field(default_factory=dict)  # samples_*.jsonl by file name

    @property
    def log(self) -> str:
        return self.stdout + self.stderr

    def samples(self, task: str) -> list[dict[str, Any]]:
        """The logged samples of `task` (exactly one samples file must exist for it)."""
        pattern = re.compile(rf"samples_{re.escape(task)}_\d{{4}}-.*\.jsonl")
        (path,) = [p for name, p in self.sample_files.items() if pattern.fullmatch(name)]
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_cli(
    script: str,
    tasks: str,
    output_path: Path,
    *args: str,
    include_path: Path | str = TASKS_DIR,
    metadata: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    checked_run: bool = False,
) -> CliRun:
    """Run lm-eval's real CLI (via tests/run_lm_eval.py) with the `scripted` model answering
    through `script` ("module:function"), logging samples. With `checked_run`, the same
    arguments go through `code-eval run` (tests/run_code_eval.py) instead. With `check`, the run
    must succeed and write exactly one results file."""
    entry = ["run_code_eval.py", "run"] if checked_run else ["run_lm_eval.py"]
    command = [
        sys.executable, str(ROOT / "tests" / entry[0]), *entry[1:],
        "--model", "scripted", "--model_args", f"script={script}",
        "--tasks", tasks,
        "--include_path", str(include_path),
        "--output_path", str(output_path),
        "--log_samples",
        *(["--metadata", json.dumps(dict(metadata))] if metadata is not None else []),
        *args,
    ]  # fmt: skip
    done = subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    run = CliRun(done.returncode, done.stdout, done.stderr)
    if check:
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
        files = sorted(output_path.glob("**/results_*.json"))
        assert len(files) == 1, files
        run.report = json.loads(files[0].read_text())
        run.sample_files = {p.name: p for p in output_path.glob("**/samples_*.jsonl")}
    return run
