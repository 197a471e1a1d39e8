/*
 * Ruby zygote: `ruby --disable-gems -rPRELUDE ARGS... SCRIPT` split at the end of Ruby's start.
 *
 * Debian's /usr/bin/ruby is Ruby's own main: setlocale(LC_CTYPE, ""), ruby_sysinit,
 * ruby_init_stack, ruby_init, then ruby_run_node(ruby_options(argc, argv)), where ruby_options
 * parses the command line, sets up the load path, opens the script, reads its first chunk (for
 * the shebang line), loads the `-r` libraries, then reads the rest and compiles it. This program
 * is that same main with the SAME argv, linked with the same libruby. The seam is the prelude's
 * last statement (startup.py), a lookup of SEAM_VARIABLE, whose getenv this program defines:
 * there Ruby has done exactly what a cold start has done by then, holds its GVL, and the zygote
 * serves the sandbox's init (zygote_protocol.h); each test process B returns from that lookup,
 * reads the rest of the script, compiles and runs it, runs its at_exit handlers and exits as
 * cold. None of our code runs as Ruby, and nothing of a program runs in the zygote.
 *
 * Why: Ruby's start and the prelude's libraries (about 27 ms of a 33 ms test) become a fork.
 *
 * The contract with init is the CPython zygote's (zygote.c's header comment), the script's open
 * the PyPy zygote's (zygote_seam.h), with these differences:
 *   - before the seam the zygote keeps the bytes of the script's first read; a second read of
 *     the script before the seam (a command without the prelude) ends the zygote before "R".
 *   - Ruby makes two eventfds at start (its signal wake-up, fds 3 and 4 when cold): the zygote
 *     moves init's socket from fd 3 to fd 64 or above before Ruby starts, so that Ruby's are 3
 *     and 4 and the script 5, as cold. At the seam the zygote checks it is the one thread and
 *     holds fds 0-5 and the socket only, fds 3 and 4 eventfds and 5 the script.
 *   - the zygote makes A and A makes B with Ruby's own Process.fork (called from C, as a
 *     program's `fork` calls it): Ruby's child bookkeeping (its timer and eventfds made anew, so
 *     that B shares no descriptor with the zygote; the random seed drawn anew, as a cold start
 *     draws one) is not exported, and holds only in a child of a process that did it too.
 *   - before "r", B opens the script afresh: still a regular file whose first bytes are those
 *     the zygote read (else exit 127: the test runs cold), put at fd 5 and the same offset, so
 *     Ruby reads the rest of the script as it is now, with no file offset shared with the zygote.
 *     B keeps fds 0-5 and closes every other.
 *   - signals: as the PyPy zygote (all blocked from the seam on in the zygote, B takes the mask
 *     of the seam). Process.fork blocks and restores them itself around fork(2).
 */
#define _GNU_SOURCE 1
#include <locale.h>
#include <ruby.h>

#include "zygote_seam.h"

/* init's socket goes here or above, clear of the descriptors Ruby makes at start */
#define CTL_HIGH 64
/* B keeps fds 0-5: stdio, Ruby's eventfds (3 and 4, its own, made anew by Process.fork) and
   the script (5, opened anew by B) */
#define RUBY_FDS 6
/* what the prelude's last statement looks up (never set): ruby.py passes startup.py's
   name, so the two cannot differ */
#ifndef SEAM_VARIABLE
#error "build with -DSEAM_VARIABLE=\"NAME\" (ruby.py does)"
#endif

static int is_eventfd(int fd) {
    char link[64], want[] = "anon_inode:[eventfd]";
    char path[32];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    return n == (ssize_t)strlen(want) && memcmp(link, want, (size_t)n) == 0;
}

static VALUE call_fork(VALUE unused) {
    (void)unused;
    return rb_funcall(rb_mProcess, rb_intern("fork"), 0);
}

/* Process.fork: 0 in B, B's pid in A, -1 (errno EAGAIN) when it raised */
static pid_t ruby_fork(void) {
    int state = 0;
    VALUE pid = rb_protect(call_fork, Qnil, &state);
    if (state) {
        rb_set_errinfo(Qnil);
        errno = EAGAIN;
        return -1;
    }
    if (NIL_P(pid)) return 0;
    return FIXNUM_P(pid) ? (pid_t)FIX2LONG(pid) : -1;
}

/* The script's first open and first read, in the zygote before the seam (Ruby reads the
   script's first chunk, for its shebang line, before it loads the `-r` libraries) */
static int script_fd = -1;
static size_t first_asked = 0;
static ssize_t first_got = -1;
static char first_chunk[1 << 16];
static int seam_done = 0;

static void at_script_open(void) {}

static void script_opened(int fd) { script_fd = fd; }

typedef ssize_t (*read_fn)(int, void *, size_t);
typedef char *(*getenv_fn)(const char *);

/* Ruby reads the script here: the first read is kept (B must see the same bytes), and a second
   one before the seam means the command has no prelude to stop at: the zygote ends there, before
   anything of the program could run in it. */
ssize_t read(int fd, void *buf, size_t count) {
    static read_fn real;
    if (!real) real = (read_fn)next("read");
    if (seam_done || fd != script_fd || script_fd < 0) return real(fd, buf, count);
    if (first_got >= 0 || count > sizeof(first_chunk)) {
        fprintf(stderr, "ruby zygote: the script is read on before the seam\n");
        _exit(127);
    }
    ssize_t n = real(fd, buf, count);
    if (n >= 0) {
        first_asked = count;
        first_got = n;
        memcpy(first_chunk, buf, (size_t)n);
    }
    return n;
}

/* B, before it says "r": the script is still a regular file and a fresh open of it reads the very
   bytes the zygote's first read got (so a cold start's first read would have got them too); that
   fresh open then replaces the zygote's descriptor, at the same number and offset, so that Ruby
   reads the rest of the script as it is now and shares no file offset with the zygote. */
static int script_differs(void) {
    if (script_changed()) return 1;
    int fd = openat(AT_FDCWD, script_abs, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;
    static char now[sizeof(first_chunk)];
    ssize_t n = pread(fd, now, first_asked, 0);
    int same = n == first_got && memcmp(now, first_chunk, (size_t)n) == 0;
    if (!same || lseek(fd, n, SEEK_SET) != n || dup3(fd, script_fd, O_CLOEXEC) != script_fd) {
        close(fd);
        return 1;
    }
    close(fd);
    return 0;
}

/* The seam, where the prelude (startup.py) looks up SEAM_VARIABLE, its last statement: Ruby has
   opened the script and read its first chunk, loaded the `-r` libraries and holds its GVL, as a
   program's own `fork` would. One thread, fds 0-5 (3 and 4 Ruby's eventfds, 5 the script) and
   init's socket, every signal blocked from here on, then serve. Returns in B only. */
static void seam(void) {
    seam_done = 1;
    sigset_t all, cold_mask;
    sigfillset(&all);
    if (sigprocmask(SIG_SETMASK, &all, &cold_mask) != 0) _exit(127);
    seam_expect("ruby zygote", 1, RUBY_FDS + 1);
    if (!is_eventfd(3) || !is_eventfd(4) || script_fd != RUBY_FDS - 1 || first_got < 0 ||
        zp_ctl < CTL_HIGH) {
        fprintf(stderr, "ruby zygote: fds 3-5 are not Ruby's eventfds and the script\n");
        _exit(127);
    }
    static const struct zygote_hooks hooks = {NULL, NULL, NULL, script_differs, ruby_fork,
                                              RUBY_FDS};
    zp_serve(&hooks, &cold_mask);
}

char *getenv(const char *name) {
    static getenv_fn real;
    if (!real) real = (getenv_fn)next("getenv");
    if (!seam_done && script_fd >= 0 && strcmp(name, SEAM_VARIABLE) == 0) seam();
    return real(name);
}

int main(int argc, char **argv) {
    int bad = zp_start("ruby zygote", CTL_HIGH, argv[0]);
    if (!bad) bad = seam_arm("ruby zygote", argc, argv, ".rb");
    if (bad) return bad;
    /* /usr/bin/ruby's main, step by step */
    setlocale(LC_CTYPE, "");
    ruby_sysinit(&argc, &argv);
    {
        RUBY_INIT_STACK;
        ruby_init();
        return ruby_run_node(ruby_options(argc, argv));
    }
}
