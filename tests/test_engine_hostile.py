"""Hostile programs: each case checks the verdict AND the host's invariants.

Invariants: no process of the program survives (processes tag themselves with a unique name that
the test then looks for in the host's /proc), a 0644 canary in the host's /tmp stays unread,
nothing is written outside the work dir, a loopback listener opened by the test sees no
connection, no host secret leaks through the environment, and the engine still judges a hello
world afterwards. All programs are judged in one batch (two workers) to keep the suite fast.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from execution import Engine, Job, Result, TestCase, Verdict, resolve
from execution.sandbox import inactive_layers, probe_isolation
from tests.conftest import require, toolchains_required
from tests.engine_programs import HELLO

TOKEN = secrets.token_hex(4)  # unique per session: tags processes and files of this run
SECRET = f"host-secret-{secrets.token_hex(8)}"
CANARY_TEXT = f"canary-{secrets.token_hex(8)}"


def tag(case: str) -> str:
    """A process name (<= 15 chars) unique to this run and case."""
    return f"h{TOKEN}{case}"[:15]


@dataclass
class Case:
    id: str
    language: str
    source: str
    expect: set[Verdict]
    stdin: str = ""
    expected_out: str = "ok"
    time_limit_s: float = 1.0
    memory_mb: int = 256
    tag: str = ""
    checks: list[str] = field(default_factory=list)
    more_tests: tuple[tuple[str, str], ...] = ()  # further (input, expected) tests


@dataclass
class Host:
    canary: Path
    outside: Path
    listener: socket.socket
    port: int


C_PRELUDE = """
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
static void name(const char *n) { prctl(PR_SET_NAME, n, 0, 0, 0); }
"""


def c(body: str) -> str:
    return C_PRELUDE + body


def build_cases(host: Host) -> list[Case]:
    t = tag
    return [
        Case("cpu_loop", "C", c("int main(void){volatile unsigned long x=0;for(;;)x++;}"),
             {Verdict.TIME_LIMIT_EXCEEDED}, time_limit_s=0.5, checks=["timeout:cpu"]),
        Case("sleep", "C", c("int main(void){sleep(1000);puts(\"ok\");}"),
             {Verdict.TIME_LIMIT_EXCEEDED}, time_limit_s=0.3, checks=["timeout:wall"]),
        Case("blocked_read", "Python 3",
             "import os\nr, w = os.pipe()\nos.read(r, 1)\nprint('ok')\n",
             {Verdict.TIME_LIMIT_EXCEEDED}, time_limit_s=0.3, checks=["timeout:wall"]),
        Case("balloon", "C", c(
            "int main(void){for(int i=0;i<256;i++){char*p=malloc(16<<20);if(!p)return 3;"
            "memset(p,1,16<<20);}puts(\"ok\");}"),
             {Verdict.MEMORY_LIMIT_EXCEEDED}, memory_mb=64),
        Case("mmap_4g_untouched", "C", c(
            "int main(void){void*p=mmap(0,4UL<<30,PROT_READ|PROT_WRITE,"
            "MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE,-1,0);if(p==MAP_FAILED)return 2;"
            "((char*)p)[0]=1;puts(\"ok\");}"),
             {Verdict.PASSED}),
        Case("fork_bomb", "C", c(
            f'int main(void){{name("{t("fb")}");for(;;)fork();}}'),
             {Verdict.TIME_LIMIT_EXCEEDED, Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT_EXCEEDED},
             time_limit_s=0.5, tag=t("fb")),
        Case("thread_bomb", "C", c(
            "static void*spin(void*a){volatile long x=0;for(;;)x++;return a;}"
            f'int main(void){{name("{t("tb")}");pthread_t th;'
            "for(;;){pthread_create(&th,0,spin,0);}}"),
             {Verdict.TIME_LIMIT_EXCEEDED, Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT_EXCEEDED},
             time_limit_s=0.5, tag=t("tb")),
        Case("daemon", "C", c(
            "int main(void){pid_t p=fork();if(p==0){setsid();if(fork()==0){"
            f'name("{t("dm")}");close(1);for(;;)sleep(1);}}_exit(0);}}'
            "waitpid(p,0,0);puts(\"ok\");fflush(stdout);return 0;}"),
             {Verdict.PASSED}, tag=t("dm")),
        # a daemon left by test 1 would write into the work dir during test 2
        Case("daemon_across_tests", "Python 3",
             "import os, time\n"
             "if not os.path.exists('marker'):\n"
             "    open('marker', 'w').close()\n"
             "    if os.fork() == 0:\n        os.setsid()\n"
             "        if os.fork() == 0:\n            time.sleep(0.5)\n"
             "            open('log', 'a').write('daemon')\n        os._exit(0)\n"
             "    print('ok')\n"
             "else:\n    time.sleep(1.0)\n"
             "    print(open('log').read() if os.path.exists('log') else 'clean')\n",
             {Verdict.PASSED}, more_tests=(("", "clean"),)),
        Case("child_holds_stdout", "C", c(
            f'int main(void){{if(fork()==0){{name("{t("ho")}");sleep(1000);}}'
            'puts("ok");fflush(stdout);return 0;}'),
             {Verdict.PASSED, Verdict.TIME_LIMIT_EXCEEDED}, tag=t("ho")),
        Case("stdout_flood", "C", c(
            "int main(void){static char b[1<<20];memset(b,'x',sizeof b);"
            "for(int i=0;i<2048;i++)fwrite(b,1,sizeof b,stdout);return 0;}"),
             {Verdict.OUTPUT_LIMIT_EXCEEDED}, time_limit_s=4.0),
        Case("huge_file", "C", c(
            "int main(void){static char b[1<<20];FILE*f=fopen(\"big.bin\",\"w\");"
            "if(!f)return 5;for(int i=0;i<2048;i++){if(fwrite(b,1,sizeof b,f)!=sizeof b)return 4;}"
            "fclose(f);puts(\"ok\");}"),
             {Verdict.RUNTIME_ERROR, Verdict.OUTPUT_LIMIT_EXCEEDED}, time_limit_s=4.0,
             checks=["sigxfsz_or_ole"]),
        Case("connect_loopback", "C", c(
            "int main(void){int s=socket(AF_INET,SOCK_STREAM,0);"
            "if(s<0){printf(\"socket failed %d\\n\",errno);return 0;}"
            "struct sockaddr_in a={0};a.sin_family=AF_INET;"
            f"a.sin_port=htons({host.port});a.sin_addr.s_addr=htonl(0x7f000001);"
            "if(connect(s,(void*)&a,sizeof a)==0)puts(\"connected\");"
            "else printf(\"connect failed %d\\n\",errno);return 0;}"),
             {Verdict.WRONG_ANSWER}, expected_out="connected", checks=["no_connection"]),
        Case("connect_loopback_py", "Python",
             "import socket\ntry:\n"
             f"    socket.create_connection(('127.0.0.1', {host.port}), timeout=1)\n"
             "    print('connected')\nexcept OSError as e:\n    print('failed', e)\n",
             {Verdict.WRONG_ANSWER}, expected_out="connected", checks=["no_connection"]),
        Case("read_secrets", "Python",
             "for p in [" + repr(str(host.canary)) + ", '/etc/shadow', '/root/.bash_history']:\n"
             "    try:\n        print(p, open(p).read())\n"
             "    except OSError as e:\n        print(p, 'denied', e.errno)\n",
             {Verdict.WRONG_ANSWER}, expected_out="nothing", checks=["no_canary", "no_shadow"]),
        Case("reach_sandbox_init", "Python",
             "import os\n"
             "for what, f in [('fd', lambda: os.listdir('/proc/1/fd')),\n"
             "                ('environ', lambda: open('/proc/1/environ', 'rb').read()),\n"
             "                ('mem', lambda: open('/proc/1/mem', 'rb').read(1)),\n"
             "                ('root', lambda: os.listdir('/proc/1/root/'))]:\n"
             "    try:\n        print(what, 'got', f())\n"
             "    except OSError as e:\n        print(what, 'denied', e.errno)\n"
             "print([l for l in open('/proc/self/status') if l.startswith('CapEff')])\n",
             {Verdict.WRONG_ANSWER}, expected_out="nothing", checks=["init_unreachable"]),
        Case("write_outside_and_env", "Python",
             "import os\n"
             f"targets = [{str(host.outside)!r}, '/usr/{TOKEN}', '/etc/{TOKEN}', '/{TOKEN}',\n"
             f"           '/work/{TOKEN}', '/proc/{TOKEN}']\n"
             "for p in targets:\n    try:\n        open(p, 'w').write('x')\n"
             "        print('wrote', p)\n    except OSError as e:\n        print('denied', p)\n"
             "print(dict(os.environ))\n",
             {Verdict.WRONG_ANSWER}, expected_out="nothing",
             checks=["nothing_outside", "no_secret"]),
        Case("forbidden_syscalls", "C", c(
            "#include <sched.h>\n#include <sys/syscall.h>\n#include <sys/mount.h>\n"
            "#include <sys/ptrace.h>\n"
            "static void r(const char*n,long v){printf(\"%s %ld %d\\n\",n,v,v<0?errno:0);}"
            "int main(void){"
            "r(\"unshare\",unshare(CLONE_NEWUSER));"
            "r(\"ptrace\",ptrace(PTRACE_TRACEME,0,0,0));"
            "r(\"mount\",mount(\"none\",\"/tmp\",\"tmpfs\",0,0));"
            "r(\"bpf\",syscall(SYS_bpf,0,0,0));"
            "r(\"keyctl\",syscall(SYS_keyctl,0,0,0,0,0));"
            "r(\"perf\",syscall(SYS_perf_event_open,0,0,-1,-1,0));"
            "r(\"setns\",syscall(SYS_setns,0,0));"
            "r(\"inet6\",socket(AF_INET6,SOCK_DGRAM,0));"
            "r(\"unix\",socket(AF_UNIX,SOCK_STREAM,0)>=0?0:-1);"
            "return 0;}"),
             {Verdict.WRONG_ANSWER}, expected_out="nothing", checks=["seccomp_denied"]),
        Case("i386_syscall", "C", c(
            "int main(void){long r;__asm__ volatile(\"int $0x80\":\"=a\"(r):\"a\"(20L));"
            "printf(\"%ld\\n\",r);return 0;}"),
             {Verdict.RUNTIME_ERROR}, checks=["signal:SIGSYS"]),
        Case("kill_parent_and_all", "C", c(
            "int main(void){kill(getppid(),SIGKILL);kill(1,SIGKILL);kill(-1,SIGKILL);"
            "puts(\"ok\");return 0;}"),
             {Verdict.PASSED}),
        Case("kill_parent_py", "Python",
             "import os, signal\nfor pid in (os.getppid(), 1, -1):\n"
             "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n"
             "print('ok')\n",
             {Verdict.PASSED}),
        Case("segfault", "C", c("int main(void){volatile int*p=0;*p=1;return 0;}"),
             {Verdict.RUNTIME_ERROR}, checks=["signal:SIGSEGV"]),
        Case("abort", "C", c("int main(void){abort();}"),
             {Verdict.RUNTIME_ERROR}, checks=["signal:SIGABRT"]),
        Case("div_zero", "C", c(
            "int main(void){volatile int a=7,z=0;int x=a/z;printf(\"%d\\n\",x);return 0;}"),
             {Verdict.RUNTIME_ERROR}, checks=["signal:SIGFPE"]),
        Case("exit_code", "Python", "import sys\nprint('ok')\nsys.exit(3)\n",
             {Verdict.RUNTIME_ERROR}, checks=["exit:3"]),
        Case("recursion_c", "C", c(
            "static long f(long n){volatile char pad[256];pad[0]=(char)n;return f(n+1)+pad[0];}"
            "int main(void){printf(\"%ld\\n\",f(0));}"),
             {Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT_EXCEEDED}),
        Case("recursion_py", "Python 3",
             "import sys\nsys.setrecursionlimit(10**9)\ndef f(n):\n    return f(n + 1) + 1\n"
             "print(f(0))\n",
             {Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT_EXCEEDED}),
        Case("recursion_java", "Java",
             "public class R { static long f(long n) { return f(n + 1) + 1; }\n"
             "  public static void main(String[] a) { System.out.println(f(0)); } }\n",
             {Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT_EXCEEDED}),
        Case("include_urandom", "C", '#include "/dev/urandom"\nint main(void){return 0;}\n',
             {Verdict.COMPILATION_ERROR}, checks=["compile_limits"]),
        Case("hello_java", "Java", HELLO["Java"], {Verdict.PASSED},
             expected_out="Hello, World!"),
        Case("hello_node", "Javascript", HELLO["Javascript"], {Verdict.PASSED},
             expected_out="Hello, World!"),
        Case("hello_go", "Go", HELLO["Go"], {Verdict.PASSED}, expected_out="Hello, World!"),
        Case("hello_csharp", "C#", HELLO["C#"], {Verdict.PASSED},
             expected_out="Hello, World!"),
    ]  # fmt: skip


def host_process_names() -> set[str]:
    names: set[str] = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError):
                names.add((d / "comm").read_text().strip())
    return names


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    canary = Path(f"/tmp/engine-canary-{TOKEN}")
    canary.write_text(CANARY_TEXT)
    canary.chmod(0o644)
    outside = Path(f"/tmp/engine-outside-{TOKEN}")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.setblocking(False)
    old = os.environ.get("CODE_EXEC_TEST_SECRET")
    os.environ["CODE_EXEC_TEST_SECRET"] = SECRET
    try:
        yield Host(canary, outside, listener, listener.getsockname()[1])
    finally:
        listener.close()
        canary.unlink(missing_ok=True)
        outside.unlink(missing_ok=True)
        if old is None:
            os.environ.pop("CODE_EXEC_TEST_SECRET", None)
        else:
            os.environ["CODE_EXEC_TEST_SECRET"] = old


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(workers=2)


@pytest.fixture(scope="module")
def outcomes(host: Host, engine: Engine) -> dict[str, tuple[Case, Result]]:
    for lang in ("C", "Python", "Python 3", "Java", "Javascript", "Go", "C#"):
        rt = resolve(lang)
        require(rt.available, f"runtime {rt.name} unavailable: {rt.reason}")
    # kill(-1) and friends are only safe to try once the pid namespace is in place
    iso = probe_isolation()
    require(
        bool(iso.get("pid_namespace")) and bool(iso.get("fs_view")),
        f"sandbox layers missing here: {inactive_layers(iso)} {iso.get('notes')}",
    )
    cases = build_cases(host)
    jobs = [
        Job(
            language=k.language,
            source_code=k.source,
            tests=tuple(TestCase(i, (o,)) for i, o in ((k.stdin, k.expected_out), *k.more_tests)),
            time_limit_s=k.time_limit_s,
            memory_limit_mb=k.memory_mb,
            id=k.id,
        )
        for k in cases
    ]
    results = engine.judge_many(jobs)
    time.sleep(0.2)  # anything that escaped would still be around; give it time to show up
    return {k.id: (k, r) for k, r in zip(cases, results, strict=True)}


CASE_IDS = [k.id for k in build_cases(Host(Path("/x"), Path("/y"), None, 1))]  # type: ignore[arg-type]


def _describe(r: Result) -> str:
    comp = r.compile.stderr[-500:] if r.compile else ""
    tests = [(t.verdict.value, t.detail, t.stdout[-300:], t.stderr[-300:]) for t in r.tests]
    return f"{r.id}: {r.verdict} {r.detail} {comp} {tests}"


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_hostile_program(
    outcomes: dict[str, tuple[Case, Result]], host: Host, case_id: str
) -> None:
    case, r = outcomes[case_id]
    assert r.verdict in case.expect, _describe(r)
    if os.geteuid() == 0 and toolchains_required():
        assert not inactive_layers(r.isolation), f"inactive layers: {inactive_layers(r.isolation)}"
    else:
        require(
            bool(r.isolation.get("pid_namespace") and r.isolation.get("fs_view")),
            f"sandbox layers missing here: {inactive_layers(r.isolation)}",
        )
    out = "".join(t.stdout + t.stderr for t in r.tests)
    if case.tag:
        assert case.tag not in host_process_names(), f"a process of {case_id} survived"
    for check in case.checks:
        kind, _, arg = check.partition(":")
        if kind == "signal":
            assert r.tests[0].signal == arg, _describe(r)
            assert arg in r.tests[0].detail
        elif kind == "timeout":
            assert arg in r.tests[0].detail, _describe(r)
        elif kind == "exit":
            assert r.tests[0].exit_code == int(arg) and f"exit code {arg}" in r.tests[0].detail
        elif kind == "sigxfsz_or_ole":
            t0 = r.tests[0]
            assert t0.verdict is Verdict.OUTPUT_LIMIT_EXCEEDED or t0.signal == "SIGXFSZ"
        elif kind == "seccomp_denied":
            got = dict(line.split(" ", 1) for line in r.tests[0].stdout.splitlines())
            for call in ("unshare", "ptrace", "mount", "bpf", "keyctl", "perf", "setns", "inet6"):
                assert got[call] == "-1 1", (call, got)  # -1, errno EPERM
            assert got["unix"] == "0 0"  # AF_UNIX stays allowed
        elif kind == "init_unreachable":
            lines = r.tests[0].stdout.splitlines()
            for what in ("fd", "environ", "mem", "root"):
                assert f"{what} denied 13" in lines, (what, lines)  # EACCES
            assert "CapEff:\\t0000000000000000\\n" in lines[-1]
        elif kind == "compile_limits":
            assert r.compile is not None and "exceeded its limits" in r.compile.detail
        elif kind == "no_connection":
            with pytest.raises(BlockingIOError):
                conn, _ = host.listener.accept()
                conn.close()
            assert "connected\n" not in out
        elif kind == "no_canary":
            assert CANARY_TEXT not in out
            assert "denied" in out or "No such file" in out
        elif kind == "no_shadow":
            assert "root:" not in out
        elif kind == "nothing_outside":
            assert not host.outside.exists()
            for p in (f"/usr/{TOKEN}", f"/etc/{TOKEN}", f"/{TOKEN}", f"/work/{TOKEN}"):
                assert not Path(p).exists(), p
        elif kind == "no_secret":
            assert SECRET not in out
            assert "CODE_EXEC_TEST_SECRET" not in out
            assert "PATH" in out  # the environment was printed at all
        else:
            raise AssertionError(f"unknown check {check}")


def test_engine_alive_after_hostile_batch(
    outcomes: dict[str, tuple[Case, Result]], engine: Engine
) -> None:
    job = Job("C", HELLO["C"], (TestCase("", ("Hello, World!",)),))
    assert engine.judge(job).verdict is Verdict.PASSED
    assert len(outcomes) == len(CASE_IDS)
    # no process of any hostile program is left on the host
    names = host_process_names()
    assert not [n for n in names if n.startswith(f"h{TOKEN}")]


def test_no_result_blames_the_engine(outcomes: dict[str, tuple[Case, Result]]) -> None:
    bad = [r.id for _, r in outcomes.values() if r.verdict is Verdict.INFRA_ERROR]
    assert not bad
