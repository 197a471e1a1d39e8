"""The infilling tasks' user settings, declared once (read by `utils.settings.parse_settings`).

`DATA_SETTINGS` choose the rows and build the prompts (every task); `GRADING_SETTINGS` configure
execution grading (`_exec` tasks and the oracle check). Every grading key also has its upper-cased
environment variable. The README's tables of keys are rendered from both (a test keeps them
current). `sg_infilling_variant` and `sg_infilling_exec` are not settings: the generated task
YAML fixes them.
"""

from __future__ import annotations

import os

from code_eval_taskpack.utils.settings import Setting
from lm_eval_tasks.code_infilling.fim import DEFAULT_MAX_PROMPT_CHARS, DEFAULT_MAX_PROMPT_TOKENS

GRADERS = ("swebench", "local")

DATA = Setting(
    "sg_infilling_data",
    "text",
    None,
    "a local parquet or JSONL file of the `test` split (default: the Hub file)",
    env="SG_INFILLING_DATA",
)
HUB_FILE = Setting(
    "sg_infilling_hub_file", "text", None, "another file of the Hub repository", default_doc="—"
)
REVISION = Setting("sg_infilling_revision", "text", None, "a revision of the Hub repository")
LIMIT = Setting(
    "sg_infilling_limit",
    "int",
    None,
    "first N rows; unlike `--limit` it also limits the grader's early checks",
    minimum=1,
)
FORMAT = Setting(
    "sg_infilling_format",
    "raw",
    None,
    "the format of `sg_infilling_custom[_exec]`: a built-in name, a JSON object or a JSON file",
    env="SG_INFILLING_FORMAT",
)
TOKENIZER = Setting(
    "sg_infilling_tokenizer",
    "text",
    None,
    "tokenizer of the prompt budget (an error if it cannot be loaded)",
    env="SG_INFILLING_TOKENIZER",
    default_doc="the model's own `tokenizer`/`pretrained`, if it loads",
)
MAX_PROMPT_TOKENS = Setting(
    "sg_infilling_max_prompt_tokens",
    "int",
    DEFAULT_MAX_PROMPT_TOKENS,
    "prompt budget in tokens, when a tokenizer is available",
    minimum=1,
)
MAX_PROMPT_CHARS = Setting(
    "sg_infilling_max_prompt_chars",
    "int",
    DEFAULT_MAX_PROMPT_CHARS,
    "prompt budget in characters, without a tokenizer",
    minimum=1,
)

DATA_SETTINGS = (DATA, HUB_FILE, REVISION, LIMIT, FORMAT, TOKENIZER)
BUDGET_SETTINGS = (MAX_PROMPT_TOKENS, MAX_PROMPT_CHARS)


def _grading(key: str, kind: str, default: object, doc: str, **extra: object) -> Setting:
    return Setting(key, kind, default, doc, env=key.upper(), **extra)  # type: ignore[arg-type]


GRADER_KEY = "sg_infilling_grader"

GRADING_SETTINGS = (
    _grading(
        GRADER_KEY,
        "choice",
        "swebench",
        "`swebench` (the harness's Docker images) or `local` (checkouts, the engine's sandbox); "
        "xCodeEval's `exec_backend` is not read (a run of both benchmarks sets each its own)",
        aliases=("grader",),
        choices=GRADERS,
        lowercase=True,
    ),
    _grading(
        "sg_infilling_repos_dir",
        "text",
        "",
        "local grader: the folder of `<owner>__<name>` git checkouts",
        aliases=("repos_dir",),
        default_doc="—",
    ),
    _grading(
        "sg_infilling_test_cmd",
        "text",
        "python -m pytest -rA",
        "local grader: must run pytest; `-p <grader plugin>` and the test files are appended",
        aliases=("test_cmd",),
    ),
    _grading("sg_infilling_log_parser", "text", "pytest", "local grader: how test output is read"),
    _grading(
        "sg_infilling_workers",
        "int",
        lambda: min(2, os.cpu_count() or 1),
        "parallel instances (both graders)",
        minimum=1,
        default_doc="2 (1 on a one-CPU machine)",
    ),
    _grading(
        "sg_infilling_test_cpu_s", "float", 900.0, "local grader: CPU seconds per test command"
    ),
    _grading(
        "sg_infilling_test_wall_s", "float", 1800.0, "local grader: wall seconds per test command"
    ),
    _grading(
        "sg_infilling_test_memory_mb",
        "int",
        4096,
        "local grader: memory (MB) per test command",
        minimum=1,
    ),
    _grading(
        "sg_infilling_swebench_namespace",
        "text",
        "swebench",
        "image namespace; `none` builds images locally",
    ),
    _grading(
        "sg_infilling_swebench_allow_pull",
        "bool",
        False,
        "let the harness pull missing images instead of stopping",
    ),
    _grading(
        "sg_infilling_swebench_timeout_s",
        "int",
        1800,
        "the harness's per-instance test timeout",
        minimum=1,
    ),
    _grading(
        "sg_infilling_swebench_work_dir",
        "text",
        "",
        "where the harness runs and keeps its logs",
        default_doc="a temporary folder",
    ),
    _grading(
        "sg_infilling_cache",
        "text",
        "none",
        "outcome cache: a folder, `default` (`<cache root>/repo_tests`, what `code-eval judge` "
        "uses unless told) or `none`; a rerun grades only what is not cached; grading errors "
        "are never cached",
    ),
    _grading(
        "sg_infilling_model_name",
        "text",
        "code-infilling",
        "`model_name_or_path` in the predictions",
    ),
)
