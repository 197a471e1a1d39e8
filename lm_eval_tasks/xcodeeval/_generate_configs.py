"""Write the task and group YAMLs of xCodeEval.

Run `python -m lm_eval_tasks.xcodeeval._generate_configs` after changing languages, sampling or
groups (`--check` changes nothing and fails if a file is out of date; a test runs it).

Layout: the hand-written `_<kind>_template_yaml` files here hold each kind's prompt, data hook and
metric wiring; the two sampling protocols (`_paper_sampling_yaml`, `_greedy_sampling_yaml`) are
generated here, because their pass@k list follows from the sample count. Every task and group
file lives in its kind's subfolder (`synth/`, `translate/`, `apr/`, `tag/`, `tag_desc/`,
`compile/`, `retrieval/`) and holds only its name and the data it selects; an execution task
includes its kind's template and one sampling protocol. Templates stay in this folder because
lm-eval resolves `!function utils.x` next to the YAML that names it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lm_eval_tasks import _yamlgen
from lm_eval_tasks.xcodeeval.data import SLUGS
from lm_eval_tasks.xcodeeval.metrics import ks_for

FOLDER = Path(__file__).resolve().parent
COMMAND = "python -m lm_eval_tasks.xcodeeval._generate_configs"

# The xCodeEval paper's sampling protocol for program synthesis (its k values: DEFAULT_KS).
PAPER_SAMPLES = 20
PAPER_TEMPERATURE = 0.3157894736842105
MAX_GEN_TOKS = 1024
# Where a reply is over: the end-of-turn tokens of the common chat families (ChatML, Llama 3,
# Gemma, Phi-3; a backend also stops at its own end-of-sequence token) and a closing code fence
# followed by a blank line, the usual start of the prose after the program. A bare "```" would
# also match the opening fence, and "\n```\n" a bare opening fence after a lead-in line, so
# neither is used.
STOP = ["<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|endoftext|>", "\n```\n\n"]

EXEC_KINDS = ("synth", "translate", "apr")  # judged by running programs, sampled
LABEL_KINDS = ("tag", "tag_desc", "compile")  # one task per language plus one pooled task
RETRIEVAL_KINDS = ("retrieval_nl_code", "retrieval_code_code")


@dataclass(frozen=True)
class Sampling:
    """How many programs are sampled per problem, and how."""

    name: str  # task-name suffix ("" for the paper's protocol) and template name
    repeats: int
    greedy: bool

    @property
    def ks(self) -> list[int]:
        return ks_for(self.repeats)

    @property
    def template(self) -> str:
        return f"_{self.name or 'paper'}_sampling_yaml"

    def doc(self) -> dict[str, Any]:
        generation: dict[str, Any] = {"until": list(STOP)}
        if self.greedy:
            generation |= {"do_sample": False, "temperature": 0.0}
        else:
            generation |= {"do_sample": True, "temperature": PAPER_TEMPERATURE, "top_p": 1.0}
        generation["max_gen_toks"] = MAX_GEN_TOKS
        # pass@k only: the counts (engine failures, rows not scored, which tests) are in the
        # task's protocol (`lm_eval_tasks.protocol`), not in the printed table
        metrics: list[dict[str, Any]] = [
            {"metric": f"pass@{k}", "aggregation": "mean", "higher_is_better": True}
            for k in self.ks
        ]
        return {"repeats": self.repeats, "generation_kwargs": generation, "metric_list": metrics}


PAPER = Sampling("", PAPER_SAMPLES, greedy=False)
GREEDY = Sampling("greedy", 1, greedy=True)


def _task(name: str, includes: str | list[str], kind: str, cluster: str | None) -> dict[str, Any]:
    selection = {"xce_task": name, "xce_kind": kind}
    if cluster is not None:
        selection["xce_cluster"] = cluster
    return {"include": includes, "task": name, "dataset_kwargs": selection}


def documents() -> dict[str, dict[str, Any]]:
    """Relative path -> content of every generated file."""
    docs: dict[str, dict[str, Any]] = {}
    for sampling in (PAPER, GREEDY):
        docs[sampling.template] = sampling.doc()
    for kind in EXEC_KINDS:
        for sampling in (PAPER, GREEDY):
            family = "_".join(filter(None, ["xcodeeval", kind, sampling.name]))
            includes = [f"../_{kind}_template_yaml", f"../{sampling.template}"]
            names = [f"{family}_{slug}" for slug in SLUGS]
            for name, cluster in zip(names, SLUGS.values(), strict=True):
                docs[f"{kind}/{name}.yaml"] = _task(name, includes, kind, cluster)
            metrics = [f"pass@{k}" for k in sampling.ks]
            docs[f"{kind}/_{family}.yaml"] = _yamlgen.group(
                family, names, metrics, filters="judge", weight_by_size=False
            )
    for kind in LABEL_KINDS:
        base = f"xcodeeval_{kind}"
        template = f"../_{kind}_template_yaml"
        docs[f"{kind}/{base}.yaml"] = _task(base, template, kind, None)
        for slug, cluster in SLUGS.items():
            docs[f"{kind}/{base}_{slug}.yaml"] = _task(f"{base}_{slug}", template, kind, cluster)
    for kind in RETRIEVAL_KINDS:
        name = f"xcodeeval_{kind}"
        docs[f"retrieval/{name}.yaml"] = _task(name, f"../_{kind}_template_yaml", kind, None)
    return docs


def main(argv: Sequence[str] | None = None) -> int:
    return _yamlgen.main(FOLDER, COMMAND, documents(), argv)


if __name__ == "__main__":
    sys.exit(main())
