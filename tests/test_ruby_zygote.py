"""The Ruby zygote (execution/speedups/zygotes/ruby_zygote.c, frame words Z/W of launcher.c): a test forked from
the interpreter stopped at the end of its start (the prelude's last statement) is the cold
command's twin. Cold and warm runs are diffed: what the interpreter and the process observe of
themselves, how programs end, a script rewritten between tests, every shared ChatGPT Ruby program
on its tests, programs that go after the zygote, and a command the zygote must refuse."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import pytest

from code_eval_taskpack.execution import Job, TestCase
from code_eval_taskpack.execution.backends.local import LocalBackend
from code_eval_taskpack.execution.languages.registry import resolve
from code_eval_taskpack.execution.run.runner import judge_with
from code_eval_taskpack.execution.sandbox.command import Sandbox
from code_eval_taskpack.execution.sandbox.outcome import WARM_OOM_NOTE
from code_eval_taskpack.execution.types import Verdict
from tests.test_zygote import (
    LIMITS,
    assert_clocks_count_the_start,
    assert_ends_as_cold,
    assert_judged_warm_and_cold_by_the_switch,
    assert_shared_programs_judged_warm_as_cold,
    assert_stat_flags_differ_only_by_the_fork,
    observed,
    require_zygote_host,
    switches,
)
from tests.test_zygote import Pair as BasePair

RUBY = "Ruby 3"


@pytest.fixture(scope="module", autouse=True)
def ruby() -> None:
    require_zygote_host("ruby")


#: a program run cold and warm as RUBY
Pair = partial(BasePair, language=RUBY)


# -- what the program observes of itself ------------------------------------------------------

PROBE = r"""
require "json"
FEATURES = $LOADED_FEATURES.dup
status = {}
File.foreach("/proc/self/status") do |line|
  k, v = line.split(":", 2)
  # the uid is the sandbox's own (one per sandbox): its sameness is compared, not its number
  v = v.split.uniq.size.to_s if %w[Uid Gid].include?(k)
  if %w[Uid Gid Groups CapInh CapPrm CapEff CapBnd CapAmb NoNewPrivs Seccomp Seccomp_filters
        SigBlk SigIgn SigCgt Threads Cpus_allowed_list Umask FDSize Name].include?(k)
    status[k] = v.strip
  end
end
fds = Dir.children("/proc/self/fd").map(&:to_i).sort
links = fds.map do |fd|
  (File.readlink("/proc/self/fd/#{fd}") rescue "?").sub(%r{/tmp/code-exec-[^/]+}, "BOX").gsub(/\d+/, "N")
end
traps = {}
Signal.list.each do |name, num|
  next if %w[KILL STOP VTALRM EXIT].include?(name) || traps.value?(num)
  begin
    old = trap(name, "SYSTEM_DEFAULT")
    trap(name, old)
    traps[name] = old.inspect
  rescue ArgumentError => e
    traps[name] = e.message
  end
end
limits = Process.constants.grep(/^RLIMIT_/).sort.to_h { |c| [c, Process.getrlimit(Process.const_get(c))] }
data = $stdin.read
out = {
  "features" => FEATURES, "load_path" => $LOAD_PATH, "argv" => ARGV, "zero" => $0,
  "file" => __FILE__, "program" => $PROGRAM_NAME, "env" => ENV.to_h, "cwd" => Dir.pwd,
  "fds" => fds, "links" => links, "stdin" => data, "traps" => traps, "rlimits" => limits,
  "status" => status, "verbose" => [$VERBOSE, $DEBUG, $-w],
  "encodings" => [Encoding.default_external.name, Encoding.default_internal.inspect, __ENCODING__.name],
  "io" => [$stdin, $stdout, $stderr].map { |f| [f.fileno, f.sync, f.tty?, f.binmode?, f.external_encoding.inspect] },
  "ids" => [Process.ppid, Process.getsid == Process.pid, Process.getpgrp == Process.pid,
            Process.uid == Process.euid, Process.gid == Process.egid, Process.groups],
  "threads" => Thread.list.size, "constants" => Object.constants.sort.map(&:to_s),
  "methods" => Kernel.private_instance_methods.sort.map(&:to_s), "gc" => GC.stress,
  "cgroup" => File.read("/proc/self/cgroup").gsub(/code-exec-\d+-\d+/, "SET"),
  "nice" => Process.getpriority(Process::PRIO_PROCESS, 0),
  "oom" => File.read("/proc/self/oom_score_adj"), "exe" => File.readlink("/proc/self/exe"),
  "comm" => File.read("/proc/self/comm"),
  "stat_flags" => File.read("/proc/self/stat").rpartition(")")[2].split[6].to_i,
}
puts JSON.generate(out)
STDERR.puts rand(2**60)
"""


def test_the_program_observes_what_a_cold_start_gives() -> None:
    pair = Pair(PROBE)
    inputs = [b"first test\n", b"second\n" * 1000, b"third\n"]
    cold, warm = pair.cold(inputs), pair.warm(inputs)
    seeds = []
    for c, w in zip(cold, warm, strict=True):
        assert c.exit_code == w.exit_code == 0, (c.stderr, w.stderr)
        a: dict[str, Any] = json.loads(c.stdout)
        b: dict[str, Any] = json.loads(w.stdout)
        # the known observables: the file the process executes is the zygote's binary, and
        # RLIMIT_NPROC is one more (the zygote is a process of the uid too)
        assert a.pop("exe") == pair.argv[0]
        assert b.pop("exe") == pair.plan.warm_start
        assert_stat_flags_differ_only_by_the_fork(a.pop("stat_flags"), b.pop("stat_flags"))
        soft, hard = a["rlimits"].pop("RLIMIT_NPROC")
        assert b["rlimits"].pop("RLIMIT_NPROC") == [soft + 1, hard + 1]
        for key in sorted(a):
            assert a[key] == b[key], key
        assert a["fds"] == [0, 1, 2, 3, 4, 5]  # stdio, Ruby's two eventfds, /proc/self/fd
        assert a["comm"] == "ruby3.1\n" and a["status"]["FDSize"] == "64"
        assert a["ids"][:3] == [1, True, True]
        assert a["stdin"] in {i.decode() for i in inputs}
        seeds += [c.stderr, w.stderr]
    # each test draws its own random seed, warm as cold
    assert len(set(seeds)) == len(seeds)


def test_the_tests_of_one_program_share_rubys_hash_seed() -> None:
    """A known observable (README, "Ruby zygote"): String#hash's seed is fixed when Ruby
    initialises, before the seam, so the forked tests of a program print one value where
    cold tests print their own; which is why the zygote is off by default."""
    pair = Pair('puts "a".hash\n')
    inputs = [b"", b"", b""]
    cold, warm = pair.cold(inputs), pair.warm(inputs)
    assert len({o.stdout for o in cold}) == 3
    assert len({o.stdout for o in warm}) == 1


#: the program's own CPU clocks at its first line, by each of Ruby's ways to read them
CLOCKS = """
t = Process.times
puts [Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID),
      Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID),
      Process.clock_gettime(:GETRUSAGE_BASED_CLOCK_PROCESS_CPUTIME_ID),
      Process.clock_gettime(:CLOCK_BASED_CLOCK_PROCESS_CPUTIME_ID),
      t.utime + t.stime].join(" ")
"""


def test_the_programs_cpu_clocks_count_the_start_as_cold() -> None:
    assert_clocks_count_the_start(Pair(CLOCKS))


def test_a_forked_memory_kill_leaves_each_test_run_once() -> None:
    tests = tuple(TestCase(i, (str(n),)) for n, i in enumerate(("a", "hog", "b")))
    src = (
        'n = File.exist?("count") ? File.read("count").to_i : 0\n'
        'File.write("count", (n + 1).to_s)\n'
        'if $stdin.read == "hog" && File.basename(File.readlink("/proc/self/exe")) == "zygote"\n'
        '  s = "x" * (600 * 1024 * 1024)\nend\n'
        "puts n\n"
    )
    job = Job(
        language=RUBY, source_code=src, tests=tests, stop_on_first_fail=False, memory_limit_mb=128
    )
    results = {}
    for on in (True, False):
        results[on] = judge_with(resolve(RUBY), job, backend=LocalBackend(), config=switches(on))
    for r in results.values():
        assert [t.stdout for t in r.tests] == ["0\n", "1\n", "2\n"]
        assert r.verdict is Verdict.PASSED
    assert WARM_OOM_NOTE in results[True].isolation["notes"]


ENDINGS = {
    "exception": "def f(x) = 1 / x\nputs 'before'\nf(0)\n",
    "name_error_suggests": "value = 3\nputs valeu\n",
    "no_method_highlight": "x = nil\nx.upcase\n",
    "exit_code": "print 'partial'\nexit 3\n",
    "exit_bang_unflushed": "$stdout.write('lost?')\nexit!(5)\n",
    "abort": "abort 'bad input'\n",
    "at_exit": "at_exit { puts 'at_exit ran' }\nputs 'body'\n",
    "unflushed_at_exit": "$stdout.write('kept ' * 10000)\n",
    "thread_at_exit": "t = Thread.new { sleep 0.05; puts 'thread done' }\nputs 'main done'\nt.join\n",
    "deep_recursion": "def r(n) = r(n + 1)\nr(0)\n",
    "syntax_error": "puts(\n",
    "shebang_warnings": "#!/usr/bin/ruby -w\nx = 1\nputs [1, 2].sum\n",
    "stdin_lines": "$stdin.each_line { |l| puts l.strip.reverse }\n",
    "signal_self": "Process.kill(:TERM, $$)\nsleep 1\n",
    "trap_and_kill": "trap(:TERM) { puts 'trapped'; exit 7 }\nProcess.kill(:TERM, $$)\nsleep 1\n",
    "fork_child": "pid = fork { puts 'child' }\nProcess.wait(pid)\nputs 'parent', $?.exitstatus\n",
    "require_prime": "require 'prime'\nputs Prime.first(5).inspect\n",
    "data_section": "puts DATA.read\n__END__\nafter the end\n",
    "stderr_write": "warn 'err'\nputs 'out'\n",
}


@pytest.mark.parametrize("name", sorted(ENDINGS))
def test_endings_match_cold(name: str) -> None:
    assert_ends_as_cold(Pair(ENDINGS[name]), [b"1 2 3\nabc\n", b"4 5\n"])


def test_a_long_script_is_read_whole_and_a_rewritten_one_runs_as_rewritten() -> None:
    # longer than Ruby's first read of the script (8 KiB): the rest is read by the test itself
    long_src = "".join(f"a{i} = {i}\n" for i in range(3000)) + "puts a2999\n"
    pair = Pair(long_src)
    assert [observed(o) for o in pair.cold([b""])] == [observed(o) for o in pair.warm([b""])]
    # a program that rewrites its own script: the next test runs what a cold one would
    rewrite = (
        "src = File.read(__FILE__)\n"
        "n = src[/COUNT = (\\d+)/, 1].to_i\n"
        'File.write(__FILE__, src.sub(/COUNT = \\d+/, "COUNT = #{n + 1}"))\n'
        "COUNT = 0\nputs COUNT\n"
    )
    pair = Pair(rewrite)
    inputs = [b""] * 3
    cold, warm = pair.cold(inputs), pair.warm(inputs, expect_warm=False)
    assert [o.stdout for o in cold] == [b"0\n", b"1\n", b"2\n"]
    assert [observed(o) for o in cold] == [observed(o) for o in warm]


def test_the_zygote_refuses_a_command_without_the_prelude() -> None:
    # no prelude, no seam: the zygote must end before the script is read on (never run it)
    pair = Pair("puts 'ran'\n")
    plain = [a for a in pair.argv if not a.startswith("-r")]
    with Sandbox(ro_paths=pair.plan.ro_paths, files={"main.rb": b"puts 'ran'\n"}) as sb:
        started = sb.start_warm(
            plain, executable=pair.plan.warm_start, limits=LIMITS, env=pair.env, purpose="run"
        )
        assert not started
        out = sb.run(plain, limits=LIMITS, stdin=b"", env=pair.env, purpose="run", warm=True)
        assert out.stdout == b"ran\n" and out.exit_code == 0


# -- the shared ChatGPT programs --------------------------------------------------------------


def test_every_shared_ruby_program_judged_warm_as_cold() -> None:
    assert_shared_programs_judged_warm_as_cold(RUBY, "Ruby")


# -- programs that go after the zygote, and the limits ----------------------------------------


def test_a_program_that_kills_its_zygote_leaves_later_tests_judged_cold() -> None:
    src = (
        "me = Process.uid\n"
        "Dir.children('/proc').grep(/\\A\\d+\\z/).map(&:to_i).each do |pid|\n"
        "  next if pid == $$ || pid == 1\n"
        '  (Process.kill(:KILL, pid) rescue nil) if File.stat("/proc/#{pid}").uid == me rescue nil\n'
        "end\n"
        "puts gets.to_i * 2\n"
    )
    pair = Pair(src)
    inputs = [b"1\n", b"2\n", b"3\n"]
    cold, warm = pair.cold(inputs), pair.warm(inputs, expect_warm=False)
    assert [o.stdout for o in warm] == [b"2\n", b"4\n", b"6\n"]
    assert [observed(o) for o in cold] == [observed(o) for o in warm]
    assert pair.notes[0] == "" and pair.notes[-1] != ""  # the later tests ran cold


def test_memory_and_cpu_limits_keep_their_verdicts() -> None:
    for src, verdict in (
        ("s = 'x' * (600 * 1024 * 1024)\nputs s.size\n", Verdict.MEMORY_LIMIT_EXCEEDED),
        ("loop { }\n", Verdict.TIME_LIMIT_EXCEEDED),
    ):
        tests = (TestCase("", ("0",)),) * 3
        job = Job(
            language=RUBY,
            source_code=src,
            tests=tests,
            stop_on_first_fail=False,
            time_limit_s=0.5,
            memory_limit_mb=128,
        )
        runtime = resolve(RUBY)
        results = {}
        for on in (True, False):
            results[on] = judge_with(runtime, job, backend=LocalBackend(), config=switches(on))
        assert [t.verdict for t in results[True].tests] == [verdict] * 3
        assert [t.verdict for t in results[False].tests] == [verdict] * 3


def test_the_judge_runs_ruby_warm_and_the_switch_restores_cold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert_judged_warm_and_cold_by_the_switch(monkeypatch, RUBY)


FIND_ZYGOTE = r"""
def zygote
  me = File.binread("/proc/self/cmdline")
  Dir.children("/proc").grep(/\A\d+\z/).map(&:to_i).find do |pid|
    pid != 1 && pid != $$ && (File.binread("/proc/#{pid}/cmdline") == me rescue false)
  end
end
z = zygote
"""


def test_the_zygote_is_out_of_reach() -> None:
    src = FIND_ZYGOTE + (
        "require 'fiddle'\n"
        "res = {}\n"
        "%w[mem environ fd maps fd/64].each do |what|\n"
        '  path = "/proc/#{z}/#{what}"\n'
        "  res[what] = begin\n"
        "    what == 'fd' ? Dir.children(path) : File.binread(path, 16)\n"
        "    'open'\n"
        "  rescue SystemCallError => e\n"
        "    e.class.name\n"
        "  end\n"
        "end\n"
        "ptrace = Fiddle::Function.new(Fiddle::Handle::DEFAULT['ptrace'],\n"
        "  [Fiddle::TYPE_LONG, Fiddle::TYPE_LONG, Fiddle::TYPE_VOIDP, Fiddle::TYPE_VOIDP],\n"
        "  Fiddle::TYPE_LONG)\n"
        "res['ptrace'] = ptrace.call(16, z, nil, nil) == 0 ? 'attached' : Fiddle.last_error\n"
        "p z.nil?, res.sort\n"
    )
    out = Pair(src).warm([b""])[0]
    assert out.exit_code == 0, out.stderr
    found, fields = out.stdout.decode().splitlines()
    assert found == "false"
    got = dict(eval(fields))  # a list of [name, value] pairs as Ruby prints it
    assert got.pop("ptrace") == 1  # EPERM
    assert set(got.values()) <= {"Errno::EACCES", "Errno::EPERM"}, got


def test_signals_the_zygote_survives_never_reach_a_later_test() -> None:
    src = FIND_ZYGOTE + (
        "if $stdin.read == 'poke'\n"
        "  %i[INT TERM USR1 HUP CONT WINCH CHLD PIPE].each { |s| Process.kill(s, z) }\n"
        "  sleep 0.05\n"
        "end\n"
        "puts (1..10**5).sum, !z.nil?\n"
    )
    pair = Pair(src)
    warm = pair.warm([b"poke", b"after", b"again"])
    assert [o.stdout for o in warm] == [b"5000050000\ntrue\n"] * 3
    assert all(o.exit_code == 0 and not o.stderr for o in warm)
    assert pair.notes == ["", "", ""]


def test_what_a_program_leaves_in_rubys_eventfds_never_reaches_a_later_test() -> None:
    # Ruby's signal wake-up descriptors (fds 3 and 4, which Ruby keeps from a program's IO:
    # reached through the C library) are each test's own, as cold
    src = (
        "require 'fiddle'\n"
        "T = Fiddle\n"
        "rd = T::Function.new(T::Handle::DEFAULT['read'], [T::TYPE_INT, T::TYPE_VOIDP, T::TYPE_SIZE_T], T::TYPE_SSIZE_T)\n"
        "wr = T::Function.new(T::Handle::DEFAULT['write'], [T::TYPE_INT, T::TYPE_VOIDP, T::TYPE_SIZE_T], T::TYPE_SSIZE_T)\n"
        "seen = [3, 4].map { |fd| buf = \"\\0\" * 8; rd.call(fd, buf, 8) == 8 ? buf.unpack1('Q') : :empty }\n"
        "[3, 4].each { |fd| wr.call(fd, [7].pack('Q'), 8) }\n"
        "p seen\n"
    )
    pair = Pair(src)
    inputs = [b""] * 3
    cold, warm = pair.cold(inputs), pair.warm(inputs)
    assert [o.stdout for o in cold] == [b"[:empty, :empty]\n"] * 3
    assert [observed(o) for o in cold] == [observed(o) for o in warm]
    # and the probe would see a count left there: within one test, fd 4 keeps what was written
    again = src.replace("p seen\n", 'p [3, 4].map { |fd| b = "\\0" * 8; rd.call(fd, b, 8) }\n')
    assert Pair(again).warm([b""])[0].stdout.endswith(b", 8]\n")
