/*
 * CPython zygote: `python3 ARGS...` split at the seam of CPython's own main.
 *
 * /usr/bin/python3's main is Py_BytesMain: pre-initialise from argv, read the configuration from
 * the same argv, Py_InitializeFromConfig, then Py_RunMain (insert sys.path[0], run the script as
 * __main__, finalise, return the exit code). This program does the same three first steps with
 * the SAME argv (argv[0] is the cold command's, so sys.executable, sys.orig_argv, sys.flags,
 * sys.path and the prefixes are computed exactly as cold), and then, instead of running the
 * script, serves the sandbox's init: per request it forks a fresh process that calls
 * Py_RunMain() and exits with its code. None of our code runs as Python: sys.modules and every
 * interpreter object are those of the cold interpreter at the moment it would start the script.
 *
 * Why: the per-test start-up of CPython (11-28 ms) becomes one fork (about 1 ms).
 *
 * Contract with the sandbox init (launcher.c, frame words Z and W), the one place it is written
 * (its code, shared with the PyPy zygote pypy_zygote.c, is zygote_protocol.h):
 *   - fd 3 is an AF_UNIX SOCK_SEQPACKET socket to init; anything else on fd 3 is an error
 *     (exit 127, message on stderr): this program never runs a script by itself.
 *   - fds 0, 1, 2 at start are regular files in the sandbox's io folder (an empty stdin, stdout,
 *     stderr), so that the io objects CPython makes at initialisation (buffer sizes from
 *     st_blksize, seekable, not a tty, position 0) are those a cold test gets.
 *   - after initialisation: message "R" (ready). Initialisation failing: CPython's own message on
 *     stderr and its exit code, no "R".
 *   - per test init sends "F" with 4 descriptors (SCM_RIGHTS): stdin, stdout, stderr of the test
 *     and the read end of a one-shot "go" socket. The zygote forks A (PyOS_BeforeFork/After as
 *     os.fork does), A forks B and exits, so that B's parent is init (pid 1), as a cold test's
 *     is; once A is reaped the zygote answers "P<pid of B>" (or "E<errno>"). init checks B is its
 *     own child, sends it the cold child's rlimits ("L" and RLIM_NLIMITS struct rlimit: B sets
 *     and checks each, then answers "r"; it cannot raise a hard limit a program lowered on the
 *     zygote, and exits instead), sets its niceness, scheduler, affinity, I/O priority and OOM
 *     score as a cold child's, then sends "g" on the go socket.
 *   - B, released: new session, test stdio on 0/1/2, every other descriptor closed, dumpable
 *     again (as after a cold exec), empty signal mask (dispositions are CPython's, inherited as
 *     a cold start sets them), then Py_RunMain. Anything but "g" (init gone, or it decided
 *     against the test): B exits 127 without running anything.
 *   - the zygote is non-dumpable: a program of the same uid cannot ptrace it nor open its
 *     /proc/<pid>/mem, fd or environ. EOF on fd 3 ends it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "zygote_protocol.h"

/* as os.fork does around its fork */
static const struct zygote_hooks cpython_hooks = {
    PyOS_BeforeFork, PyOS_AfterFork_Parent, PyOS_AfterFork_Child, NULL, NULL, 0};

int main(int argc, char **argv) {
    int bad = zp_start("zygote", CTL_FD, argv[0]);
    if (bad) return bad;
    /* Py_BytesMain's own steps, with its argv */
    PyPreConfig preconfig;
    PyPreConfig_InitPythonConfig(&preconfig);
    PyStatus status = Py_PreInitializeFromBytesArgs(&preconfig, argc, argv);
    if (PyStatus_Exception(status)) {
        if (PyStatus_IsExit(status)) return status.exitcode;
        Py_ExitStatusException(status);
    }
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    status = PyConfig_SetBytesArgv(&config, argc, argv);
    if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        if (PyStatus_IsExit(status)) return status.exitcode;
        Py_ExitStatusException(status);
    }
    /* returns in B only: dispositions are CPython's (inherited as a cold start sets them), the
       mask empty as a cold exec's */
    sigset_t none;
    sigemptyset(&none);
    zp_serve(&cpython_hooks, &none);
    exit(Py_RunMain());
}
