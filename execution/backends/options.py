"""Every option a backend takes, declared once.

The engine CLI adds a `--flag` per row (`execution.cli`), and the benchmarks that run programs
on the engine read a setting per row (`setting`, from lm-eval metadata or `CODE_EVAL_<SETTING>`).
A backend that takes options is its module, its line in `BUILT_IN` and its rows here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BackendOption:
    """One option: `key` in `get_backend(name, {key: value})` (a string), `--flag VALUE` on the
    command line, `setting` in a benchmark's settings (its variable `CODE_EVAL_<SETTING>`).
    `backends` read it from the command line; `setting_backends`, when given, are the backends a
    benchmark setting may name (default: `backends`)."""

    key: str
    flag: str
    metavar: str
    backends: tuple[str, ...]
    help: str
    setting: str
    setting_doc: str
    setting_backends: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not set(self.setting_backends) <= set(self.backends):
            raise ValueError(f"backend option {self.key!r}: setting_backends outside backends")

    @property
    def env(self) -> str:
        return f"CODE_EVAL_{self.setting.upper()}"

    @property
    def setting_for(self) -> tuple[str, ...]:
        return self.setting_backends or self.backends


#: every backend option, once (all take text; none has a default: the backend's own applies)
BACKEND_OPTIONS: tuple[BackendOption, ...] = (
    BackendOption(
        "servers",
        "--servers",
        "URL[,URL...]",
        ("remote",),
        "judge servers of --backend remote (`code-exec serve`), e.g. http://node1:5000",
        "exec_servers",
        "judge servers of `exec_backend: remote`, comma-separated URLs",
    ),
    BackendOption(
        "token_file",
        "--token-file",
        "FILE",
        ("remote", "ray"),
        "bearer token sent to the judge servers or the Ray cluster (serve: the token clients "
        "must send)",
        "exec_token_file",
        "bearer token file sent to the judge servers (`exec_backend: remote`)",
        setting_backends=("remote",),
    ),
    BackendOption(
        "address",
        "--ray-address",
        "auto|HOST:PORT",
        ("ray",),
        "Ray cluster of --backend ray (default: a local one started for the run)",
        "ray_address",
        "Ray cluster of `exec_backend: ray` (`auto` or HOST:PORT; default: a local one)",
    ),
    BackendOption(
        "image",
        "--image",
        "NAME:TAG",
        ("container",),
        "judge image of --backend container (default code-eval-judge:latest, `make image`)",
        "exec_image",
        "judge image of `exec_backend: container` (default `code-eval-judge:latest`, `make image`)",
    ),
    BackendOption(
        "runtime",
        "--container-runtime",
        "runc|runsc|crun",
        ("container",),
        "OCI runtime of the judge containers (docker: runc or runsc, gVisor; podman: runc, crun)",
        "exec_container_runtime",
        "OCI runtime of `exec_backend: container`: `runc` (default), `runsc` (gVisor, docker) "
        "or `crun` (podman)",
    ),
    BackendOption(
        "frontend",
        "--container-frontend",
        "docker|podman",
        ("container",),
        "what starts the judge containers: docker (default; a daemon) or podman (daemonless, "
        "rootless for users without root)",
        "exec_container_frontend",
        "what starts the containers of `exec_backend: container`: `docker` (default) or "
        "`podman` (rootless, no daemon)",
    ),
)
