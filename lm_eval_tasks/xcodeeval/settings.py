"""xCodeEval's user settings, declared once (read by `utils.settings.parse_settings`).

The README's table of keys is rendered from `SETTINGS` (a test keeps it current).
"""

from __future__ import annotations

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
    "the engine backend programs run on (a name registered in `execution.backends`)",
    env="CODE_EVAL_EXEC_BACKEND",
)

EXEC_SERVERS = Setting(
    "exec_servers",
    "text",
    None,
    "judge servers of `exec_backend: remote`, comma-separated URLs",
    env="CODE_EVAL_EXEC_SERVERS",
)
EXEC_TOKEN_FILE = Setting(
    "exec_token_file",
    "text",
    None,
    "bearer token file sent to the judge servers (`exec_backend: remote`)",
    env="CODE_EVAL_EXEC_TOKEN_FILE",
)
RAY_ADDRESS = Setting(
    "ray_address",
    "text",
    None,
    "Ray cluster of `exec_backend: ray` (`auto` or HOST:PORT; default: a local one)",
    env="CODE_EVAL_RAY_ADDRESS",
)
EXEC_IMAGE = Setting(
    "exec_image",
    "text",
    None,
    "judge image of `exec_backend: container` (default `code-eval-judge:latest`, `make image`)",
    env="CODE_EVAL_EXEC_IMAGE",
)
EXEC_CONTAINER_RUNTIME = Setting(
    "exec_container_runtime",
    "text",
    None,
    "OCI runtime of `exec_backend: container`: `runc` (default), `runsc` (gVisor, docker) or "
    "`crun` (podman)",
    env="CODE_EVAL_EXEC_CONTAINER_RUNTIME",
)
EXEC_CONTAINER_FRONTEND = Setting(
    "exec_container_frontend",
    "text",
    None,
    "what starts the containers of `exec_backend: container`: `docker` (default) or `podman` "
    "(rootless, no daemon)",
    env="CODE_EVAL_EXEC_CONTAINER_FRONTEND",
)
#: backend option setting -> (the option's name in `get_backend`, the backend that reads it)
BACKEND_OPTION_SETTINGS = (
    (EXEC_SERVERS, "servers", "remote"),
    (EXEC_TOKEN_FILE, "token_file", "remote"),
    (RAY_ADDRESS, "address", "ray"),
    (EXEC_IMAGE, "image", "container"),
    (EXEC_CONTAINER_RUNTIME, "runtime", "container"),
    (EXEC_CONTAINER_FRONTEND, "frontend", "container"),
)

SETTINGS = (
    DATA_DIR,
    SPLIT,
    SAMPLE_TESTS,
    EXECEVAL_COMPAT,
    WORKERS,
    EXEC_CACHE,
    EXEC_BACKEND,
    EXEC_SERVERS,
    EXEC_TOKEN_FILE,
    RAY_ADDRESS,
    EXEC_IMAGE,
    EXEC_CONTAINER_RUNTIME,
    EXEC_CONTAINER_FRONTEND,
)
