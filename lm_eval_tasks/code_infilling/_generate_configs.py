"""Write the sg_infilling_<format>[_exec].yaml variants from fim_formats.json.

Every variant includes a shared template (`_template.yaml`, or `_exec_template.yaml` for the
graded tasks) and sets only data: its format name and the stop strings of that format, read from
the format data of `fim.py`. A format is added by editing fim_formats.json and running
`python -m lm_eval_tasks.code_infilling._generate_configs` (`--check` changes nothing and fails if
a file is out of date; a test runs it). Run it as a module: run as a file, the `utils.py` beside
it would hide the top-level `utils` package.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lm_eval_tasks import _yamlgen
from lm_eval_tasks.code_infilling.fim import CUSTOM_VARIANT, builtin_formats

FOLDER = Path(__file__).resolve().parent
COMMAND = "python -m lm_eval_tasks.code_infilling._generate_configs"
VERSION = 1.1  # 1.1: stop strings checked per family and sent for custom formats too
MAX_GEN_TOKS = 256


def stop_strings() -> dict[str, list[str]]:
    """Variant name -> the `until` list sent to the model: each built-in format's own stops.

    The user's format is known only at run time: `utils.load` puts its stop strings into the
    task's `generation_kwargs.until` when the dataset is built, before any request.
    """
    variants = {name: list(fmt.stop) for name, fmt in builtin_formats().items()}
    variants[CUSTOM_VARIANT] = []
    return variants


def variant(name: str, until: list[str], execute: bool) -> dict[str, Any]:
    # `protocol`: written by the task, how it was prompted and graded (lm_eval_tasks/protocol.py)
    metadata: dict[str, Any] = {"version": VERSION, "sg_infilling_variant": name, "protocol": {}}
    if execute:
        metadata["sg_infilling_exec"] = True
    return {
        "include": "_exec_template.yaml" if execute else "_template.yaml",
        "task": f"sg_infilling_{name}" + ("_exec" if execute else ""),
        # lm-eval replaces a template's generation_kwargs as a whole, so all three keys are set
        "generation_kwargs": {"until": until, "max_gen_toks": MAX_GEN_TOKS, "do_sample": False},
        "metadata": metadata,
    }


def documents() -> dict[str, dict[str, Any]]:
    """File name -> content for every variant (built-in formats plus `custom`)."""
    docs = {}
    for name, until in stop_strings().items():
        for execute in (False, True):
            doc = variant(name, until, execute)
            docs[f"{doc['task']}.yaml"] = doc
    return docs


def main(argv: Sequence[str] | None = None) -> int:
    return _yamlgen.main(FOLDER, COMMAND, documents(), argv)


if __name__ == "__main__":
    sys.exit(main())
