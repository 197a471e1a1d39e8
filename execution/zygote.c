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
 * Contract with the sandbox init (launcher.c, frame words Z and W), the one place it is written:
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

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define CTL_FD 3

static int is_control_socket(int fd) {
    int type = 0, domain = 0;
    socklen_t len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET) return 0;
    len = sizeof(domain);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_UNIX) return 0;
    return 1;
}

static void say(const char *msg) {
    while (send(CTL_FD, msg, strlen(msg), MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
}

/* One request: "F" and exactly four descriptors, else -1 (the request is refused). 0 on EOF. */
static int receive_request(int fds[4]) {
    char byte = 0;
    char ctl[CMSG_SPACE(4 * sizeof(int))];
    struct iovec iov = {&byte, 1};
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl;
    msg.msg_controllen = sizeof(ctl);
    ssize_t n;
    while ((n = recvmsg(CTL_FD, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (n == 0) return 0;
    int got = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *in = (int *)CMSG_DATA(c);
        for (int i = 0; i < k; i++) {
            if (got < 4) fds[got++] = in[i];
            else close(in[i]);
        }
    }
    if (n != 1 || byte != 'F' || got != 4 || (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
        for (int i = 0; i < got; i++) close(fds[i]);
        return -1;
    }
    return 1;
}

/* B: wait for init's go, become the cold process, run the script. Never returns. */
static void run_test(const int fds[4]) {
    PyOS_AfterFork_Child();
    /* "L": the cold child's rlimits, each set and read back; then "r": nothing of ours can fail
       any more after "g" */
    struct rlimit want[RLIM_NLIMITS];
    char lmsg[1 + sizeof(want)];
    ssize_t n;
    while ((n = recv(fds[3], lmsg, sizeof(lmsg), 0)) < 0 && errno == EINTR) {
    }
    if (n != (ssize_t)sizeof(lmsg) || lmsg[0] != 'L') _exit(127);
    memcpy(want, lmsg + 1, sizeof(want));
    for (int res = 0; res < RLIM_NLIMITS; res++) {
        struct rlimit got;
        if (setrlimit(res, &want[res]) != 0 || getrlimit(res, &got) != 0 ||
            got.rlim_cur != want[res].rlim_cur || got.rlim_max != want[res].rlim_max)
            _exit(127);
    }
    if (send(fds[3], "r", 1, MSG_NOSIGNAL) != 1) _exit(127);
    char go = 0;
    while ((n = read(fds[3], &go, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1 || go != 'g') _exit(127);
    if (setsid() < 0 || dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0)
        _exit(127);
    /* a cold test holds fds 0-2 only; CPython keeps none open after initialisation */
    if (syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
        for (int fd = 3; fd < 65536; fd++) close(fd);
    }
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    exit(Py_RunMain());
}

static void serve(void) {
    say("R");
    for (;;) {
        int fds[4];
        int r = receive_request(fds);
        if (r == 0) _exit(0);
        if (r < 0) {
            say("E22");
            continue;
        }
        int pp[2];
        if (pipe2(pp, O_CLOEXEC) != 0) {
            char m[32];
            snprintf(m, sizeof(m), "E%d", errno);
            for (int i = 0; i < 4; i++) close(fds[i]);
            say(m);
            continue;
        }
        PyOS_BeforeFork();
        pid_t a = fork();
        if (a == 0) {
            pid_t b = fork();
            if (b == 0) {
                close(pp[0]);
                close(pp[1]);
                run_test(fds);
            }
            int e = b < 0 ? errno : 0;
            pid_t word = b < 0 ? -e : b;
            if (write(pp[1], &word, sizeof(word)) != sizeof(word)) _exit(1);
            _exit(0);
        }
        int fork_errno = a < 0 ? errno : 0;
        PyOS_AfterFork_Parent();
        for (int i = 0; i < 4; i++) close(fds[i]);
        close(pp[1]);
        pid_t word = -(fork_errno ? fork_errno : EIO);
        if (a > 0) {
            int st;
            while (waitpid(a, &st, 0) < 0 && errno == EINTR) {
            }
            pid_t got = 0;
            ssize_t n;
            while ((n = read(pp[0], &got, sizeof(got))) < 0 && errno == EINTR) {
            }
            if (n == sizeof(got)) word = got;
        }
        close(pp[0]);
        char m[32];
        if (word > 0) snprintf(m, sizeof(m), "P%d", (int)word);
        else snprintf(m, sizeof(m), "E%d", (int)-word);
        say(m);
    }
}

int main(int argc, char **argv) {
    if (!is_control_socket(CTL_FD)) {
        fprintf(stderr, "zygote: fd %d is not the sandbox's control socket\n", CTL_FD);
        return 127;
    }
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (fcntl(CTL_FD, F_SETFD, FD_CLOEXEC) != 0) return 127;
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
    serve();
    return 0;
}
