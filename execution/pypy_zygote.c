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
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "zygote_protocol.h"

int pypy_main_startup(int argc, char **argv);

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

/* PyPy's one look at the script before its first open is a stat (a regular file: the open
   follows; a folder would be run as a package without one). The zygote starts only with a
   regular file there, and B only when it still is one (a program may replace it between tests):
   B then goes on as a cold start does after that stat. */
static int script_is_file(void) {
    struct stat st;
    return stat(script_abs, &st) == 0 && S_ISREG(st.st_mode);
}

static int script_changed(void) { return !script_is_file(); }

/* The seam: one thread, fds 0-3 only (opendir's own descriptor aside), then serve. Returns in B
   only, which then opens the script as the cold interpreter does. */
static void seam(void) {
    armed = 0;
    sigset_t all, cold_mask;
    sigfillset(&all);
    if (sigprocmask(SIG_SETMASK, &all, &cold_mask) != 0) _exit(127);
    int threads = 0, fds = 0;
    if (count_entries("/proc/self/task", &threads) != 0 || threads != 1) {
        fprintf(stderr, "pypy zygote: %d threads at the script's open\n", threads);
        _exit(127);
    }
    if (count_entries("/proc/self/fd", &fds) != 0 || fds != 5) {
        fprintf(stderr, "pypy zygote: %d descriptors at the script's open\n", fds - 1);
        _exit(127);
    }
    static const struct zygote_hooks hooks = {NULL, NULL, NULL, script_changed};
    zp_serve(&hooks, &cold_mask);
}

static void gate(int dirfd, const char *path) {
    if (!armed || !path) return;
    if (strcmp(path, script) == 0 ? (path[0] == '/' || dirfd == AT_FDCWD)
                                  : strcmp(path, script_abs) == 0)
        seam();
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
    gate(AT_FDCWD, path);
    static open_fn real;
    if (!real) real = (open_fn)next("open");
    return real(path, flags, mode);
}

int open64(const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    gate(AT_FDCWD, path);
    static open_fn real;
    if (!real) real = (open_fn)next("open64");
    return real(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    gate(dirfd, path);
    static openat_fn real;
    if (!real) real = (openat_fn)next("openat");
    return real(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...) {
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    gate(dirfd, path);
    static openat_fn real;
    if (!real) real = (openat_fn)next("openat64");
    return real(dirfd, path, flags, mode);
}

FILE *fopen(const char *path, const char *how) {
    gate(AT_FDCWD, path);
    static fopen_fn real;
    if (!real) real = (fopen_fn)next("fopen");
    return real(path, how);
}

FILE *fopen64(const char *path, const char *how) {
    gate(AT_FDCWD, path);
    static fopen_fn real;
    if (!real) real = (fopen_fn)next("fopen64");
    return real(path, how);
}

int main(int argc, char **argv) {
    int bad = zp_start("pypy zygote");
    if (bad) return bad;
    /* the script: the command's last word, a file name (never an option) */
    script = argc > 1 ? argv[argc - 1] : "";
    size_t len = strlen(script);
    if (len < 4 || script[0] == '-' || strcmp(script + len - 3, ".py") != 0) {
        fprintf(stderr, "pypy zygote: the command does not end with a script\n");
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
        fprintf(stderr, "pypy zygote: %s is not a regular file\n", script);
        return 127;
    }
    armed = 1;
    return pypy_main_startup(argc, argv);
}
