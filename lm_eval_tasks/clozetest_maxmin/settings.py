"""ClozeTest-maxmin's user settings, declared once (read by `utils.settings.parse_settings`).

The README's table of keys is rendered from `SETTINGS` (a test keeps it current).
"""

from __future__ import annotations

from code_eval_taskpack.utils.settings import Setting

DATA_DIR = Setting(
    "clozetest_data_dir",
    "text",
    None,
    "a folder with `<lang>/clozeTest.json` (and optionally `<lang>/answers.txt`); "
    "unset: the inputs are downloaded from CodeXGLUE and cached",
    env="CLOZETEST_MAXMIN_DATA",
)
ANSWERS = Setting(
    "clozetest_answers",
    "raw",
    None,
    "where the gold answers are: a mapping `{lang: file or URL}`, a path or URL with `{lang}`, "
    "a folder `<dir>/<lang>/answers.txt`, or one file in a folder named after its language",
    env="CLOZETEST_MAXMIN_ANSWERS",
    default_doc="`<data dir>/<lang>/answers.txt` if it exists",
)
PREDICT_ONLY = Setting(
    "clozetest_predict_only",
    "bool",
    False,
    "ignore answers: generate and log predictions, report NaN",
    env="CLOZETEST_MAXMIN_PREDICT_ONLY",
)

SETTINGS = (DATA_DIR, ANSWERS, PREDICT_ONLY)
