"""Go without the go command: compile and link a one-file program with the toolchain's own tools.

`go build` of a one-file program spends about half of its 0.2 s in the go command itself
(loading and hashing the standard library to decide what is stale) before it runs `compile` and
`link` on the one package that is new. Where the toolchain ships its standard library compiled
(GOROOT/pkg/GOOS_GOARCH, Go up to 1.19), the runtime's `compile_direct` command runs those two
tools itself, against import configurations that list exactly the standard packages the go
command would take as they are: those `go list` reports not stale under the compile's own
environment (CGO_ENABLED=0 makes `net`, `os/user` and the packages above them stale: the go
command would rebuild them, so they are left out); the compiler's list also leaves out what a
program may not import (`internal` and `vendor` packages, which the go command refuses).

Same compile: the same compiler on the same source with the flags go build gives a main package
(`-p main -complete`), linked with go build's `-s -w`, against the same archives. Whenever the
direct build fails for any reason (a compile error, an import outside the listed packages, cgo,
`go:embed`, a package other than main) the engine runs `go build` as before, under fresh
limits, so every failing compile is decided, and reported, by the go command. A source with build constraints
(`//go:build`, `// +build`) always goes to `go build`, which may exclude the file. What differs
in the binary: no build ID of the go command and no embedded module information
(`runtime/debug.ReadBuildInfo` reports none).

The import configurations are made once per toolchain fingerprint by probing the toolchain inside
a sandbox (what the compile sees), kept under `$CODE_EVAL_CACHE/startup/`, and mounted read-only
into the compile's sandbox. Off with `CODE_EVAL_GO_DIRECT=0` or `CODE_EVAL_CLASSIC_BUILD=1`;
without a usable probe (another backend, Go 1.20+ without compiled packages) go build is used.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from .. import config
from ..languages.registry import COMPILE_DIRECT, Runtime, catalog_commands
from ..sandbox.view import SharedFolder
from ..types import Job
from . import BuildPlan, Host
from .probes import Prober, prober
from .startup import publish

ENV = config.BY_FIELD["go_direct"].env
KEY = COMPILE_DIRECT  # the catalog key, named in the direct build's compile-cache keys
#: what the compiler may import (no internal or vendored package: the go command refuses them in
#: a program) and what the linker may link (every listed package)
IMPORTCFG, IMPORTCFG_LINK = "importcfg", "importcfg.link"
#: the probe: the tools' folder, then one line per standard package: path, stale, archive
PROBE_SCRIPT = (
    '"$0" env GOTOOLDIR || exit 1; "$0" list -e -f \'{{.ImportPath}} {{.Stale}} {{.Target}}\' std'
)
_PACKAGE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")
_CONSTRAINT = re.compile(r"^[ \t]*//[ \t]*(?:go:build|\+build)", re.MULTILINE)


def enabled(switches: config.EngineConfig | None = None) -> bool:
    """The switch (None: as the environment sets it now)."""
    return config.or_env(switches).go_direct


@dataclass(frozen=True)
class Tools:
    """What the direct command needs: the placeholders' values and the folder to mount."""

    values: dict[str, str]  # go_compile, go_link, go_importcfg, go_importcfg_link
    directory: Path


def parse_probe(stdout: bytes) -> tuple[str, list[tuple[str, str]]] | None:
    """(tool dir, [(package, archive)] of the packages not stale) from the probe's output, or
    None when it is not what a Go toolchain prints (plain absolute paths, plain package
    paths)."""
    try:
        lines = stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None
    if len(lines) < 2 or not _plain_path(lines[0]):
        return None
    tooldir, fresh_packages = lines[0], []
    for line in lines[1:]:
        parts = line.split(" ")
        if len(parts) != 3 or parts[1] not in ("true", "false") or not _PACKAGE.fullmatch(parts[0]):
            return None
        package, stale, target = parts
        fresh = stale == "false" and target.endswith(".a") and _plain_path(target)
        if fresh and os.path.isfile(target):
            fresh_packages.append((package, target))
    if not any(package == "runtime" for package, _ in fresh_packages):
        return None  # no compiled standard library (Go 1.20+), or the runtime is stale
    return tooldir, fresh_packages


def _plain_path(p: str) -> bool:
    return p.startswith("/") and all(c not in p for c in " \t\"'\\=$`") and ".." not in p


_lock = threading.Lock()
_made: dict[str, Tools | None] = {}


def tools(
    runtime: Runtime, probe: Prober, switches: config.EngineConfig | None = None
) -> Tools | None:
    """The direct build's tools of `runtime` (probed once per fingerprint and process)."""
    if not catalog_commands(runtime):
        return None  # a custom command or flags: they decide, through the go command
    if (
        runtime.compile_direct is None
        or runtime.binary is None
        or runtime.classic
        or not enabled(switches)
    ):
        return None
    fp = runtime.fingerprint()
    with _lock:
        if fp not in _made:
            _made[fp] = _make(runtime, probe)
        return _made[fp]


def _make(runtime: Runtime, probe: Prober) -> Tools | None:
    assert runtime.binary is not None
    out = probe(["/bin/sh", "-c", PROBE_SCRIPT, runtime.binary])
    parsed = parse_probe(out) if out is not None else None
    if parsed is None:
        return None
    tooldir, packages = parsed
    compile_tool, link_tool = f"{tooldir}/compile", f"{tooldir}/link"
    if not (os.access(compile_tool, os.X_OK) and os.access(link_tool, os.X_OK)):
        return None

    def importcfg(listed: list[tuple[str, str]]) -> str:
        return "".join(f"packagefile {package}={target}\n" for package, target in listed)

    public = [(package, target) for package, target in packages if importable(package)]
    directory = publish(
        runtime, {IMPORTCFG: importcfg(public), IMPORTCFG_LINK: importcfg(packages)}
    )
    if directory is None:
        return None
    folder = SharedFolder(directory)  # where the compile's sandbox shows it
    values = {
        "go_compile": compile_tool,
        "go_link": link_tool,
        "go_importcfg": folder.inside_of(directory / IMPORTCFG),
        "go_importcfg_link": folder.inside_of(directory / IMPORTCFG_LINK),
    }
    return Tools(values=values, directory=directory)


def importable(package: str) -> bool:
    """Whether a program outside the standard library may import `package`."""
    parts = package.split("/")
    return "internal" not in parts and parts[0] != "vendor"


def applies(source: str) -> bool:
    """False for a source with build constraints (only the go command may exclude a file)."""
    return _CONSTRAINT.search(source) is None


# -- the strategy ------------------------------------------------------------------------------


class DirectGo:
    """Applies to a runtime with `compile_direct`, on a backend whose sandboxes see this host's
    files (the import configuration lives here), for a source without build constraints."""

    def applies(self, runtime: Runtime, job: Job, host: Host) -> bool:
        if runtime.compile_direct is None or not host.backend.host_files:
            return False
        return applies(job.source_code)

    def apply(self, plan: BuildPlan, runtime: Runtime, job: Job, host: Host) -> BuildPlan:
        direct = tools(runtime, prober(runtime, host, "compile"), host.config)
        if direct is None:
            return plan
        return plan.changed(
            "go_direct",
            values={**plan.values, **direct.values},
            ours=(*plan.ours, direct.directory),
            ro_paths=(*plan.ro_paths, SharedFolder(direct.directory)),
            fallback=runtime.compile,
            compile_argv=runtime.compile_direct,
            # its binaries differ from go build's (no module information): cached apart
            fingerprint=f"{plan.fingerprint or runtime.fingerprint()}|{KEY}",
        )
