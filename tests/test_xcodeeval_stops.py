"""The execution tasks' stop strings: every reply ends at an end-of-turn token or at the blank
line after a closing code fence, and what the stop leaves is still the whole program."""

from __future__ import annotations

import pytest
from lm_eval.tasks._yaml_loader import load_yaml

from code_eval_taskpack.utils.code_extraction import extract_code
from tests.conftest import TASKS_DIR

FENCE_STOP = "\n```\n\n"


def _cut(reply: str, until: list[str]) -> str:
    """lm-eval's rule: the reply up to the first occurrence of any stop string."""
    for stop in until:
        reply = reply.split(stop)[0]
    return reply


@pytest.mark.parametrize(
    "task",
    ["synth/xcodeeval_synth_greedy_python", "synth/xcodeeval_synth_cpp",
     "translate/xcodeeval_translate_c", "apr/xcodeeval_apr_c"],
)  # fmt: skip
def test_execution_tasks_stop_at_turn_ends_and_after_the_code(task: str) -> None:
    config = load_yaml(TASKS_DIR / "xcodeeval" / f"{task}.yaml", resolve_func=False)
    until = config["generation_kwargs"]["until"]
    assert {"<|im_end|>", "<|eot_id|>", "<end_of_turn>", FENCE_STOP} <= set(until)
    assert config["metadata"]["version"] == 1.1
    program = 'print("```")\nprint(input())'
    for reply in (
        f"```python\n{program}\n```\n\nThis program echoes its input.",
        f"Here is the code:\n```\n{program}\n```\n\nIt reads one line.",
        f"```python\n{program}\n```<|im_end|><|im_start|>user",
        f"{program}<|eot_id|>",
    ):
        assert extract_code(_cut(reply, until), "python") == program, reply
