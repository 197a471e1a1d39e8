"""Nothing of the host is visible inside a sandbox, tried as an attacker would: programs dump
/proc/self/mountinfo, /proc/self/mounts, /proc/mounts, /proc/1/mountinfo, /proc/self/environ
and /proc/self/cmdline (and what their runtime says of itself) and look for the strings that
would tell where the engine lives: the repository, the cache folder, HOME, Docker's data root
and its overlay options. Each program prints "clean" or what it found (WRONG_ANSWER shows it).
Run through the local backend (with CPython's shared bytecode, a precompiled header and the
direct Go build mounted) and the container backend."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, TestCase, Verdict
from code_eval_taskpack.execution.backends.container.backend import ContainerBackend
from code_eval_taskpack.execution.caches.files import cache_root
from code_eval_taskpack.execution.limits import Limits
from code_eval_taskpack.execution.sandbox.command import Sandbox
from code_eval_taskpack.execution.sandbox.view import SHARED_ROOT, SharedFolder
from code_eval_taskpack.execution.speedups import pch
from code_eval_taskpack.execution.types import Result
from tests.conftest import ROOT, require_runtime
from tests.engine_programs import describe

#: what a program reads; every one must be readable (an unreadable file is no proof)
DUMPED = (
    "/proc/self/mountinfo",
    "/proc/self/mounts",
    "/proc/mounts",
    "/proc/1/mountinfo",
    "/proc/thread-self/mountinfo",
    "/proc/self/environ",
    "/proc/self/cmdline",
)

PY_ATTACK = """\
import os, sys
FORBIDDEN = {forbidden}
texts = {{}}
for p in {dumped}:
    texts[p] = open(p, "rb").read().decode("latin-1").replace("\\0", " ")
texts["sys"] = " ".join([str(sys.pycache_prefix), *sys.argv, sys.executable, *map(str, sys.path)])
texts["env"] = " ".join(f"{{k}}={{v}}" for k, v in os.environ.items())
assert " /proc " in texts["/proc/self/mountinfo"], texts["/proc/self/mountinfo"]
found = [(p, s) for p, t in texts.items() for s in FORBIDDEN if s in t]
print(found or "clean")
for p, s in found:
    print(p, [line for line in texts[p].splitlines() if s in line], file=sys.stderr)
"""

#: also C++ (the precompiled header applies to a program that opens with standard includes)
C_ATTACK = """\
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static const char *forbidden[] = {forbidden};
static const char *dumped[] = {dumped};
int main(void) {{
    int found = 0;
    for (size_t i = 0; i < sizeof(dumped) / sizeof(dumped[0]); i++) {{
        FILE *f = fopen(dumped[i], "rb");
        if (!f) {{ printf("unreadable %s\\n", dumped[i]); return 1; }}
        static char buf[1 << 20];
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        for (size_t k = 0; k < n; k++) if (!buf[k]) buf[k] = ' ';
        buf[n] = 0;
        if (i == 0 && !strstr(buf, " /proc ")) {{ printf("no /proc in mountinfo\\n"); return 1; }}
        for (size_t j = 0; j < sizeof(forbidden) / sizeof(forbidden[0]); j++) {{
            const char *hit = strstr(buf, forbidden[j]);
            if (hit) {{
                const char *start = hit;
                while (start > buf && start[-1] != '\\n') start--;
                const char *end = strchr(hit, '\\n');
                printf("%s: %s: %.*s\\n", dumped[i], forbidden[j],
                       (int)(end ? end - start : (long)strlen(start)), start);
                found = 1;
            }}
        }}
    }}
    if (!found) printf("clean\\n");
    return 0;
}}
"""

GO_ATTACK = """\
package main

import (
\t"fmt"
\t"os"
\t"strings"
)

func main() {{
\tforbidden := []string{{{forbidden}}}
\tfound := false
\tfor _, p := range []string{{{dumped}}} {{
\t\tdata, err := os.ReadFile(p)
\t\tif err != nil {{
\t\t\tfmt.Println("unreadable", p, err)
\t\t\treturn
\t\t}}
\t\ttext := strings.ReplaceAll(string(data), "\\x00", " ")
\t\tfor _, s := range forbidden {{
\t\t\tif strings.Contains(text, s) {{
\t\t\t\tfmt.Println(p, s)
\t\t\t\tfound = true
\t\t\t}}
\t\t}}
\t}}
\tif !found {{
\t\tfmt.Println("clean")
\t}}
}}
"""


def _c_list(items: list[str] | tuple[str, ...]) -> str:
    return "{" + ", ".join(json.dumps(s) for s in items) + "}"


def attack(language: str, forbidden: list[str]) -> str:
    """The attacking program of `language` looking for `forbidden`."""
    if language.startswith("Python"):
        return PY_ATTACK.format(forbidden=forbidden, dumped=list(DUMPED))
    if language == "Go":
        return GO_ATTACK.format(
            forbidden=", ".join(json.dumps(s) for s in forbidden),
            dumped=", ".join(json.dumps(s) for s in DUMPED),
        )
    return C_ATTACK.format(forbidden=_c_list(forbidden), dumped=_c_list(DUMPED))


def host_strings() -> list[str]:
    """What would tell a program where the engine lives on this host."""
    found = {str(ROOT), str(ROOT.resolve()), str(cache_root()), str(cache_root().resolve())}
    found.add(str(Path(__file__).resolve().parents[1]))
    home = os.environ.get("HOME", "")
    if home not in ("", "/"):
        found.add(home.rstrip("/") + "/")
    return sorted(found)


def _judge(engine: Engine, language: str, forbidden: list[str]) -> Result:
    job = Job(language, attack(language, forbidden), (TestCase("", ("clean",)),))
    return engine.judge(job)


@pytest.mark.parametrize("language", ["Python 3", "GNU C11", "GNU C++17", "Go"])
def test_local_programs_see_nothing_of_the_host(
    language: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_runtime(language)
    monkeypatch.setattr(pch, "BUILD_AFTER", 1)  # the C++ program gets its precompiled header
    engine = Engine(workers=1, cache=tmp_path / "results")
    r = _judge(engine, language, host_strings())
    assert r.verdict is Verdict.PASSED, describe(r)
    argv = [*(r.runtime.get("compile_argv") or []), *r.runtime["run_argv"]]
    shared = [a for a in argv if SHARED_ROOT + "/" in a]
    # the speed-up that mounts a shared folder did apply (else the attack proves little)
    expected = {"Python 3": "pycache_prefix=", "GNU C++17": "pch.h", "Go": "importcfg"}
    if language in expected:
        assert any(expected[language] in a for a in shared), argv
    assert not any(s in a for a in argv for s in host_strings()), argv


def test_compile_messages_name_no_host_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compile error of a program built with a precompiled header: the compiler's messages
    name the header by the path the sandbox shows."""
    require_runtime("GNU C++17")
    monkeypatch.setattr(pch, "BUILD_AFTER", 1)
    src = '#include <cstdio>\n#include <vector>\n\n#include "nowhere.h"\nint main() {}\n'
    r = Engine(workers=1, cache=tmp_path / "results").judge(
        Job("GNU C++17", src, (TestCase("", ("",)),))
    )
    assert r.verdict is Verdict.COMPILATION_ERROR, describe(r)
    argv = r.runtime["compile_argv"] or []
    assert any(a.startswith(SHARED_ROOT + "/") for a in argv), argv
    text = json.dumps(r.to_dict())
    for s in host_strings():
        assert s not in text, s


def test_a_shared_folder_shows_nothing_but_its_neutral_path(tmp_path: Path) -> None:
    """Any folder of the engine's own (the warm compilers' server programs, preludes...) is
    mounted where the sandbox says, and mountinfo shows neither its host path nor its
    file system's."""
    folder = cache_root() / "startup" / "hostview-probe-0123456789abcdef"
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o755)
    (folder / "data.txt").write_text("shared\n")
    os.chmod(folder / "data.txt", 0o644)
    shared = SharedFolder(folder)
    assert shared.inside == f"{SHARED_ROOT}/{folder.name}"
    with Sandbox(ro_paths=[shared]) as box:
        script = (
            f"cat {shared.inside_of(folder / 'data.txt')}; cat /proc/self/mountinfo; "
            f"echo > {shared.inside}/new 2>/dev/null && echo writable"
        )
        out = box.run(["/bin/sh", "-c", script], limits=Limits(cpu_s=5, wall_s=20))
    text = out.stdout.decode()
    assert text.startswith("shared\n"), text
    assert f" {shared.inside} " in text, text
    assert "writable" not in text
    for s in host_strings():
        assert s not in text, (s, text)


# -- the container backend ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def container() -> Iterator[ContainerBackend]:
    from tests.backend_params import BACKENDS

    with BACKENDS["container"]() as b:
        assert isinstance(b, ContainerBackend)
        yield b


def docker_strings(docker: str) -> list[str]:
    """What would tell a program it runs in Docker, and where Docker keeps its data."""
    proc = subprocess.run(
        [docker, "info", "-f", "{{.DockerRootDir}}"], capture_output=True, text=True, timeout=60
    )
    found = ["/var/lib/docker", "upperdir", "workdir=", "overlay2", "/opt/code-eval", "/work/"]
    if proc.returncode == 0 and proc.stdout.strip().startswith("/"):
        found.append(proc.stdout.strip())
    return sorted({*found, *host_strings()})


@pytest.mark.parametrize("language", ["Python 3", "GNU C11"])
def test_container_programs_see_nothing_of_docker(
    container: ContainerBackend, language: str
) -> None:
    engine = Engine(workers=1, backend=container, cache=None)
    r = _judge(engine, language, docker_strings(container.docker))
    assert r.verdict is Verdict.PASSED, describe(r)
    assert r.isolation["backend"] == "container"
