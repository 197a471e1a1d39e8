"""Write the task and group YAMLs of xCodeEval.

Run `python -m lm_eval_tasks.xcodeeval._generate_configs` after changing languages, sampling or
groups (`--check` changes nothing and fails if a file is out of date; a test runs it).

Layout: the kinds and the sampling protocols are those of `kinds.py`. The hand-written
`_<kind>_template_yaml` files here hold each kind's prompt, data hook and metric wiring; the two
sampling protocols (`_paper_sampling_yaml`, `_greedy_sampling_yaml`) are generated here, because
their pass@k list follows from the sample count. Every task and group file lives in its kind's
subfolder (`synth/`, `translate/`, `apr/`, `tag/`, `tag_desc/`, `compile/`, `retrieval/`) and
holds only its name and the data it selects; an execution task includes its kind's template and
one sampling protocol. Templates stay in this folder because lm-eval resolves `!function utils.x`
next to the YAML that names it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lm_eval_tasks import _yamlgen
from lm_eval_tasks.xcodeeval import kinds
from lm_eval_tasks.xcodeeval.data import SLUGS
from lm_eval_tasks.xcodeeval.kinds import SAMPLINGS, Sampling

FOLDER = Path(__file__).resolve().parent
COMMAND = "python -m lm_eval_tasks.xcodeeval._generate_configs"

MAX_GEN_TOKS = 1024
# Where a reply is over: the end-of-turn tokens of the common chat families (ChatML, Llama 3,
# Gemma, Phi-3; a backend also stops at its own end-of-sequence token) and a closing code fence
# followed by a blank line, the usual start of the prose after the program. A bare "```" would
# also match the opening fence, and "\n```\n" a bare opening fence after a lead-in line, so
# neither is used.
STOP = ["<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|endoftext|>", "\n```\n\n"]


def sampling_doc(sampling: Sampling) -> dict[str, Any]:
    """The generated `_<name>_sampling_yaml` of one sampling protocol (`kinds.SAMPLINGS`)."""
    generation: dict[str, Any] = {"until": list(STOP)}
    if sampling.greedy:
        generation |= {"do_sample": False, "temperature": 0.0}
    else:
        generation |= {"do_sample": True, "temperature": sampling.temperature, "top_p": 1.0}
    generation["max_gen_toks"] = MAX_GEN_TOKS
    # pass@k only: the counts (engine failures, rows not scored, which tests) are in the
    # task's protocol (`lm_eval_tasks.protocol`), not in the printed table
    metrics: list[dict[str, Any]] = [
        {"metric": f"pass@{k}", "aggregation": "mean", "higher_is_better": True}
        for k in sampling.ks
    ]
    return {"repeats": sampling.repeats, "generation_kwargs": generation, "metric_list": metrics}


def _task(name: str, includes: str | list[str], kind: str, cluster: str | None) -> dict[str, Any]:
    selection = {"xce_task": name, "xce_kind": kind}
    if cluster is not None:
        selection["xce_cluster"] = cluster
    return {"include": includes, "task": name, "dataset_kwargs": selection}


def documents() -> dict[str, dict[str, Any]]:
    """Relative path -> content of every generated file."""
    docs: dict[str, dict[str, Any]] = {}
    for sampling in SAMPLINGS:
        docs[sampling.template] = sampling_doc(sampling)
    for kind in kinds.of_family(kinds.EXECUTION):
        for sampling in SAMPLINGS:
            family = kind.task(sampling.name)
            includes = [f"../_{kind.stem}_template_yaml", f"../{sampling.template}"]
            names = [f"{family}_{slug}" for slug in SLUGS]
            for name, cluster in zip(names, SLUGS.values(), strict=True):
                docs[f"{kind.yaml_folder}/{name}.yaml"] = _task(name, includes, kind.stem, cluster)
            metrics = [f"pass@{k}" for k in sampling.ks]
            docs[f"{kind.yaml_folder}/_{family}.yaml"] = _yamlgen.group(
                family, names, metrics, filters="judge", weight_by_size=False
            )
    for kind in kinds.of_family(kinds.LABEL):
        base = kind.task()
        template = f"../_{kind.stem}_template_yaml"
        folder = kind.yaml_folder
        docs[f"{folder}/{base}.yaml"] = _task(base, template, kind.stem, None)
        for slug, cluster in SLUGS.items():
            docs[f"{folder}/{base}_{slug}.yaml"] = _task(
                f"{base}_{slug}", template, kind.stem, cluster
            )
    for kind in kinds.of_family(kinds.RETRIEVAL):
        name = kind.task()
        template = f"../_{kind.stem}_template_yaml"
        docs[f"{kind.yaml_folder}/{name}.yaml"] = _task(name, template, kind.stem, None)
    return docs


def main(argv: Sequence[str] | None = None) -> int:
    return _yamlgen.main(FOLDER, COMMAND, documents(), argv)


if __name__ == "__main__":
    sys.exit(main())
