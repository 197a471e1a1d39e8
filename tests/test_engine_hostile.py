"""Hostile programs: each case checks the verdict AND the host's invariants.

Invariants: no process of the program survives (checked right after EACH case: no process of the
host owned by one of the sandbox uids that case's sandboxes got, and none of its cgroups left
with tasks; tagged processes are also looked up by name), a 0644 canary in the host's /tmp stays
unread, nothing is written outside the work dir, a loopback listener opened by the test sees no
connection, no host secret leaks through the environment, and the engine still judges a hello
world after every case. Cases run on two threads, each checking its own case's invariants.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from code_eval_taskpack.execution import Engine, Job, Result, TestCase, Verdict, resolve
from code_eval_taskpack.execution.isolation import inactive_layers
from code_eval_taskpack.execution.limits import run_limits
from code_eval_taskpack.execution.sandbox import cgroups
from code_eval_taskpack.execution.sandbox import uids as sandbox_uids
from code_eval_taskpack.execution.sandbox.command import probe_isolation
from code_eval_taskpack.execution.speedups import warm_compiler
from tests.conftest import not_held_by_backend, require, require_runtime, toolchains_required
from tests.engine_programs import HELLO, describe

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
    kills_others: bool = False  # kill(-1)/kill(parent): only with every containment layer


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
             time_limit_s=0.5, tag=t("fb"), checks=["wall_bounded"]),
        Case("thread_bomb", "C", c(
            "static void*spin(void*a){volatile long x=0;for(;;)x++;return a;}"
            f'int main(void){{name("{t("tb")}");pthread_t th;'
            "for(;;){pthread_create(&th,0,spin,0);}}"),
             {Verdict.TIME_LIMIT_EXCEEDED, Verdict.RUNTIME_ERROR, Verdict.MEMORY_LIMIT_EXCEEDED},
             time_limit_s=0.5, tag=t("tb"), checks=["wall_bounded"]),
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
             {Verdict.PASSED, Verdict.TIME_LIMIT_EXCEEDED}, tag=t("ho"),
             checks=["wall_bounded"]),
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
             {Verdict.PASSED}, kills_others=True),
        Case("kill_parent_py", "Python",
             "import os, signal\nfor pid in (os.getppid(), 1, -1):\n"
             "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n"
             "print('ok')\n",
             {Verdict.PASSED}, kills_others=True),
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


def processes_of_uids(uids: set[int]) -> list[str]:
    """Host processes whose real, effective, saved or fs uid is one of `uids` (zombies too)."""
    found: list[str] = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            status = (d / "status").read_text()
            line = next(x for x in status.splitlines() if x.startswith("Uid:"))
            if uids & {int(u) for u in line.split()[1:]}:
                found.append(f"{d.name}:{(d / 'comm').read_text().strip()}")
    return found


def cgroups_with_tasks(dirs: list[Path]) -> list[str]:
    """Those of `dirs` that still exist with a process in them."""
    busy = []
    for d in dirs:
        for name in ("cgroup.procs", "tasks"):
            with contextlib.suppress(OSError):
                if (d / name).read_text().split():
                    busy.append(f"{d}/{name}")
    return busy


@dataclass
class Aftermath:
    """The host's state right after one case was judged (see the module docstring)."""

    uids: set[int]
    cgroup_dirs: list[Path]
    survivors: list[str]
    busy_cgroups: list[str]
    hello: Result
    elapsed_s: float


class SandboxRecorder:
    """Records, per judging thread, the uids and cgroups the sandboxes of a case get."""

    def __init__(self) -> None:
        self.local = threading.local()
        self._alloc = sandbox_uids.allocate_uid
        self._create = cgroups.CgroupSet.create

    def start(self) -> None:
        self.local.uids = set()
        self.local.dirs = []

    def allocate_uid(self) -> int:
        uid = self._alloc()
        if hasattr(self.local, "uids"):
            self.local.uids.add(uid)
        return uid

    def create_cgroup(self, tag: str) -> cgroups.CgroupSet:
        cs = self._create(tag)
        if hasattr(self.local, "dirs"):
            self.local.dirs.extend(cs.dirs)
        return cs


def aftermath(uids: set[int], dirs: list[Path], engine: Engine, elapsed: float) -> Aftermath:
    # a warm compiler's server started by this case outlives it by design (its own sandbox,
    # uid and cgroups; test_warm_compilers checks that closing it leaves nothing)
    for server in warm_compiler.POOL.servers():
        uids = uids - {server.uid}
        dirs = [d for d in dirs if d not in server.cgroup_dirs]
    # an escaped process would still be there; exiting ones (zombies being reaped) get 2 s
    deadline = time.monotonic() + 2.0
    while True:
        survivors = processes_of_uids(uids) if uids else []
        busy = cgroups_with_tasks(dirs)
        if (not survivors and not busy) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    hello = engine.judge(Job("C", HELLO["C"], (TestCase("", ("Hello, World!",)),)))
    return Aftermath(uids, dirs, survivors, busy, hello, elapsed)


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
def isolation_here() -> dict[str, object]:
    return probe_isolation()


def kill_cases_allowed(iso: dict[str, object]) -> bool:
    """kill(-1) and kill(parent) are only tried once they cannot reach anything of the host."""
    return all(bool(iso.get(k)) for k in ("pid_namespace", "unprivileged_uid", "fs_view"))


@pytest.fixture(scope="module")
def outcomes(
    host: Host, engine: Engine, isolation_here: dict[str, object], pytestconfig: pytest.Config
) -> dict[str, tuple[Case, Result, Aftermath]]:
    for lang in ("C", "Python", "Python 3", "Java", "Javascript", "Go", "C#"):
        if not not_held_by_backend(resolve(lang).cluster):
            require_runtime(lang)
    iso = isolation_here
    require(
        bool(iso.get("pid_namespace")) and bool(iso.get("fs_view")),
        f"sandbox layers missing here: {inactive_layers(iso)} {iso.get('notes')}",
    )
    cases = [
        k
        for k in build_cases(host)
        if (kill_cases_allowed(iso) or not k.kills_others)
        and not not_held_by_backend(resolve(k.language).cluster)
    ]
    recorder = SandboxRecorder()

    def judge_one(k: Case) -> tuple[Case, Result, Aftermath]:
        job = Job(
            language=k.language,
            source_code=k.source,
            tests=tuple(TestCase(i, (o,)) for i, o in ((k.stdin, k.expected_out), *k.more_tests)),
            time_limit_s=k.time_limit_s,
            memory_limit_mb=k.memory_mb,
            id=k.id,
            comparator=pytestconfig.getoption("comparator"),
        )
        recorder.start()
        t0 = time.monotonic()
        result = engine.judge(job)
        elapsed = time.monotonic() - t0
        uids, dirs = set(recorder.local.uids), list(recorder.local.dirs)
        del recorder.local.uids, recorder.local.dirs
        return k, result, aftermath(uids, dirs, engine, elapsed)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sandbox_uids, "allocate_uid", recorder.allocate_uid)
        mp.setattr(cgroups.CgroupSet, "create", recorder.create_cgroup)
        with ThreadPoolExecutor(max_workers=2) as pool:
            done = list(pool.map(judge_one, cases))
    return {k.id: (k, r, a) for k, r, a in done}


CASE_IDS = [k.id for k in build_cases(Host(Path("/x"), Path("/y"), None, 1))]  # type: ignore[arg-type]


#: the backends whose sandboxes the recorder sees (made by the judging thread itself); a remote
#: server's or a Ray node's are made by their own threads or processes, with the local
#: backend, whose run of this suite checks them
RECORDED_BACKENDS = ("local", "recording")


def job_cgroups_expected() -> bool:
    """Whether the container backend makes per-job cgroups here (root on cgroup v1)."""
    from code_eval_taskpack.execution.backends.container.backend import JobCgroups

    return not JobCgroups.unavailable("docker")


#: slack over a job's wall limit: generous, as this checks the limit mechanism, not speed
WALL_SLACK_S = 5.0


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_hostile_program(
    outcomes: dict[str, tuple[Case, Result, Aftermath]],
    host: Host,
    isolation_here: dict[str, object],
    case_id: str,
) -> None:
    if case_id not in outcomes:
        case = next(k for k in build_cases(host) if k.id == case_id)
        elsewhere = not_held_by_backend(resolve(case.language).cluster)
        if elsewhere:
            pytest.skip(elsewhere)
        assert case.kills_others and not kill_cases_allowed(isolation_here)
        require(False, f"{case_id} needs pid_namespace + unprivileged_uid + fs_view")
    case, r, after = outcomes[case_id]
    # the generic invariants, checked right after this case was judged
    assert not after.survivors, f"processes of {case_id} survived: {after.survivors}"
    assert not after.busy_cgroups, f"cgroups of {case_id} still hold tasks: {after.busy_cgroups}"
    if r.isolation.get("backend") == "container":
        # its sandboxes live in the container, out of the recorder's sight; where the backend
        # makes per-job cgroups, the result says they held the program
        assert r.isolation.get("memory_enforcement") == "cgroup" or not job_cgroups_expected()
    elif r.isolation.get("backend") in RECORDED_BACKENDS:
        assert after.cgroup_dirs or not r.isolation.get("cgroup")  # the recorder saw them
        if r.isolation.get("unprivileged_uid"):
            assert after.uids, "the recorder saw no sandbox uid"
    assert after.hello.verdict is Verdict.PASSED, f"engine unwell after {case_id}: {after.hello}"
    assert r.verdict in case.expect, describe(r)
    if os.geteuid() == 0 and toolchains_required():
        missing = inactive_layers(r.isolation)
        if r.isolation.get("backend") == "container":
            # the agent runs as the container's uid 10001, not root: its sandboxes' uid switch
            # is the container's own unprivileged user, probed from inside
            assert r.isolation.get("container_unprivileged_user"), r.isolation
            missing = [layer for layer in missing if layer != "unprivileged_uid"]
        assert not missing, f"inactive layers: {missing}"
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
            assert r.tests[0].signal == arg, describe(r)
            assert arg in r.tests[0].detail
        elif kind == "wall_bounded":
            rt = resolve(case.language)
            wall = run_limits(case.time_limit_s, case.memory_mb, rt.time_factor).wall
            for t in r.tests:
                assert t.wall_s <= wall + WALL_SLACK_S, (t.wall_s, wall, describe(r))
            # the whole judgement (compile included) did not hang either
            assert after.elapsed_s <= 120 + wall + 4 * WALL_SLACK_S, after.elapsed_s
        elif kind == "timeout":
            assert arg in r.tests[0].detail, describe(r)
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
    outcomes: dict[str, tuple[Case, Result, Aftermath]],
    engine: Engine,
    isolation_here: dict[str, object],
) -> None:
    job = Job("C", HELLO["C"], (TestCase("", ("Hello, World!",)),))
    assert engine.judge(job).verdict is Verdict.PASSED
    expected = len(CASE_IDS) if kill_cases_allowed(isolation_here) else len(CASE_IDS) - 2
    # every case judged but those of languages the backend declares it does not hold
    cases = build_cases(Host(Path("/x"), Path("/y"), None, 1))  # type: ignore[arg-type]
    elsewhere = [
        k
        for k in cases
        if not_held_by_backend(resolve(k.language).cluster)
        and (kill_cases_allowed(isolation_here) or not k.kills_others)
    ]
    assert len(outcomes) == expected - len(elsewhere)
    # no process of any hostile program is left on the host: by name and by sandbox uid
    names = host_process_names()
    assert not [n for n in names if n.startswith(f"h{TOKEN}")]
    every_uid = set().union(*(a.uids for _, _, a in outcomes.values()))
    assert not processes_of_uids(every_uid)
    every_dir = [d for _, _, a in outcomes.values() for d in a.cgroup_dirs]
    assert not cgroups_with_tasks(every_dir)


def test_no_result_blames_the_engine(
    outcomes: dict[str, tuple[Case, Result, Aftermath]],
) -> None:
    bad = [r.id for _, r, _ in outcomes.values() if r.verdict is Verdict.INFRA_ERROR]
    assert not bad
