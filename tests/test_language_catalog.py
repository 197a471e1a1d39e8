"""The two language tables (engine: execution/languages/languages.toml; benchmarks: utils/languages.toml)
and everything derived from them: toolchains.txt, accepted names, slugs, fence tags, FIM syntax."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from code_eval_taskpack.execution.languages import toolchains
from code_eval_taskpack.execution.languages.registry import (
    CLUSTERS,
    REGISTRY_PATH,
    cluster_runtime,
    load_registry,
    registry,
    resolve,
)
from code_eval_taskpack.utils import languages
from code_eval_taskpack.utils.code_extraction import extract_code
from code_eval_taskpack.utils.languages import CATALOG_PATH, load_catalog
from lm_eval_tasks.code_infilling import fim

ROOT = Path(__file__).resolve().parent.parent

# independent expectations: the catalog must keep saying this
EXPECTED_SLUGS = {
    "c": "C", "cpp": "C++", "csharp": "C#", "go": "Go", "java": "Java",
    "javascript": "Javascript", "kotlin": "Kotlin", "php": "PHP", "python": "Python",
    "ruby": "Ruby", "rust": "Rust",
}  # fmt: skip


# -- the engine's table ------------------------------------------------------------------------


def test_toolchains_txt_is_generated_from_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert toolchains.main(["--check"]) == 0, capsys.readouterr().err
    listed = [
        line
        for line in toolchains.TOOLCHAINS_PATH.read_text(encoding="utf-8").splitlines()
        if line and not line.startswith("#")
    ]
    assert listed == registry().apt_packages()
    # every runtime's packages and the engine's own are installed by `make toolchains`
    for rt in registry().runtimes.values():
        assert set(rt.apt) <= set(listed), rt.name
    assert {"libseccomp-dev", "git", "patch", "clang-14", "gcc", "pypy3"} <= set(listed)


def test_toolchains_check_reports_a_stale_file_and_writing_fixes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "toolchains.txt"
    out.write_text("gcc\n", encoding="utf-8")
    assert toolchains.main(["--check"], out=out) == 1
    assert "stale" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "gcc\n", "--check must not write"
    assert toolchains.main([], out=out) == 0
    assert toolchains.main(["--check"], out=out) == 0


def test_clusters_come_from_the_registry_table() -> None:
    assert tuple(registry().clusters) == CLUSTERS
    assert set(CLUSTERS) == set(EXPECTED_SLUGS.values())
    for cluster, default in registry().clusters.items():
        assert cluster_runtime(cluster).name == default
        # a cluster's name is its runtime's but where a runtime claims it (`cluster_name`)
        claimed = [rt for rt in registry().runtimes.values() if rt.raw.get("cluster_name")]
        own = [rt.name for rt in claimed if rt.cluster == cluster] or [default]
        assert resolve(cluster).name == resolve(cluster.lower()).name == own[0]
    assert resolve("Kotlin").name == "Kotlin 1.7" and cluster_runtime("Kotlin").name == "Kotlin 1.4"


def test_cluster_name_claimed_by_one_runtime_of_the_cluster(tmp_path: Path) -> None:
    path = tmp_path / "languages.toml"
    claim = (
        '[runtimes.B]\ncluster = "C"\nbinary = ["x"]\nsource = "b"\nrun = ["./b"]\napt = ["x"]\n'
    )
    path.write_text(_registry_text(claim + "cluster_name = true\n"), encoding="utf-8")
    reg = load_registry(path)
    assert reg.resolve("c").name == "B" and reg.clusters["C"] == "A"
    twice = claim + "cluster_name = true\n" + claim.replace("runtimes.B", "runtimes.D")
    path.write_text(_registry_text(twice + "cluster_name = true\n"), encoding="utf-8")
    with pytest.raises(ValueError, match="cluster_name of"):
        load_registry(path)


_TOOLCHAIN = (
    '[registry_toolchains."kc"]\nregistry = "npm"\nversion = "1.0"\nsha512 = "{sha}"\n'
    'home = "{home}"\n'
)
_FETCHED = (
    '[runtimes.K]\ncluster = "C"\nbinary = ["{bin}"]\nregistry_toolchain = "kc"\n'
    'source = "k"\nrun = ["./k"]\napt = []\nmissing_hint = "make toolchains"\n'
)


@pytest.mark.parametrize(
    ("sha", "home", "binary", "message"),
    [
        ("0" * 128, "/usr/local/lib/x/kc", "{home}/bin/kc", ""),
        ("0" * 127, "/usr/local/lib/x/kc", "{home}/bin/kc", "128 lower-case hex"),
        ("0" * 128, "/opt/kc", "{home}/bin/kc", "below /usr"),
        ("0" * 128, "/usr/local/lib/x/kc", "/usr/bin/kc", "`{home}/...`"),
    ],
)
def test_registry_toolchains_are_pinned_and_below_usr(
    tmp_path: Path, sha: str, home: str, binary: str, message: str
) -> None:
    path = tmp_path / "languages.toml"
    fetched = _FETCHED.replace("{bin}", binary)
    path.write_text(
        _registry_text(fetched) + _TOOLCHAIN.format(sha=sha, home=home), encoding="utf-8"
    )
    if not message:
        reg = load_registry(path)
        assert reg.runtimes["K"].binary_candidates == (f"{home}/bin/kc",)
        assert reg.runtimes["K"].registry_toolchain == "kc"
        assert reg.toolchains["kc"].spec == "kc@1.0"
        return
    with pytest.raises(ValueError, match=re.escape(message)):
        load_registry(path)


def _tarball(folder: Path, files: dict[str, bytes]) -> Path:
    import io
    import tarfile

    out = folder / "kc-1.0.tgz"
    with tarfile.open(out, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if name.endswith("/kc") else 0o600
            tar.addfile(info, io.BytesIO(data))
    return out


def test_registry_toolchain_install_checks_the_pinned_checksum(tmp_path: Path) -> None:
    import hashlib

    from code_eval_taskpack.execution.languages.registry import RegistryToolchain

    tgz = _tarball(tmp_path, {"package/bin/kc": b"#!/bin/sh\n", "package/lib/a.jar": b"jar"})
    good = hashlib.sha512(tgz.read_bytes()).hexdigest()
    home = tmp_path / "usr" / "kc-1.0"
    wrong = RegistryToolchain("kc", "npm", "1.0", "f" * 128, str(home))
    with pytest.raises(toolchains.InstallError, match="not the pinned"):
        toolchains.unpack(wrong, tgz)
    assert not home.exists() and not toolchains.installed(wrong)
    tc = RegistryToolchain("kc", "npm", "1.0", good, str(home))
    home.mkdir(parents=True)
    (home / "stale").write_text("old", encoding="utf-8")  # a broken earlier install is replaced
    toolchains.unpack(tc, tgz)
    assert toolchains.installed(tc) and not (home / "stale").exists()
    assert (home / "bin" / "kc").stat().st_mode & 0o777 == 0o755
    assert (home / "lib" / "a.jar").stat().st_mode & 0o777 == 0o644  # readable by sandboxes
    assert [p.name for p in home.parent.iterdir()] == ["kc-1.0"]  # no staging folder left
    evil = _tarball(tmp_path, {"package/../../x": b"x"})
    escaping = RegistryToolchain(
        "kc", "npm", "1.0", hashlib.sha512(evil.read_bytes()).hexdigest(), str(home)
    )
    with pytest.raises(toolchains.InstallError, match="unexpected path"):
        toolchains.unpack(escaping, evil)


def test_shipped_registry_toolchains_are_installed_as_pinned() -> None:
    """What `make toolchains` installed is the pinned tarball's content (its marker)."""
    from tests.conftest import require

    for tc in registry().toolchains.values():
        require(
            toolchains.installed(tc), f"{tc.spec} is not installed in {tc.home} (make toolchains)"
        )


def _registry_text(extra_runtime: str = "", clusters: str = '"C" = "A"') -> str:
    return (
        f"[clusters]\n{clusters}\n"
        '[runtimes.A]\ncluster = "C"\nbinary = ["gcc"]\nsource = "a.c"\nrun = ["./a"]\n'
        'apt = ["gcc"]\n' + extra_runtime
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_registry_text(clusters=""), "needs a \\[clusters\\] table"),
        (_registry_text(clusters='"C" = "Nope"'), "is not a runtime of that cluster"),
        (
            _registry_text('[runtimes.B]\ncluster = "Cobol"\nbinary = ["x"]\nsource = "b"\n'
                           'run = ["./b"]\napt = ["x"]\n'),
            "unknown cluster 'Cobol'",
        ),
        (
            _registry_text('[runtimes.B]\ncluster = "C"\nbinary = ["x"]\nsource = "b"\n'
                           'run = ["./b"]\n'),
            "lacks field 'apt'",
        ),
        (
            _registry_text('[runtimes.B]\ncluster = "C"\nbinary = ["x"]\nsource = "b"\n'
                           'run = ["./b"]\napt = []\n'),
            "no apt packages",
        ),
        (
            _registry_text('[runtimes.B]\ncluster = "C"\nbinary = ["x"]\nsource = "b"\n'
                           'run = ["./b"]\napt = "x"\n'),
            "must be a list",
        ),
        (
            _registry_text('[runtimes.B]\ncluster = "C"\nbinary = ["x"]\nsource = "b"\n'
                           'run = ["./b"]\napt = ["x"]\naliases = ["c"]\n'),
            "maps to both",
        ),
    ],
)  # fmt: skip
def test_registry_file_errors_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "languages.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_registry(path)


def test_a_runtime_without_packages_must_say_how_to_get_its_toolchain() -> None:
    for rt in registry().runtimes.values():
        assert rt.apt or rt.missing_hint, rt.name
    assert "memory" not in {k for rt in registry().runtimes.values() for k in rt.raw}


# -- the benchmarks' table ---------------------------------------------------------------------


def test_both_tables_name_the_same_languages() -> None:
    catalog = languages.catalog()
    assert {lang.key for lang in catalog.clusters} == set(CLUSTERS)
    assert languages.xcodeeval_slugs() == EXPECTED_SLUGS
    assert list(languages.xcodeeval_slugs()) == sorted(EXPECTED_SLUGS)
    # prompt-only languages are never runnable
    for lang in catalog.languages:
        if not lang.runnable:
            assert lang.key not in CLUSTERS


def test_a_language_missing_from_one_table_is_an_error(tmp_path: Path) -> None:
    engine = tmp_path / "engine.toml"
    engine.write_text(
        REGISTRY_PATH.read_text(encoding="utf-8").replace(
            "[clusters]\n", '[clusters]\n"Zig" = "Zig"\n'
        )
        + '[runtimes."Zig"]\ncluster = "Zig"\nbinary = ["zig"]\nsource = "main.zig"\n'
        'run = ["./main"]\napt = ["zig"]\n',
        encoding="utf-8",
    )
    load_registry(engine)  # a valid engine table ...
    with pytest.raises(ValueError, match=r"only in the engine \['Zig'\]"):
        load_catalog(CATALOG_PATH, engine)  # ... that the benchmarks' table does not cover
    bench = tmp_path / "bench.toml"
    bench.write_text(
        CATALOG_PATH.read_text(encoding="utf-8")
        + '[languages."Zig"]\nslug = "zig"\nname = "Zig"\nfence = "zig"\nfence_tags = ["zig"]\n'
        'extensions = [".zig"]\ncomment = "//"\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"only here \['Zig'\]"):
        load_catalog(bench)
    assert {lang.key for lang in load_catalog(bench, engine).clusters} == {*CLUSTERS, "Zig"}


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('fence_tags = ["rust", "rs"]', 'fence_tags = ["rust", "rs", "go"]', "fence tag 'go'"),
        ('extensions = [".rb"]', 'extensions = [".rb", ".py"]', "extension '.py'"),
        ('slug = "ruby"', 'slug = "rust"', "slug 'rust'"),
        ('fence = "kotlin"', 'fence = "kt2"', "not one of its fence_tags"),
        ('comment = "#"\n\n[languages."Ruby"]', '\n[languages."Ruby"]', "'comment'"),
        ('fence_tags = ["php"]', 'fence_tags = ["PHP"]', "lower-case"),
        ('extensions = [".go"]', 'extensions = ["go"]', "start with a dot"),
        ('slug = "java"', 'slug = "java"\ncolour = "red"', "unknown field"),
    ],
)
def test_catalog_errors_name_the_file_and_field(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    text = CATALOG_PATH.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "bench.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ValueError, match=message) as err:
        load_catalog(path)
    assert str(path) in str(err.value)


def test_fence_tags_and_fim_syntax_come_from_the_catalog() -> None:
    reply = "```js\nconsole.log(1)\n```\n```py\nprint(1)\n```\n```python\nprint(22)\n```"
    assert extract_code(reply, "Python") == "print(22)"
    assert extract_code(reply, "Javascript") == "console.log(1)"
    assert extract_code(reply, "pypy") == "print(22)"  # a tag names its language too
    assert fim.language_of("a/B.java") == ("Java", "java", "//")
    assert fim.language_of("pkg/mod.PY") == ("Python", "python", "#")
    assert fim.language_of("web/app.ts") == ("TypeScript", "typescript", "//")
    assert fim.language_of("Makefile") == fim.UNKNOWN_LANGUAGE
    fmt = fim.builtin_formats()["codellama"]
    snippets = [fim.Snippet("lib/U.java", "class U {}", 1)]
    java = fim.render(fmt, repo="o/r", file_path="src/A.java", prefix="p", suffix="s",
                      snippets=snippets)  # fmt: skip
    assert java == "<PRE> // lib/U.java\nclass U {}\n\n// src/A.java\np <SUF>s <MID>"
    py = fim.render(fmt, repo="o/r", file_path="a.py", prefix="p", suffix="s")
    assert py == "<PRE> # a.py\np <SUF>s <MID>"


def test_xcodeeval_readme_lists_the_catalog_slugs() -> None:
    readme = (ROOT / "lm_eval_tasks" / "xcodeeval" / "README.md").read_text(encoding="utf-8")
    m = re.search(r"`<lang>` is one of `([^`]+)`", readme)
    assert m, "the README must list the language slugs"
    assert m.group(1).split() == list(languages.xcodeeval_slugs())


# -- adding a language -------------------------------------------------------------------------

_PROBE = textwrap.dedent(
    """
    import json
    from code_eval_taskpack.execution.languages import registry as engine
    from code_eval_taskpack.execution.languages import toolchains
    from code_eval_taskpack.utils import languages
    from code_eval_taskpack.utils.code_extraction import extract_code
    from lm_eval_tasks.xcodeeval.data import SLUGS
    from lm_eval_tasks.code_infilling import fim
    from lm_eval_tasks.xcodeeval import _generate_configs

    fmt = fim.builtin_formats()["deepseek"]
    print(json.dumps({
        "toolchains_check": toolchains.main(["--check"]),
        "clusters": list(engine.CLUSTERS),
        "accepted": engine.accepted_names(),
        "resolved": [engine.resolve(n).name for n in ("zig", "ZIGLANG", "Zig 0.11")],
        "slugs": SLUGS,
        "fence": extract_code("```c\\nint x;\\n```\\n```zig\\nconst x = 1;\\n```", "Zig"),
        "fim": list(fim.language_of("src/main.zig")),
        "prompt": fim.render(fmt, repo="r", file_path="a.zig", prefix="P", suffix="S"),
        "tasks": sorted(k for k in _generate_configs.documents() if "zig" in k),
    }))
    """
)

_ZIG_RUNTIME = """
[runtimes."Zig 0.11"]
cluster = "Zig"
binary = ["zig"]
version_cmd = ["{binary}", "version"]
version_regex = '^(\\S+)'
source = "main.zig"
compile = ["{binary}", "build-exe", "-O", "ReleaseSafe", "main.zig"]
run = ["./main"]
aliases = ["ziglang"]
apt = ["zig-compiler"]
"""

_ZIG_ROW = """
[languages."Zig"]
slug = "zig"
name = "Zig"
fence = "zig"
fence_tags = ["zig"]
extensions = [".zig"]
comment = "//"
"""


def test_a_new_language_is_two_table_rows(tmp_path: Path) -> None:
    """Add a synthetic language to a copy of the pack's two tables: every derived table has it."""
    pack = tmp_path / "pack"
    for name, dest in (
        ("execution", "code_eval_taskpack/execution"),
        ("utils", "code_eval_taskpack/utils"),
        ("lm_eval_tasks", "lm_eval_tasks"),
    ):
        shutil.copytree(ROOT / name, pack / dest, ignore=shutil.ignore_patterns("__pycache__"))
    engine_toml = pack / "code_eval_taskpack" / "execution" / "languages" / "languages.toml"
    text = engine_toml.read_text(encoding="utf-8")
    assert '"Rust" = "Rust 2018"\n' in text
    text = text.replace('"Rust" = "Rust 2018"\n', '"Rust" = "Rust 2018"\n"Zig" = "Zig 0.11"\n')
    engine_toml.write_text(text + _ZIG_RUNTIME, encoding="utf-8")
    bench_toml = pack / "code_eval_taskpack" / "utils" / "languages.toml"
    bench_toml.write_text(bench_toml.read_text(encoding="utf-8") + _ZIG_ROW, encoding="utf-8")

    env = {**os.environ, "PYTHONPATH": str(pack)}

    def probe() -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        out: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
        return out

    before = probe()
    assert before["toolchains_check"] == 1, "the copied toolchains.txt must be stale"
    generated = subprocess.run(
        [sys.executable, "-m", "code_eval_taskpack.execution.languages.toolchains"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
    )
    assert generated.returncode == 0, generated.stderr
    listed = (
        (pack / "code_eval_taskpack" / "execution" / "languages" / "toolchains.txt")
        .read_text(encoding="utf-8")
        .splitlines()
    )
    assert "zig-compiler" in listed
    after = probe()
    assert after["toolchains_check"] == 0
    assert after["clusters"] == [*CLUSTERS, "Zig"]
    accepted = after["accepted"]
    assert isinstance(accepted, list)
    assert {"Zig 0.11", "ziglang", "Zig"} <= set(accepted)
    assert after["resolved"] == ["Zig 0.11"] * 3
    assert after["slugs"] == {**EXPECTED_SLUGS, "zig": "Zig"}
    assert after["fence"] == "const x = 1;"
    assert after["fim"] == ["Zig", "zig", "//"]
    assert after["prompt"] == "<｜fim▁begin｜>// a.zig\nP<｜fim▁hole｜>S<｜fim▁end｜>"
    tasks = after["tasks"]
    assert isinstance(tasks, list)
    assert any(t.endswith("xcodeeval_synth_zig.yaml") for t in tasks), tasks
    assert any(t.endswith("xcodeeval_tag_zig.yaml") for t in tasks), tasks
