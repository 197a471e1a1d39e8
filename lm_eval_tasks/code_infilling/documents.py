"""Building the task's documents: rows, their packed prompts, and the grading settings.

lm-eval calls the task's `custom_dataset` hook with the task's YAML metadata, the run's
`--metadata` and (from the CLI) the `model_args` keys. Everything a later step needs is stored in
each document, so prompts, scoring and grading depend only on the document:

- `prompt`: the FIM (or chat) prompt, packed into the budget (see `fim`);
- `prompt_info`: JSON, what the packing kept (cost, budget, unit, snippets kept);
- `fim_format`: JSON, the format used (its stop strings and chat flag drive the clean-up);
- `grading`: JSON, the grader settings (execution tasks only).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from typing import Any

from code_eval_taskpack.utils.errors import DataError
from code_eval_taskpack.utils.settings import as_bool, parse_settings
from lm_eval_tasks.code_infilling import data, fim
from lm_eval_tasks.code_infilling import settings as ss
from lm_eval_tasks.code_infilling.grading import GradingSettings, preflight
from lm_eval_tasks.predict_only import predicting

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=4)
def _load_tokenizer(name: str, gguf_file: str | None) -> Any:
    from transformers import AutoTokenizer

    extra = {"gguf_file": gguf_file} if gguf_file else {}
    return AutoTokenizer.from_pretrained(name, **extra)


def budget_from(kwargs: Mapping[str, Any]) -> fim.Budget:
    """Token budget with the given tokenizer, else the character budget.

    `sg_infilling_tokenizer` names a tokenizer explicitly (an error if it cannot be loaded);
    otherwise the model's own `tokenizer`/`pretrained` argument is tried and, if it cannot be
    loaded offline, the character budget is used with a warning.
    """
    explicit = parse_settings((ss.TOKENIZER,), kwargs)[ss.TOKENIZER.key]
    implicit = kwargs.get("tokenizer") or kwargs.get("pretrained")
    name = explicit or implicit
    if isinstance(name, str) and name:
        gguf = kwargs.get("gguf_file") if not explicit else None
        try:
            tokenizer = _load_tokenizer(name, gguf if isinstance(gguf, str) else None)
        except Exception as exc:
            if explicit:
                raise ValueError(
                    f"sg_infilling_tokenizer {name!r} cannot be loaded: {exc}"
                ) from exc
            log.warning("tokenizer %r unavailable (%s); using the character budget", name, exc)
        else:
            limit = parse_settings((ss.MAX_PROMPT_TOKENS,), kwargs)[ss.MAX_PROMPT_TOKENS.key]
            return fim.Budget.tokens(tokenizer, limit)
    limit = parse_settings((ss.MAX_PROMPT_CHARS,), kwargs)[ss.MAX_PROMPT_CHARS.key]
    return fim.Budget.chars(limit)


def format_from(kwargs: Mapping[str, Any]) -> fim.FimFormat:
    """The task's built-in format (YAML metadata `sg_infilling_variant`), or for the `custom`
    variant the user's `sg_infilling_format` (name, JSON object or JSON file)."""
    variant = str(kwargs.get("sg_infilling_variant") or fim.CUSTOM_VARIANT)
    user = parse_settings((ss.FORMAT,), kwargs)[ss.FORMAT.key]
    if variant != fim.CUSTOM_VARIANT:
        if user is not None:
            log.warning(
                "sg_infilling_format is set but task variant %r has a built-in format; "
                "run sg_infilling_custom[_exec] to use yours",
                variant,
            )
        return fim.builtin_formats()[variant]
    if user is None:
        raise ValueError(
            "task sg_infilling_custom needs a format: --metadata "
            '\'{"sg_infilling_format": "<built-in name | JSON object | path to a JSON file>"}\''
        )
    return fim.load_format(user)


def rows_from(kwargs: Mapping[str, Any]) -> tuple[data.Source, list[dict[str, Any]]]:
    """The rows a run selects and where they came from: the local file `sg_infilling_data` (or
    `SG_INFILLING_DATA`), else the Hub file `sg_infilling_hub_file` at `sg_infilling_revision`,
    cut to the first `sg_infilling_limit` rows. The tasks and the oracle check both read rows
    here, so the oracle checks the rows the tasks grade."""
    values = parse_settings((ss.DATA, ss.HUB_FILE, ss.REVISION, ss.LIMIT), kwargs)
    source = data.resolve_source(
        values[ss.DATA.key], hub_file=values[ss.HUB_FILE.key], revision=values[ss.REVISION.key]
    )
    rows = data.load_rows(source.path)
    limit = values[ss.LIMIT.key]
    if limit is not None:
        rows = rows[:limit]
    return source, rows


def build_docs(**kwargs: Any) -> list[dict[str, Any]]:
    """The task's documents (see the module docstring)."""
    source, rows = rows_from(kwargs)
    if not rows:  # lm-eval fails on an empty task far from the cause: say it here
        raise DataError(source.path, "no document: 0 rows read (or a limit of 0)")
    fmt = format_from(kwargs)
    execute = as_bool(kwargs.get("sg_infilling_exec", False), "sg_infilling_exec")
    grading = GradingSettings.from_kwargs(kwargs) if execute else None
    if grading is not None and not predicting():
        # before any generation: fail fast and say why (a --predict_only run grades elsewhere)
        preflight(rows, grading)
    budget = budget_from(kwargs)
    fmt_json = json.dumps(fmt.to_dict(), ensure_ascii=False)
    for row in rows:
        packed = fim.pack(
            fmt,
            repo=row["repo"],
            file_path=row["file_path"],
            prefix=row["prefix"],
            suffix=row["suffix"],
            snippets=[fim.Snippet(**s) for s in row["context"]],
            budget=budget,
        )
        row["prompt"] = packed.text
        row["prompt_info"] = json.dumps(packed.summary())
        row["fim_format"] = fmt_json
        row["grading"] = grading.freeze() if grading else ""
        row["data_source"] = f"{source.origin}:{source.path}"
    return rows


def build_dataset(**kwargs: Any) -> dict[str, Any]:
    """`{"test": datasets.Dataset}` for lm-eval's `custom_dataset`."""
    import datasets

    return {"test": datasets.Dataset.from_list(build_docs(**kwargs))}
