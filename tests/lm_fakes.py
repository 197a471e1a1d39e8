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
from collections.abc import Callable
from typing import Any

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

Script = Callable[[str, str, Any], Any]


def _load(spec: str) -> Script:
    module, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(module), name)
    return fn  # type: ignore[no-any-return]


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

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):  # type: ignore[no-untyped-def,override]
        args = dict(kv.split("=", 1) for kv in arg_string.split(",") if kv)
        return cls(**args)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:  # type: ignore[no-untyped-def,override]
        out = []
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
