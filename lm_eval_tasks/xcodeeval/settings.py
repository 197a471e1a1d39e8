"""xCodeEval's user settings, declared once (read by `utils.settings.parse_settings`).

The README's table of keys is rendered from `SETTINGS` (a test keeps it current).
"""

from __future__ import annotations

from code_eval_taskpack.execution.backends.options import BACKEND_OPTIONS, BackendOption
from code_eval_taskpack.utils.settings import Setting

SPLITS = ("validation", "test")

SPLIT = Setting(
    "xcodeeval_split",
    "choice",
    "test",
    "`validation` or `test`",
    env="XCODEEVAL_SPLIT",
    choices=SPLITS,
    default_doc="`test` (`validation` for retrieval)",
)
DATA_DIR = Setting(
    "xcodeeval_data_dir",
    "text",
    None,
    "local copy of the repository",
    env="XCODEEVAL_DATA",
    default_doc="Hub",
)
SAMPLE_TESTS = Setting(
    "xcodeeval_sample_tests",
    "bool",
    False,
    "judge on the statement's public sample tests instead of the hidden unit tests",
    env="XCODEEVAL_SAMPLE_TESTS",
)
DROP_TRUNCATED = Setting(
    "xcodeeval_drop_truncated_tests",
    "bool",
    False,
    "judge without the hidden tests the public `unittest_db.json` cut short (ending in `...`): "
    "a different protocol from the paper's, which keeps them (see below)",
    env="XCODEEVAL_DROP_TRUNCATED_TESTS",
)
EXECEVAL_COMPAT = Setting(
    "xcodeeval_execeval_compat",
    "bool",
    False,
    "ExecEval's output comparison and limits, for numbers comparable with the paper (see below)",
    env="XCODEEVAL_EXECEVAL_COMPAT",
)
WORKERS = Setting(
    "xcodeeval_workers",
    "int",
    None,
    "engine worker count",
    env="XCODEEVAL_WORKERS",
    minimum=1,
    blank_is_unset=True,
    default_doc="CPUs",
)
EXEC_CACHE = Setting(
    "xcodeeval_exec_cache",
    "dir_or_off",
    "default",
    "verdict cache directory, or `none`",
    env="XCODEEVAL_EXEC_CACHE",
    default_doc="engine default (`$CODE_EVAL_CACHE/exec`)",
)

EXEC_BACKEND = Setting(
    "exec_backend",
    "text",
    "local",
    "the engine backend programs run on (a name registered in `execution.backends`); the "
    "infilling tasks do not read it (they grade with `sg_infilling_grader`)",
    env="CODE_EVAL_EXEC_BACKEND",
)


def _option_setting(option: BackendOption) -> Setting:
    return Setting(option.setting, "text", None, option.setting_doc, env=option.env)


#: backend option setting -> (the option's name in `get_backend`, the backends that may read it),
#: one per row of the engine's `BACKEND_OPTIONS`
BACKEND_OPTION_SETTINGS = tuple((_option_setting(o), o.key, o.setting_for) for o in BACKEND_OPTIONS)

SETTINGS = (
    DATA_DIR,
    SPLIT,
    SAMPLE_TESTS,
    DROP_TRUNCATED,
    EXECEVAL_COMPAT,
    WORKERS,
    EXEC_CACHE,
    EXEC_BACKEND,
    *(setting for setting, _, _ in BACKEND_OPTION_SETTINGS),
)
