"""Reference programs of the engine tests, one per cluster: hello world, a real problem and its
wrong twin, and a compile error for the compiled languages.

The real problem is Codeforces 630C "Lucky Numbers" (xCodeEval src_uid
f1b43baa14d4c262ba616d892525dfde, 0.5 s, 64 MB): print 2^(n+1) - 2 for n <= 55, which needs 64-bit
integers. The wrong twins print 2^n, right on the sample for no n but plausible-looking.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from code_eval_taskpack.execution import Result
from code_eval_taskpack.execution.isolation import inactive_layers

LUCKY_SRC_UID = "f1b43baa14d4c262ba616d892525dfde"

HELLO: dict[str, str] = {
    "C": '#include <stdio.h>\nint main(void) { puts("Hello, World!"); return 0; }\n',
    "C++": '#include <iostream>\nint main() { std::cout << "Hello, World!" << std::endl; }\n',
    "C#": 'using System;\nclass Program { static void Main() { Console.WriteLine("Hello, World!"); } }\n',
    "Go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("Hello, World!") }\n',
    "Java": 'public class Hello {\n  public static void main(String[] a) {\n    System.out.println("Hello, World!");\n  }\n}\n',
    "Javascript": 'console.log("Hello, World!");\n',
    "Kotlin": 'fun main() {\n    println("Hello, World!")\n}\n',
    "PHP": '<?php\necho "Hello, World!\\n";\n',
    "Python": 'print("Hello, World!")\n',
    "Ruby": 'puts "Hello, World!"\n',
    "Rust": 'fn main() {\n    println!("Hello, World!");\n}\n',
}

# A + B in Python: reads two integers from one line, prints their sum.
ADD_PY = "a, b = map(int, input().split())\nprint(a + b)\n"

# 2^(n+1) - 2 (EXPR is replaced by the wrong formula in the WRONG variants)
LUCKY: dict[str, str] = {
    "C": '#include <stdio.h>\nint main(void) { int n; if (scanf("%d", &n) != 1) return 1;\n'
    '  long long r = (1LL << (n + 1)) - 2; printf("%lld\\n", r); return 0; }\n',
    "C++": "#include <bits/stdc++.h>\nusing namespace std;\n"
    "int main() { int n; cin >> n; long long r = (1LL << (n + 1)) - 2; cout << r << '\\n'; }\n",
    "C#": "using System;\nclass P { static void Main() {\n"
    "  int n = int.Parse(Console.ReadLine().Trim());\n"
    "  long r = (1L << (n + 1)) - 2; Console.WriteLine(r); } }\n",
    "Go": 'package main\n\nimport "fmt"\n\nfunc main() {\n\tvar n uint\n\tfmt.Scan(&n)\n'
    "\tr := (int64(1) << (n + 1)) - 2\n\tfmt.Println(r)\n}\n",
    "Java": "import java.util.Scanner;\n\nclass Lucky {\n  public static void main(String[] args) {\n"
    "    int n = new Scanner(System.in).nextInt();\n    long r = (1L << (n + 1)) - 2;\n"
    "    System.out.println(r);\n  }\n}\n",
    "Javascript": 'const n = Number(require("fs").readFileSync(0, "utf8").trim());\n'
    "const r = (1n << BigInt(n + 1)) - 2n;\nconsole.log(r.toString());\n",
    "Kotlin": "fun main() {\n    val n = readLine()!!.trim().toInt()\n    val r = (1L shl (n + 1)) - 2\n"
    "    println(r)\n}\n",
    "PHP": '<?php\n$n = intval(trim(fgets(STDIN)));\n$r = (1 << ($n + 1)) - 2;\necho $r, "\\n";\n',
    "Python": "n = int(input())\nr = (1 << (n + 1)) - 2\nprint(r)\n",
    "Ruby": "n = gets.to_i\nr = (1 << (n + 1)) - 2\nputs r\n",
    "Rust": "use std::io::Read;\nfn main() {\n    let mut s = String::new();\n"
    "    std::io::stdin().read_to_string(&mut s).unwrap();\n"
    "    let n: u32 = s.trim().parse().unwrap();\n    let r: i64 = (1i64 << (n + 1)) - 2;\n"
    '    println!("{}", r);\n}\n',
}

_WRONG_SUBST = {
    "C": ("(1LL << (n + 1)) - 2", "(1LL << n)"),
    "C++": ("(1LL << (n + 1)) - 2", "(1LL << n)"),
    "C#": ("(1L << (n + 1)) - 2", "(1L << n)"),
    "Go": ("(int64(1) << (n + 1)) - 2", "int64(1) << n"),
    "Java": ("(1L << (n + 1)) - 2", "(1L << n)"),
    "Javascript": ("(1n << BigInt(n + 1)) - 2n", "1n << BigInt(n)"),
    "Kotlin": ("(1L shl (n + 1)) - 2", "(1L shl n)"),
    "PHP": ("(1 << ($n + 1)) - 2", "(1 << $n)"),
    "Python": ("(1 << (n + 1)) - 2", "(1 << n)"),
    "Ruby": ("(1 << (n + 1)) - 2", "(1 << n)"),
    "Rust": ("(1i64 << (n + 1)) - 2", "1i64 << n"),
}


def wrong(cluster: str) -> str:
    old, new = _WRONG_SUBST[cluster]
    src = LUCKY[cluster]
    assert old in src, cluster
    return src.replace(old, new)


COMPILE_ERROR: dict[str, str] = {
    "C": "int main(void) { return undefined_variable; }\n",
    "C++": "int main() { std::vector<int> v; return v.size() }\n",
    "C#": 'class P { static void Main() { int x = "not an int"; } }\n',
    "Go": 'package main\n\nfunc main() {\n\tx := 1\n\tfmt.Println("unused import missing")\n}\n',
    "Java": 'public class Main { public static void main(String[] a) { int x = "s"; } }\n',
    "Kotlin": 'fun main() {\n    val x: Int = "not an int"\n}\n',
    "Rust": 'fn main() {\n    let x: i32 = "not an int";\n}\n',
}

LUCKY_EXTRA_TESTS: list[tuple[str, str]] = [("1\n", "2"), ("55\n", "72057594037927934")]


def check_isolation(isolation: Mapping[str, object]) -> None:
    """As root under REQUIRE_TOOLCHAINS=1 (CI), every sandbox layer must have been active."""
    # imported here: the programs above are also read without pytest (tests/podman_battery.py)
    from tests.conftest import toolchains_required

    missing = inactive_layers(dict(isolation))
    if os.geteuid() == 0 and toolchains_required():
        assert not missing, f"inactive isolation layers: {missing}"


def describe(r: Result) -> str:
    """A judged result in one line, for assertion messages: verdicts, details, output tails."""
    comp = r.compile.stderr[-800:] if r.compile else ""
    tests = [(t.verdict.value, t.detail, t.stdout[-300:], t.stderr[-300:]) for t in r.tests]
    return f"{r.id}: {r.verdict} {r.detail} {comp} {tests}"
