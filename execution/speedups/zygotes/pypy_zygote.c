/*
 * PyPy zygote: `pypy3 ARGS... SCRIPT` split where PyPy opens the script.
 *
 * Debian's pypy3 is a main that calls libpypy's pypy_main_startup(argc, argv), which initialises
 * the interpreter (app_main: argv, sys.flags, sys.path, -W/-s/-S, the standard library's start,
 * the stdio objects) and then runs the script, all in one call: there is no seam in its API as
 * CPython's Py_InitializeFromConfig / Py_RunMain. The seam is the script's first open: this
 * program is that same main with the SAME argv (argv[0] the cold command's, so sys.executable,
 * the prefixes and sys.path are computed as cold), linked with the same libpypy, and it defines
 * the open functions libpypy calls. Every open passes through to the C library but the first one
 * of the script (its path as argv names it, or made absolute against the cwd): there, with the
 * interpreter in the very state a cold start has when it reads the script, the zygote serves the
 * sandbox's init (zygote_protocol.h); each forked test process B lets that open proceed, and
 * PyPy reads, compiles and runs the script as __main__, finalises and exits as cold. None of our
 * code runs as Python, and nothing runs in the zygote past the seam.
 *
 * Why: the per-test start-up of PyPy (about 30 ms) becomes one fork.
 *
 * The contract with init is the CPython zygote's (zygote.c's header comment), with these
 * differences:
 *   - "R" is sent at the seam, not after an initialisation call: PyPy failing before it (its own
 *     message and exit code, no "R"), or exiting without ever opening the script, ends the zygote
 *     before "R" and every test runs cold.
 *   - the script must be a regular file when the zygote starts (else exit 127 at once: PyPy would
 *     run a folder without opening it), and B checks it still is one before it answers "r" (a
 *     program may replace it between tests; else B exits 127 and the test runs cold): PyPy's one
 *     look at the script before the seam is a stat, whose answer B's open then holds to.
 *   - at the seam the zygote checks that it is the one thread of its process and holds no
 *     descriptor but 0-3 (a cold PyPy holds only 0-2 there); anything else: exit 127 before "R".
 *   - from the seam on, every signal is blocked in the zygote, so no handler of PyPy's ever runs
 *     there (a signal a program sends it stays pending in the zygote, and a forked process
 *     starts with none pending); B takes the mask the interpreter had at the seam (empty, as a
 *     cold start's). Dispositions are PyPy's own, inherited as a cold start sets them.
 *   - PyPy's fork bookkeeping is the C library's atfork handlers libpypy registers, which fork(2)
 *     runs as it does for os.fork; os.fork's Python-level hooks are not run (a cold test never
 *     forked either, and the zygote has one thread).
 */
#define _GNU_SOURCE 1
#include "zygote_seam.h"

int pypy_main_startup(int argc, char **argv);

/* The seam, at the script's first open: one thread, fds 0-3 only, every signal blocked from here
   on, then serve. Returns in B only, which then opens the script as the cold interpreter does. */
static void at_script_open(void) {
    sigset_t all, cold_mask;
    sigfillset(&all);
    if (sigprocmask(SIG_SETMASK, &all, &cold_mask) != 0) _exit(127);
    seam_expect("pypy zygote", 1, 4);
    static const struct zygote_hooks hooks = {NULL, NULL, NULL, script_changed, NULL, 0};
    zp_serve(&hooks, &cold_mask);
}

static void script_opened(int fd) { (void)fd; }

int main(int argc, char **argv) {
    int bad = zp_start("pypy zygote", CTL_FD, argv[0]);
    if (!bad) bad = seam_arm("pypy zygote", argc, argv, ".py");
    if (bad) return bad;
    return pypy_main_startup(argc, argv);
}
