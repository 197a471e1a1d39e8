"""The direct Go build (execution/speedups/go_direct.py): the toolchain's compiler and linker without the
go command, for the programs the go command would build from the standard library as installed.
Same verdicts, outputs and compile messages as `go build`; anything the direct build cannot do is
decided by go build; the probe's output is checked before it is trusted."""

from __future__ import annotations

import pytest

from code_eval_taskpack.execution import Engine, Job, Result, TestCase, Verdict
from code_eval_taskpack.execution.languages.registry import CLASSIC_ENV
from code_eval_taskpack.execution.speedups import go_direct
from tests.conftest import require_runtime
from tests.engine_programs import LUCKY, describe, wrong

TESTS = (TestCase("3\n", ("14\n",)), TestCase("1\n", ("2\n",)))

#: name -> (source, expected verdict, built directly)
PROGRAMS: dict[str, tuple[str, Verdict, bool]] = {
    "lucky": (LUCKY["Go"], Verdict.PASSED, True),
    "wrong": (wrong("Go"), Verdict.WRONG_ANSWER, True),
    "many_imports": (
        'package main\n\nimport (\n\t"bufio"\n\t"container/heap"\n\t"fmt"\n\t"math/big"\n'
        '\t"os"\n\t"sort"\n\t"strings"\n)\n\ntype H []int\n\n'
        "func (h H) Len() int            { return len(h) }\n"
        "func (h H) Less(i, j int) bool  { return h[i] < h[j] }\n"
        "func (h H) Swap(i, j int)       { h[i], h[j] = h[j], h[i] }\n"
        "func (h *H) Push(x interface{}) { *h = append(*h, x.(int)) }\n"
        "func (h *H) Pop() interface{}   { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }\n\n"
        "func main() {\n\tr := bufio.NewReader(os.Stdin)\n\tvar n int\n\tfmt.Fscan(r, &n)\n"
        "\th := &H{3, 1}\n\theap.Init(h)\n\ts := []string{\"b\", \"a\"}\n\tsort.Strings(s)\n"
        "\tv := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(n+1)), big.NewInt(2))\n"
        '\t_ = strings.Join(s, "")\n\tfmt.Println(v)\n}\n',
        Verdict.PASSED,
        True,
    ),
    "panic": ("package main\n\nfunc main() {\n\tvar a []int\n\tprintln(a[3])\n}\n",
              Verdict.RUNTIME_ERROR, True),
    "undefined": ('package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(x) }\n',
                  Verdict.COMPILATION_ERROR, True),
    "unused_import": ('package main\n\nimport "os"\n\nfunc main() {}\n',
                      Verdict.COMPILATION_ERROR, True),
    "not_main": (LUCKY["Go"].replace("package main", "package solution"),
                 Verdict.COMPILATION_ERROR, True),
    "no_func_main": ('package main\n\nimport "fmt"\n\nfunc Main() { fmt.Println(1) }\n',
                     Verdict.COMPILATION_ERROR, True),
    # the go command refuses an internal package; the compiler's list does not hold it
    "internal_import": ('package main\n\nimport (\n\t"fmt"\n\t"internal/cpu"\n)\n\n'
                        "func main() { fmt.Println(cpu.CacheLineSize) }\n",
                        Verdict.COMPILATION_ERROR, True),
    # net is stale without cgo (the go command rebuilds it): not listed, so go build decides
    "stale_package": (LUCKY["Go"].replace('import "fmt"', 'import (\n\t"fmt"\n\t"net"\n)')
                      .replace("func main() {", "func main() {\n\t_ = net.IPv4len"),
                      Verdict.PASSED, True),
    "cgo": ('package main\n\n// int one() { return 1; }\nimport "C"\nimport "fmt"\n\n'
            "func main() { fmt.Println(C.one()) }\n", Verdict.COMPILATION_ERROR, True),
    "embed": ('package main\n\nimport (\n\t_ "embed"\n\t"fmt"\n)\n\n//go:embed main.go\n'
              "var src string\n\nfunc main() { fmt.Println(len(src) > 0) }\n",
              Verdict.WRONG_ANSWER, True),
    # build constraints are the go command's business: never built directly
    "constraint": ("//go:build linux\n\n" + LUCKY["Go"], Verdict.PASSED, False),
    "old_constraint": ("// +build !windows\n\n" + LUCKY["Go"], Verdict.PASSED, False),
}  # fmt: skip


@pytest.fixture(scope="module", autouse=True)
def go() -> None:
    require_runtime("Go")


def judge(src: str, direct: bool, mp: pytest.MonkeyPatch) -> Result:
    mp.setenv(go_direct.ENV, "1" if direct else "0")
    return Engine(workers=1).judge(Job(language="Go", source_code=src, tests=TESTS))


def built_directly(r: Result) -> bool:
    return any(a.endswith("/compile") for a in r.runtime["compile_argv"] or ())


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_same_verdicts_outputs_and_messages_as_go_build(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, expected, direct_expected = PROGRAMS[name]
    direct = judge(src, True, monkeypatch)
    plain = judge(src, False, monkeypatch)
    assert built_directly(direct) is direct_expected, name
    assert not built_directly(plain)
    assert direct.verdict is plain.verdict is expected, (describe(direct), describe(plain))
    assert [(t.verdict, t.stdout, t.exit_code) for t in direct.tests] == [
        (t.verdict, t.stdout, t.exit_code) for t in plain.tests
    ]
    assert direct.compile is not None and plain.compile is not None
    # a failing direct build hands over to go build, whose message the result carries
    assert (direct.compile.stdout, direct.compile.stderr) == (
        plain.compile.stdout,
        plain.compile.stderr,
    ), name


def test_work_dir_as_go_build_leaves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The program sees the same entries in its work dir (the package archive is removed; the
    go command's cache folder is there, empty, where go build leaves its cache entries)."""
    src = (
        'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nfunc main() {\n'
        '\tes, _ := os.ReadDir(".")\n\tfor _, e := range es {\n\t\tfmt.Println(e.Name())\n\t}\n}\n'
    )
    one = [TestCase("", ("",))]
    listings = []
    for direct in (True, False):
        monkeypatch.setenv(go_direct.ENV, "1" if direct else "0")
        r = Engine(workers=1).judge(Job(language="Go", source_code=src, tests=tuple(one)))
        assert built_directly(r) is direct
        listings.append(r.tests[0].stdout)
    assert listings[0] == ".cache\nmain\nmain.go\n"
    assert listings[0] == listings[1]


def test_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    from code_eval_taskpack.execution.languages.registry import load_registry

    monkeypatch.setenv(go_direct.ENV, "1")
    r = Engine(workers=1).judge(Job(language="Go", source_code=LUCKY["Go"], tests=TESTS))
    assert built_directly(r) and r.verdict is Verdict.PASSED
    monkeypatch.setenv(CLASSIC_ENV, "1")
    classic = load_registry().runtimes["Go"]
    r = Engine(workers=1).judge_as(Job("Go", LUCKY["Go"], TESTS), classic)
    assert not built_directly(r) and r.verdict is Verdict.PASSED


def test_probe_output_is_checked() -> None:
    tooldir = "/usr/lib/go/pkg/tool/linux_amd64"
    assert go_direct.parse_probe(b"") is None
    assert go_direct.parse_probe(b"not a path\nfmt false /x/fmt.a\n") is None
    # a line that is not `path stale target`, a quote or a space in a path: refused whole
    assert go_direct.parse_probe(f"{tooldir}\nfmt maybe /x.a\n".encode()) is None
    assert go_direct.parse_probe(f'{tooldir}\nf"mt false /x.a\n'.encode()) is None
    assert go_direct.parse_probe(b"/a b/tool\nfmt false /x/fmt.a\n") is None
    # no compiled runtime package (Go 1.20+ ships none): no direct build
    assert go_direct.parse_probe(f"{tooldir}\nfmt false /nonexistent/fmt.a\n".encode()) is None
    assert go_direct.parse_probe(b"\xff\xfe") is None


def test_importable() -> None:
    assert go_direct.importable("fmt") and go_direct.importable("container/heap")
    assert not go_direct.importable("internal/cpu")
    assert not go_direct.importable("crypto/internal/boring")
    assert not go_direct.importable("vendor/golang.org/x/net/route")
    assert go_direct.applies(LUCKY["Go"])
    assert not go_direct.applies("//go:build ignore\n\npackage main\n")
    assert not go_direct.applies("  // +build linux\n\npackage main\n")
