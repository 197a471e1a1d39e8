/*
 * The zygotes' side of the sandbox init's protocol (sandbox/launcher.c, frame words Z and W),
 * shared by the CPython zygote (cpython_zygote.c), the PyPy zygote (pypy_zygote.c) and the Ruby
 * zygote (ruby_zygote.c). The contract is written once, in cpython_zygote.c's header comment;
 * this file is its code: the control socket on fd 3, the
 * requests ("F" and four descriptors), the A/B double fork, B's "L"/"r"/"g" exchange and B
 * made the cold process (session, stdio, no other descriptor, dumpable, its signal mask).
 *
 * The interpreter's own fork bookkeeping is the caller's (struct zygote_hooks).
 */
#ifndef CODE_EVAL_ZYGOTE_PROTOCOL_H
#define CODE_EVAL_ZYGOTE_PROTOCOL_H

#include <dlfcn.h>
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
#include <sys/time.h>
#include <sys/times.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
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
   the lowest free descriptor from there and fd 3 is free again. The process's name
   (/proc/self/comm, PR_GET_NAME) is the one an exec of the cold command's `argv0` gives (the
   kernel names a process after the last part of the path it executes, 15 bytes at most), so
   that the zygote and every test it forks carry the cold name, not the zygote file's.
   0, or the exit code. */
static int zp_start(const char *who, int move_to, const char *argv0) {
    if (!zp_is_control_socket(CTL_FD)) {
        fprintf(stderr, "%s: fd %d is not the sandbox's control socket\n", who, CTL_FD);
        return 127;
    }
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (!argv0) argv0 = "";
    const char *base = strrchr(argv0, '/');
    char name[16];
    snprintf(name, sizeof(name), "%s", base ? base + 1 : argv0);
    if (prctl(PR_SET_NAME, name, 0, 0, 0) != 0) return 127;
    if (move_to > CTL_FD) {
        zp_ctl = fcntl(CTL_FD, F_DUPFD_CLOEXEC, move_to);
        if (zp_ctl < 0 || close(CTL_FD) != 0) return 127;
    }
    if (fcntl(zp_ctl, F_SETFD, FD_CLOEXEC) != 0) return 127;
    return 0;
}

/* A test's own CPU clocks, as the cold process reads them. A cold process's CPU clock counts the
   interpreter's start; a forked test's kernel clock starts at its fork, while the sandbox
   charges it the zygote's start-up as well (a time limit keeps its meaning). So that a program
   pacing itself by its own clock sees what it would see cold, the zygote defines the C
   library's CPU clock readers (clock_gettime, clock, getrusage, times: the interpreter's library
   and its extension modules call them, the binary being linked to export its symbols) and, in
   the test process only (B, not its children: a cold child's clock starts at its fork too),
   adds to the process's and its main thread's figures what the zygote had used when it began
   to serve. Readings by other means (a raw system call, the C library reached by its own
   handle, /proc/self/stat) start at the fork: README, "What a program can tell". */
static pid_t zc_test = 0;         /* B's pid once it is the test; 0 in the zygote and in A */
static struct timespec zc_sched;  /* the zygote's process CPU (scheduler clock) when serving */
static struct timespec zc_thread; /* its main thread's */
static struct rusage zc_self, zc_main;
static struct tms zc_tms;

typedef int (*zc_gettime_fn)(clockid_t, struct timespec *);
typedef int (*zc_rusage_fn)(int, struct rusage *);
typedef clock_t (*zc_times_fn)(struct tms *);

static void *zc_real(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) _exit(127); /* the C library always has them */
    return f;
}

static int zc_gettime(clockid_t id, struct timespec *ts) {
    static zc_gettime_fn real;
    if (!real) real = (zc_gettime_fn)zc_real("clock_gettime");
    return real(id, ts);
}

static void zc_add_ts(struct timespec *ts, const struct timespec *off) {
    ts->tv_sec += off->tv_sec;
    ts->tv_nsec += off->tv_nsec;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void zc_add_tv(struct timeval *tv, const struct timeval *off) {
    tv->tv_sec += off->tv_sec;
    tv->tv_usec += off->tv_usec;
    if (tv->tv_usec >= 1000000L) {
        tv->tv_sec++;
        tv->tv_usec -= 1000000L;
    }
}

static struct timespec zc_ts_of(const struct timeval *a, const struct timeval *b) {
    struct timespec t = {a->tv_sec, a->tv_usec * 1000L};
    if (b) {
        struct timespec u = {b->tv_sec, b->tv_usec * 1000L};
        zc_add_ts(&t, &u);
    }
    return t;
}

/* the zygote, as it begins to serve: what its process and main thread have used */
static void zc_note_start(void) {
    static zc_rusage_fn ru;
    static zc_times_fn tm;
    if (!ru) ru = (zc_rusage_fn)zc_real("getrusage");
    if (!tm) tm = (zc_times_fn)zc_real("times");
    if (zc_gettime(CLOCK_PROCESS_CPUTIME_ID, &zc_sched) != 0 ||
        zc_gettime(CLOCK_THREAD_CPUTIME_ID, &zc_thread) != 0 || ru(RUSAGE_SELF, &zc_self) != 0 ||
        ru(RUSAGE_THREAD, &zc_main) != 0 || tm(&zc_tms) == (clock_t)-1)
        _exit(127);
}

/* in the test process: 'p' for a clock of the whole process, 't' of its main thread, else 0 */
static int zc_mine(int process, pid_t who) {
    if (!zc_test || getpid() != zc_test) return 0;
    if (process) return who == 0 || who == zc_test ? 'p' : 0;
    return (who == 0 ? gettid() : who) == zc_test ? 't' : 0;
}

/* the offset of clock `id` in the test process; zero for every other clock and process */
static struct timespec zc_offset(clockid_t id) {
    struct timespec none = {0, 0};
    int which = 0, kind = 2; /* the kernel's CPUCLOCK_SCHED */
    if (id == CLOCK_PROCESS_CPUTIME_ID) which = zc_mine(1, 0);
    else if (id == CLOCK_THREAD_CPUTIME_ID) which = zc_mine(0, 0);
    else if (id < 0 && (id & 3) != 3) { /* a clock of a pid or tid (clock_getcpuclockid) */
        pid_t who = (pid_t)~(id >> 3);
        which = zc_mine(!(id & 4), who);
        kind = id & 3;
    }
    if (!which) return none;
    const struct rusage *ru = which == 'p' ? &zc_self : &zc_main;
    if (kind == 2) return which == 'p' ? zc_sched : zc_thread;
    return zc_ts_of(&ru->ru_utime, kind == 0 ? &ru->ru_stime : NULL); /* PROF, VIRT */
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    int r = zc_gettime(id, ts);
    if (r == 0) {
        struct timespec off = zc_offset(id);
        zc_add_ts(ts, &off);
    }
    return r;
}

clock_t clock(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return (clock_t)-1;
    return (clock_t)(ts.tv_sec * CLOCKS_PER_SEC + ts.tv_nsec / (1000000000L / CLOCKS_PER_SEC));
}

int getrusage(int who, struct rusage *usage) {
    static zc_rusage_fn real;
    if (!real) real = (zc_rusage_fn)zc_real("getrusage");
    int r = real(who, usage);
    int which = who == RUSAGE_SELF ? zc_mine(1, 0) : who == RUSAGE_THREAD ? zc_mine(0, 0) : 0;
    if (r == 0 && which) {
        const struct rusage *off = which == 'p' ? &zc_self : &zc_main;
        zc_add_tv(&usage->ru_utime, &off->ru_utime);
        zc_add_tv(&usage->ru_stime, &off->ru_stime);
        usage->ru_minflt += off->ru_minflt;
        usage->ru_majflt += off->ru_majflt;
        usage->ru_inblock += off->ru_inblock;
        usage->ru_oublock += off->ru_oublock;
        usage->ru_nvcsw += off->ru_nvcsw;
        usage->ru_nivcsw += off->ru_nivcsw;
    }
    return r;
}

clock_t times(struct tms *buf) {
    static zc_times_fn real;
    if (!real) real = (zc_times_fn)zc_real("times");
    clock_t r = real(buf);
    if (r != (clock_t)-1 && zc_mine(1, 0)) {
        buf->tms_utime += zc_tms.tms_utime;
        buf->tms_stime += zc_tms.tms_stime;
    }
    return r;
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
    zc_test = getpid();
    sigprocmask(SIG_SETMASK, mask, NULL);
}

/* Serve init: "R", then per request fork A, A forks B and exits (B's parent is init), answer
   "P<pid of B>" or "E<errno>". Returns in B only, made the cold process (zp_become_test); the
   zygote itself exits 0 at EOF on fd 3. */
static void zp_serve(const struct zygote_hooks *hooks, const sigset_t *test_mask) {
    zc_note_start();
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
            /* A never talks to init; closed before B is made, so that B's descriptor table is
               sized by the descriptors it holds, as a cold process's (Ruby's zygote holds the
               socket at fd 64 or above, which a cold process never reaches: /proc's FDSize) */
            close(zp_ctl);
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
