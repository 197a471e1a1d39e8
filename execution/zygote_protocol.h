/*
 * The zygotes' side of the sandbox init's protocol (launcher.c, frame words Z and W), shared by
 * the CPython zygote (zygote.c) and the PyPy zygote (pypy_zygote.c). The contract is written
 * once, in zygote.c's header comment; this file is its code: the control socket on fd 3, the
 * requests ("F" and four descriptors), the A/B double fork, B's "L"/"r"/"g" exchange and B
 * made the cold process (session, stdio, no other descriptor, dumpable, its signal mask).
 *
 * The interpreter's own fork bookkeeping is the caller's (struct zygote_hooks).
 */
#ifndef CODE_EVAL_ZYGOTE_PROTOCOL_H
#define CODE_EVAL_ZYGOTE_PROTOCOL_H

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

/* init passes the control socket as fd 3; a zygote whose interpreter opens descriptors of its
   own at start (Ruby: two eventfds, fds 3 and 4 when cold) moves it above them (zp_start) */
#define CTL_FD 3
static int zp_ctl = CTL_FD;

/* what the interpreter does around a fork, and what B checks before it says "r" (nonzero: the
   test cannot start as cold, B exits 127); each may be NULL. `fork_test`: how the zygote makes
   A and A makes B (NULL: fork(2); Ruby: its own Process.fork, whose bookkeeping is not exported
   and holds only in a child of a process that did its own), -1 and errno on failure.
   `first_closed`: B keeps the descriptors below it (0 or 3: stdio only), those the interpreter
   made at start and holds at the seam as a cold start does. */
struct zygote_hooks {
    void (*before_fork)(void);
    void (*after_fork_parent)(void);
    void (*after_fork_child)(void);
    int (*unready)(void);
    pid_t (*fork_test)(void);
    int first_closed;
};

static int zp_is_control_socket(int fd) {
    int type = 0, domain = 0;
    socklen_t len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET) return 0;
    len = sizeof(domain);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_UNIX) return 0;
    return 1;
}

/* The zygote's first steps, before the interpreter starts: fd 3 must be init's control socket
   (else 127 and a message: a zygote never runs a script by itself), non-dumpable, fd 3 not
   inherited by anything the interpreter may execute; with `move_to` above 3 the socket moves to
   the lowest free descriptor from there and fd 3 is free again. 0, or the exit code. */
static int zp_start(const char *who, int move_to) {
    if (!zp_is_control_socket(CTL_FD)) {
        fprintf(stderr, "%s: fd %d is not the sandbox's control socket\n", who, CTL_FD);
        return 127;
    }
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (move_to > CTL_FD) {
        zp_ctl = fcntl(CTL_FD, F_DUPFD_CLOEXEC, move_to);
        if (zp_ctl < 0 || close(CTL_FD) != 0) return 127;
    }
    if (fcntl(zp_ctl, F_SETFD, FD_CLOEXEC) != 0) return 127;
    return 0;
}

static void zp_say(const char *msg) {
    while (send(zp_ctl, msg, strlen(msg), MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
}

/* One request: "F" and exactly four descriptors, else -1 (the request is refused). 0 on EOF. */
static int zp_receive_request(int fds[4]) {
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
    while ((n = recvmsg(zp_ctl, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (n <= 0) return n == 0 ? 0 : -1;
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

/* B: wait for init's go and become the cold process: the cold child's rlimits ("L", each set and
   read back, the caller's check, then "r": nothing of ours can fail after "g"), a new session, the test's
   stdio on 0/1/2, no other descriptor, dumpable again (as after a cold exec), signal mask
   `mask`. Anything but "g": exit 127 without running anything. */
static void zp_become_test(const struct zygote_hooks *hooks, const int fds[4],
                           const sigset_t *mask) {
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
    if (hooks->unready && hooks->unready()) _exit(127);
    if (send(fds[3], "r", 1, MSG_NOSIGNAL) != 1) _exit(127);
    char go = 0;
    while ((n = read(fds[3], &go, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1 || go != 'g') _exit(127);
    if (setsid() < 0 || dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0)
        _exit(127);
    /* a cold test holds fds 0-2 and those its interpreter made at start (hooks->first_closed) */
    unsigned first = hooks->first_closed > 3 ? (unsigned)hooks->first_closed : 3U;
    if (syscall(SYS_close_range, first, ~0U, 0U) != 0) {
        for (int fd = (int)first; fd < 65536; fd++) close(fd);
    }
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    sigprocmask(SIG_SETMASK, mask, NULL);
}

/* Serve init: "R", then per request fork A, A forks B and exits (B's parent is init), answer
   "P<pid of B>" or "E<errno>". Returns in B only, made the cold process (zp_become_test); the
   zygote itself exits 0 at EOF on fd 3. */
static void zp_serve(const struct zygote_hooks *hooks, const sigset_t *test_mask) {
    zp_say("R");
    for (;;) {
        int fds[4];
        int r = zp_receive_request(fds);
        if (r == 0) _exit(0);
        if (r < 0) {
            zp_say("E22");
            continue;
        }
        int pp[2];
        if (pipe2(pp, O_CLOEXEC) != 0) {
            char m[32];
            snprintf(m, sizeof(m), "E%d", errno);
            for (int i = 0; i < 4; i++) close(fds[i]);
            zp_say(m);
            continue;
        }
        if (hooks->before_fork) hooks->before_fork();
        pid_t a = hooks->fork_test ? hooks->fork_test() : fork();
        if (a == 0) {
            pid_t b = hooks->fork_test ? hooks->fork_test() : fork();
            if (b == 0) {
                close(pp[0]);
                close(pp[1]);
                if (hooks->after_fork_child) hooks->after_fork_child();
                zp_become_test(hooks, fds, test_mask);
                return;
            }
            int e = b < 0 ? errno : 0;
            pid_t word = b < 0 ? -e : b;
            if (write(pp[1], &word, sizeof(word)) != sizeof(word)) _exit(1);
            _exit(0);
        }
        int fork_errno = a < 0 ? errno : 0;
        if (hooks->after_fork_parent) hooks->after_fork_parent();
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
        zp_say(m);
    }
}

#endif
