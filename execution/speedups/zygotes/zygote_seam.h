/*
 * The script's first open, as the zygotes that stop their interpreter at or after it see it
 * (PyPy's, pypy_zygote.c: its seam; Ruby's, ruby_zygote.c: the descriptor it keeps an eye on
 * until its seam): the C library's functions that open a file by name, defined by the zygote
 * binary itself (linked -rdynamic, so the interpreter's library calls them), pass every open
 * through but the first one of the script, where they call the zygote's `at_script_open()`
 * before it (PyPy: serve the sandbox's init there and return in each forked test process only,
 * whose open then proceeds as a cold start's) and `script_opened()` after.
 *
 * The script is the command's last word, as argv names it or made absolute against the cwd. It
 * must be a regular file when the zygote starts (an interpreter may run a folder without opening
 * it), and a test starts warm only while it still is one (a program may replace it between
 * tests): the interpreter's one look at the script before its open is a stat, whose answer the
 * test's open then holds to.
 */
#ifndef CODE_EVAL_ZYGOTE_SEAM_H
#define CODE_EVAL_ZYGOTE_SEAM_H

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "zygote_protocol.h"

/* the zygote's own: what happens at the script's first open (PyPy: the seam, serve init and
   return in B only) and with the descriptor it got (-1: the open failed) */
static void at_script_open(void);
static void script_opened(int fd);

/* the script as argv names it and made absolute; `armed` until its first open */
static const char *script = NULL;
static char script_abs[PATH_MAX];
static int armed = 0;

static int count_entries(const char *dir, int *n) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    *n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.') (*n)++;
    }
    closedir(d);
    return 0;
}

static int script_is_file(void) {
    struct stat st;
    return stat(script_abs, &st) == 0 && S_ISREG(st.st_mode);
}

/* B's check before "r" (zygote_hooks.unready) */
static int script_changed(void) { return !script_is_file(); }

/* at the seam: `threads` threads in the process and exactly `fds` descriptors (opendir's own
   one aside), else a message and exit 127 (no "R": every test runs cold) */
static void seam_expect(const char *who, int threads, int fds) {
    int t = 0, f = 0;
    if (count_entries("/proc/self/task", &t) != 0 || t != threads) {
        fprintf(stderr, "%s: %d threads at the script's open\n", who, t);
        _exit(127);
    }
    if (count_entries("/proc/self/fd", &f) != 0 || f != fds + 1) {
        fprintf(stderr, "%s: %d descriptors at the script's open\n", who, f - 1);
        _exit(127);
    }
}

/* 1 when `path` (relative to `dirfd`) is the script and this is its first open: disarmed, and
   at_script_open() called */
static int gate(int dirfd, const char *path) {
    if (!armed || !path) return 0;
    if (strcmp(path, script) == 0 ? (path[0] == '/' || dirfd == AT_FDCWD)
                                  : strcmp(path, script_abs) == 0) {
        armed = 0;
        at_script_open();
        return 1;
    }
    return 0;
}

/* the mode argument is there when the C library's own rule says so (O_CREAT, O_TMPFILE) */
#define OPEN_MODE(flags, mode)                                                   \
    do {                                                                         \
        if (((flags) & O_CREAT) || ((flags) & __O_TMPFILE) == __O_TMPFILE) {     \
            va_list ap;                                                          \
            va_start(ap, flags);                                                 \
            mode = va_arg(ap, mode_t);                                           \
            va_end(ap);                                                          \
        }                                                                        \
    } while (0)

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef FILE *(*fopen_fn)(const char *, const char *);

static void *next(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) _exit(127);
    return f;
}

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    int hit = gate(AT_FDCWD, path);
    static open_fn real;
    if (!real) real = (open_fn)next("open");
    int fd = real(path, flags, mode);
    if (hit) script_opened(fd);
    return fd;
}

int open64(const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    int hit = gate(AT_FDCWD, path);
    static open_fn real;
    if (!real) real = (open_fn)next("open64");
    int fd = real(path, flags, mode);
    if (hit) script_opened(fd);
    return fd;
}

int openat(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    int hit = gate(dirfd, path);
    static openat_fn real;
    if (!real) real = (openat_fn)next("openat");
    int fd = real(dirfd, path, flags, mode);
    if (hit) script_opened(fd);
    return fd;
}

int openat64(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    int hit = gate(dirfd, path);
    static openat_fn real;
    if (!real) real = (openat_fn)next("openat64");
    int fd = real(dirfd, path, flags, mode);
    if (hit) script_opened(fd);
    return fd;
}

FILE *fopen(const char *path, const char *how) {
    int hit = gate(AT_FDCWD, path);
    static fopen_fn real;
    if (!real) real = (fopen_fn)next("fopen");
    FILE *f = real(path, how);
    if (hit) script_opened(f ? fileno(f) : -1);
    return f;
}

FILE *fopen64(const char *path, const char *how) {
    int hit = gate(AT_FDCWD, path);
    static fopen_fn real;
    if (!real) real = (fopen_fn)next("fopen64");
    FILE *f = real(path, how);
    if (hit) script_opened(f ? fileno(f) : -1);
    return f;
}

/* The script from argv (its last word, ending in `ext`, never an option), made absolute; a
   regular file, else a message and 127. Then armed: 0. */
static int seam_arm(const char *who, int argc, char **argv, const char *ext) {
    script = argc > 1 ? argv[argc - 1] : "";
    size_t len = strlen(script), elen = strlen(ext);
    if (len <= elen || script[0] == '-' || strcmp(script + len - elen, ext) != 0) {
        fprintf(stderr, "%s: the command does not end with a script\n", who);
        return 127;
    }
    if (script[0] == '/') {
        if (len >= sizeof(script_abs)) return 127;
        memcpy(script_abs, script, len + 1);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)) ||
            snprintf(script_abs, sizeof(script_abs), "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "",
                     script) >= (int)sizeof(script_abs))
            return 127;
    }
    if (!script_is_file()) {
        fprintf(stderr, "%s: %s is not a regular file\n", who, script);
        return 127;
    }
    armed = 1;
    return 0;
}

#endif
