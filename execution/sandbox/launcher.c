/*
 * Sandbox launcher: builds one sandbox (namespaces, private root, seccomp filter) per program,
 * then runs each command sent to it in a fresh process inside that sandbox.
 *
 * Why a small C program: the per-test cost must stay near a bare fork+exec, which rules out
 * building namespaces or cgroups per test, and pre-exec work (rlimits, uid switch, seccomp) must
 * not run in the multi-threaded Python engine.
 *
 * Life cycle (root, the default):
 *   1. unshare pid/net/ipc/uts(/cgroup) namespaces; fork; the child is pid 1 ("init"). The
 *      outer process only waits for init, then removes the sandbox's cgroups and temporary files
 *      (so a SIGKILLed engine leaves nothing behind).
 *   2. init unshares its own mount namespace and builds a new root on a tmpfs: read-only binds
 *      of the toolchain paths and read-only overlay views of folders whose bind would name
 *      where they live (--view), read-write binds, a size-limited tmpfs work dir (/box) owned by
 *      the sandbox uid, private /tmp, /dev, /proc; masks secret files; pivot_root; the old root
 *      is detached.
 *   3. init reads commands from fd 0 and answers one line per command on fd 1. It moves itself
 *      into the command's cgroup set when the purpose changes (compile -> run), then forks a
 *      child that inherits that cgroup, starts a new session, applies rlimits, drops every
 *      capability, switches to the unprivileged uid, loads the seccomp filter and execs. init
 *      (non-dumpable, OOM-exempt) waits on a signalfd (no busy polling) with a timeout derived
 *      from the wall and CPU budgets; the CPU budget is checked against the cgroup's CPU
 *      counter (all threads and children; without cgroups, init samples every process of
 *      its pid namespace: see "rootless accounting" below). When the
 *      main process ends, every other process of the sandbox is SIGKILLed (kill(-1) from pid 1
 *      of the namespace; after a test forked from the zygote, every process of the run cgroup
 *      set but the zygote) and reaped, so nothing survives a test.
 *   4. EOF on fd 0 ends init, which tears the whole pid namespace down.
 * Without root, a user namespace is created first (uid switch impossible: reported to Python).
 *
 * Contract with the engine (command.py), the one place it is written down:
 *
 *   Invocation: no arguments. argv[0] is a neutral name ("sandbox-init"); it is all that
 *   /proc/1/cmdline shows inside, so no host path travels on the command line. Any argument is
 *   a usage error (exit 2). The environment is PATH and LANG only.
 *
 *   Framing (fd 0): every message is "<decimal length>\n" followed by that many bytes of
 *   NUL-terminated words (at most 64 MiB).
 *   1. The first frame is the configuration, one word per flag or value:
 *        --io DIR               host dir of the per-command stdin/stdout/stderr files (required)
 *        --ncpu N               CPUs of the machine (CPU budget -> earliest possible timeout)
 *        --seccomp              load the seccomp filter in every command (HAVE_SECCOMP builds)
 *        --ns --root DIR        build the namespaces and the private root in DIR (empty dir)
 *        --userns               also a user namespace (rootless: one uid mapped)
 *        --uid N --gid N        run commands as this uid/gid (root only)
 *        --box --box-mb N       a size-limited tmpfs work dir at /box owned by the uid
 *        --ro PATH / --rw PATH  bind PATH at the same place, read-only / read-write (repeatable)
 *        --ro1 PATH             --ro without the mounts below PATH
 *        --view SRC DST         a read-only overlay of the directory SRC (its own mount, no
 *                               mounts below it) at DST: its mountinfo line shows "/" as root,
 *                               "lowerdir=ro:empty", nothing of where SRC lives (repeatable)
 *        (--ro, --ro1 and --view are applied in the order given, before --rw)
 *        --mask PATH            hide PATH (file: /dev/null bind, dir: empty read-only tmpfs)
 *        --copy HOST:NAME       copy the host file HOST to /box/NAME before anything runs
 *        --cg SET:FILE          cgroup.procs file of cgroup set SET (up to 4 per set)
 *        --cgcpu SET:FILE       v1 cpuacct.usage of set SET; --cgcpu2 SET:FILE: v2 cpu.stat
 *        --cleanup-cgroup DIR   rmdir'ed by the outer process when the sandbox ends (repeatable)
 *        --cleanup-tree DIR     removed by the outer process when the sandbox ends
 *        --test-fail-stage STAGE:SET   only in the tests' build (-DTEST_HOOKS), see hook_fail
 *      Without --ns the commands run as plain processes (the engine asks for that only under
 *      its best-effort policy, on a host its start-up probe found without namespaces).
 *   2. Every later frame is one command; each word starts with a type letter: A argv element,
 *      E environment entry, C cwd, I/O/R stdin/stdout/stderr file names (relative to the io
 *      dir), G cgroup set index, L limit "name=value" (cpu, wall, fsize, nofile, nproc, stack,
 *      as), X the file to execute (argv[0] stays as given), Z start the command as the zygote
 *      (cpython_zygote.c), W run the test through the zygote (see "the zygote" below run_command's
 *      helpers). EOF ends the sandbox.
 *
 *   Replies (fd 1), one line of space-separated key=value pairs each:
 *     after the setup:  ready=1 pid1=0|1 seccomp=0|1   (pid1=1: the namespaces were built)
 *     per command:      exited code signal cpu cgcpu wall maxrss_kb killed(none|cpu|wall)
 *                       error_stage error_errno error   (error: the child failed before the
 *                       program ran: error_stage is dup2, chdir, setgid, capabilities, setuid,
 *                       seccomp or exec, error_errno its errno, error the message with spaces
 *                       replaced by underscores)
 *                   or: error=<reason> (io files, cgroup join, fork)
 *     per Z command:    zygote=1 zpid cpu wall (its start-up)  or: zygote=0 why=<reason>
 *     per W command:    the per-command reply, or zygote=0 why=<reason> when nothing of the
 *                       program ran (the zygote is then gone: the engine runs the test cold)
 *   Launcher messages go to fd 2.
 *
 *   Exit codes: 0 end of input; 2 bad configuration (usage on fd 2); 111 the sandbox could not
 *   be set up (message on fd 2; the engine reports the job as INFRA_ERROR and never retries
 *   with fewer layers); 112 the reply pipe closed; 113 init was killed by a signal.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <dirent.h>
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/securebits.h>
#include <linux/seccomp.h>
#ifdef HAVE_SECCOMP
#include <seccomp.h>
#endif

#define MAXLIST 128
#define MAXCG 8

/* read-only mounts in the order given: kind 'r' (--ro), '1' (--ro1) or 'v' (--view) */
static struct {
    char kind;
    const char *src, *dst;
} ro_ops[MAXLIST];
static int n_ro;
static const char *rw_paths[MAXLIST];
static int n_rw;
static const char *mask_paths[MAXLIST];
static int n_mask;
static const char *copies[MAXLIST]; /* "host_path:name" */
static int n_copies;
/* cgroup sets: index -> list of cgroup.procs paths; cpu counter per set */
static const char *cg_procs_path[MAXCG][4];
static int cg_procs_n[MAXCG];
static int cg_procs_fd[MAXCG][4];
static const char *cg_cpu_path[MAXCG];
static int cg_cpu_fd[MAXCG];
static int cg_cpu_v2[MAXCG];
static int n_cgsets;

static int opt_ns = 0, opt_userns = 0, opt_seccomp = 0, opt_box = 0;
static long box_mb = 512;
static uid_t run_uid = 0;
static gid_t run_gid = 0;
static int opt_setuid = 0;
static const char *io_dir = NULL;
static const char *cleanup_dirs[MAXLIST]; /* removed by the outer process when init is gone */
static int n_cleanup;
static const char *cleanup_tree = NULL;
static const char *root_dir = NULL;
static int io_fd = -1;
static long ncpu = 1;

static struct sock_fprog seccomp_prog;
static int have_seccomp_prog = 0;

static void die(const char *what) {
    fprintf(stderr, "launcher: %s: %s\n", what, strerror(errno));
    exit(111);
}

static void mkdirs(const char *path, mode_t mode) {
    char buf[4096];
    size_t len = strlen(path);
    if (len >= sizeof(buf)) return;
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            mkdir(buf, mode);
            *p = '/';
        }
    }
    mkdir(buf, mode);
}

static void touch_parent_and_file(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", path);
    char *slash = strrchr(buf, '/');
    if (slash && slash != buf) {
        *slash = 0;
        mkdirs(buf, 0755);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
}

/* Bind `src` at root_dir+src (with the mounts below it when `rec`); symlinks are recreated
   instead of bound. */
static void bind_path(const char *src, int readonly, int rec) {
    char dst[4096];
    struct stat st;
    if (lstat(src, &st) != 0) return; /* optional path: silently absent */
    snprintf(dst, sizeof(dst), "%s%s", root_dir, src);
    if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = readlink(src, target, sizeof(target) - 1);
        if (n < 0) die("readlink");
        target[n] = 0;
        char parent[4096];
        snprintf(parent, sizeof(parent), "%s", dst);
        char *slash = strrchr(parent, '/');
        if (slash) {
            *slash = 0;
            mkdirs(parent, 0755);
        }
        if (symlink(target, dst) != 0 && errno != EEXIST) die("symlink");
        return;
    }
    if (S_ISDIR(st.st_mode))
        mkdirs(dst, 0755);
    else
        touch_parent_and_file(dst);
    if (mount(src, dst, NULL, MS_BIND | (rec ? MS_REC : 0), NULL) != 0) die("bind mount");
    unsigned long fl = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV;
    if (readonly) fl |= MS_RDONLY;
    if (mount(NULL, dst, NULL, fl, NULL) != 0) {
        /* inside a user namespace locked flags (nodev...) may refuse a change; keep ro at least */
        fl = MS_BIND | MS_REMOUNT | (readonly ? MS_RDONLY : 0);
        if (mount(NULL, dst, NULL, fl | MS_NOSUID | MS_NODEV, NULL) != 0 &&
            mount(NULL, dst, NULL, fl, NULL) != 0)
            die("remount bind");
    }
}

/* The staging folder of --view inside the new root: "ro" (the source, bound for the time of one
   overlay mount) and "empty" (an empty read-only tmpfs, the overlay's second layer: a lower-only
   overlay needs two). Both are relative names, which is all the overlay's options show. */
static int view_staged = 0;
static char stage[2048];

static void view_path(const char *src, const char *dst_in) {
    char dst[4096], p[4096];
    struct stat st;
    if (stat(src, &st) != 0) die("view source");
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        die("view source");
    }
    if (!view_staged) {
        if (snprintf(stage, sizeof(stage), "%s/.view", root_dir) >= (int)sizeof(stage)) {
            errno = ENAMETOOLONG;
            die("view staging");
        }
        snprintf(p, sizeof(p), "%s/empty", stage);
        mkdirs(p, 0755);
        if (mount("empty", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0755") != 0)
            die("mount view layer");
        snprintf(p, sizeof(p), "%s/ro", stage);
        mkdirs(p, 0755);
        view_staged = 1;
    }
    snprintf(dst, sizeof(dst), "%s%s", root_dir, dst_in);
    mkdirs(dst, 0755);
    snprintf(p, sizeof(p), "%s/ro", stage);
    if (mount(src, p, NULL, MS_BIND, NULL) != 0) die("bind view source");
    if (chdir(stage) != 0) die("chdir view");
    if (mount("ro", dst, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, "lowerdir=ro:empty") != 0)
        die("mount view");
    if (chdir("/") != 0) die("chdir /");
    if (umount2(p, MNT_DETACH) != 0) die("unbind view source");
}

static void unstage_views(void) {
    char p[4096];
    if (!view_staged) return;
    snprintf(p, sizeof(p), "%s/empty", stage);
    if (umount2(p, MNT_DETACH) != 0) die("unmount view layer");
    rmdir(p);
    snprintf(p, sizeof(p), "%s/ro", stage);
    rmdir(p);
    if (rmdir(stage) != 0) die("remove view staging");
}

static void copy_into_box(const char *spec) {
    char host[4096];
    snprintf(host, sizeof(host), "%s", spec);
    char *colon = strrchr(host, ':');
    if (!colon) {
        errno = EINVAL;
        die("copy spec");
    }
    *colon = 0;
    const char *name = colon + 1;
    char dst[4096];
    snprintf(dst, sizeof(dst), "%s/box/%s", root_dir, name);
    int in = open(host, O_RDONLY | O_CLOEXEC);
    if (in < 0) die("open copy source");
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) die("open copy target");
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        ssize_t off = 0;
        while (off < n) {
            ssize_t w = write(out, buf + off, n - off);
            if (w < 0) die("write copy");
            off += w;
        }
    }
    if (n < 0) die("read copy");
    if (opt_setuid && fchown(out, run_uid, run_gid) != 0) die("chown copy");
    close(in);
    close(out);
}

static void write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) die(path);
    if (write(fd, text, strlen(text)) < 0) die(path);
    close(fd);
}

static void bind_dev(const char *name) {
    char src[256], dst[4096];
    snprintf(src, sizeof(src), "/dev/%s", name);
    snprintf(dst, sizeof(dst), "%s/dev/%s", root_dir, name);
    touch_parent_and_file(dst);
    if (mount(src, dst, NULL, MS_BIND, NULL) != 0) die("bind dev");
}

static void build_root(void) {
    char p[4096];
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) die("make / private");
    if (mount("sbx", root_dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m") != 0)
        die("mount root tmpfs");
    /* private /tmp first, so that binds of paths below /tmp stay visible on top of it */
    snprintf(p, sizeof(p), "%s/tmp", root_dir);
    mkdirs(p, 01777);
    if (mount("tmp", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m,nr_inodes=4096") != 0)
        die("mount /tmp");
    for (int i = 0; i < n_ro; i++) {
        if (ro_ops[i].kind == 'v')
            view_path(ro_ops[i].src, ro_ops[i].dst);
        else
            bind_path(ro_ops[i].src, 1, ro_ops[i].kind == 'r');
    }
    unstage_views();
    for (int i = 0; i < n_rw; i++) bind_path(rw_paths[i], 0, 1);
    if (opt_box) {
        char opts[128];
        snprintf(p, sizeof(p), "%s/box", root_dir);
        mkdirs(p, 0755);
        snprintf(opts, sizeof(opts), "mode=0700,size=%ldm,nr_inodes=16384,uid=%u,gid=%u", box_mb,
                 (unsigned)run_uid, (unsigned)run_gid);
        if (mount("box", p, "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0) die("mount /box");
        for (int i = 0; i < n_copies; i++) copy_into_box(copies[i]);
    }
    snprintf(p, sizeof(p), "%s/dev", root_dir);
    mkdirs(p, 0755);
    if (mount("dev", p, "tmpfs", MS_NOSUID, "mode=0755,size=64k") != 0) die("mount /dev");
    bind_dev("null");
    bind_dev("zero");
    bind_dev("full");
    bind_dev("random");
    bind_dev("urandom");
    snprintf(p, sizeof(p), "%s/dev/shm", root_dir);
    mkdirs(p, 01777);
    if (mount("shm", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m") != 0)
        die("mount /dev/shm");
    snprintf(p, sizeof(p), "%s/dev/fd", root_dir);
    if (symlink("/proc/self/fd", p) != 0) die("symlink fd");
    snprintf(p, sizeof(p), "%s/dev/stdin", root_dir);
    if (symlink("/proc/self/fd/0", p) != 0) die("symlink stdin");
    snprintf(p, sizeof(p), "%s/dev/stdout", root_dir);
    if (symlink("/proc/self/fd/1", p) != 0) die("symlink stdout");
    snprintf(p, sizeof(p), "%s/dev/stderr", root_dir);
    if (symlink("/proc/self/fd/2", p) != 0) die("symlink stderr");
    snprintf(p, sizeof(p), "%s/proc", root_dir);
    mkdirs(p, 0555);
    if (mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) die("mount /proc");
    for (int i = 0; i < n_mask; i++) {
        struct stat st;
        snprintf(p, sizeof(p), "%s%s", root_dir, mask_paths[i]);
        if (stat(p, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            if (mount("mask", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0") !=
                0)
                die("mask dir");
        } else if (mount("/dev/null", p, NULL, MS_BIND, NULL) != 0) {
            die("mask file");
        }
    }
    snprintf(p, sizeof(p), "%s/.old", root_dir);
    mkdirs(p, 0700);
    if (syscall(SYS_pivot_root, root_dir, p) != 0) die("pivot_root");
    if (chdir("/") != 0) die("chdir /");
    if (umount2("/.old", MNT_DETACH) != 0) die("umount old root");
    rmdir("/.old");
    if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) != 0)
        die("remount / read-only");
}

#ifdef HAVE_SECCOMP
static void add_errno(scmp_filter_ctx ctx, int err, const char *name) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return; /* not on this arch/kernel headers */
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0) != 0) {
        fprintf(stderr, "launcher: seccomp rule %s failed\n", name);
        exit(111);
    }
}

static void build_seccomp(void) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) die("seccomp_init");
    static const char *denied[] = {
        "ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2", "pivot_root",
        "chroot", "bpf", "keyctl", "add_key", "request_key", "unshare", "setns",
        "perf_event_open", "kexec_load", "kexec_file_load", "init_module", "finit_module",
        "delete_module", "open_by_handle_at", "name_to_handle_at", "userfaultfd",
        "fanotify_init", "swapon", "swapoff", "reboot", "syslog", "acct", "quotactl",
        "lookup_dcookie", "iopl", "ioperm", "vhangup", "settimeofday", "clock_settime",
        "clock_adjtime", "adjtimex", "fsopen", "fsmount", "fspick", "open_tree", "move_mount",
        "mount_setattr", "personality", NULL};
    for (int i = 0; denied[i]; i++) add_errno(ctx, EPERM, denied[i]);
    /* io_uring bypasses seccomp for the operations it performs; clone3's flags live in a struct
       seccomp cannot inspect. ENOSYS makes libc and runtimes fall back to plain syscalls. */
    add_errno(ctx, ENOSYS, "io_uring_setup");
    add_errno(ctx, ENOSYS, "io_uring_enter");
    add_errno(ctx, ENOSYS, "io_uring_register");
    add_errno(ctx, ENOSYS, "clone3");
    /* sockets: only AF_UNIX */
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
                         SCMP_A0(SCMP_CMP_NE, AF_UNIX)) != 0 ||
        seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1,
                         SCMP_A0(SCMP_CMP_NE, AF_UNIX)) != 0) {
        fprintf(stderr, "launcher: seccomp socket rule failed\n");
        exit(111);
    }
    /* clone with any namespace flag */
    static const unsigned long nsflags[] = {CLONE_NEWNS,  CLONE_NEWUTS, CLONE_NEWIPC,
                                            CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                            CLONE_NEWCGROUP, 0};
    for (int i = 0; nsflags[i]; i++) {
        if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                             SCMP_A0(SCMP_CMP_MASKED_EQ, nsflags[i], nsflags[i])) != 0) {
            fprintf(stderr, "launcher: seccomp clone rule failed\n");
            exit(111);
        }
    }
    /* the children set no_new_privs themselves, right before loading the exported program */
    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    /* export once; each child only runs prctl() on the ready program */
    int pfd[2];
    if (pipe(pfd) != 0) die("pipe");
    if (seccomp_export_bpf(ctx, pfd[1]) != 0) {
        fprintf(stderr, "launcher: seccomp export failed\n");
        exit(111);
    }
    close(pfd[1]);
    static unsigned char buf[1 << 16];
    size_t len = 0;
    ssize_t n;
    while ((n = read(pfd[0], buf + len, sizeof(buf) - len)) > 0) len += (size_t)n;
    close(pfd[0]);
    seccomp_release(ctx);
    seccomp_prog.len = (unsigned short)(len / sizeof(struct sock_filter));
    seccomp_prog.filter = (struct sock_filter *)buf;
    have_seccomp_prog = 1;
}
#endif

/* ---------- command handling ---------- */

struct command {
    char *argv[1024];
    int argc;
    char *envp[256];
    int envc;
    const char *cwd, *in, *out, *err;
    int cgset;
    double cpu_s, wall_s;
    long long fsize, nofile, nproc, stack, as;
    long long nsmem; /* bytes: rootless memory limit of the whole namespace (0: off) */
    char mode;       /* 0 a cold command, 'Z' start the zygote, 'W' a test through it */
    const char *exe; /* X: the file to execute (argv[0] stays the cold command's) */
};

static int read_full(int fd, char *buf, size_t len) {
    size_t off = 0;
    while (off < len) {
        ssize_t n = read(fd, buf + off, len - off);
        if (n == 0) return 0;
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        off += (size_t)n;
    }
    return 1;
}

/* One frame from fd 0: "<decimal length>\n" then that many bytes (NUL-terminated words); a
   malloc'd, NUL-terminated copy, or NULL at EOF before the frame starts. */
static char *read_frame(size_t *out_len) {
    char header[32];
    size_t h = 0;
    for (;;) {
        ssize_t n = read(0, header + h, 1);
        if (n == 0 && h == 0) return NULL;
        if (n == 0) {
            errno = EPIPE;
            die("frame header");
        }
        if (n < 0) {
            if (errno == EINTR) continue;
            die("read header");
        }
        if (header[h] == '\n') break;
        if (header[h] < '0' || header[h] > '9' || ++h >= sizeof(header) - 1) {
            errno = EINVAL;
            die("frame header");
        }
    }
    header[h] = 0;
    size_t len = strtoul(header, NULL, 10);
    if (len > (64u << 20)) {
        errno = E2BIG;
        die("frame length");
    }
    char *buf = malloc(len + 1);
    if (!buf) die("malloc");
    if (read_full(0, buf, len) != 1) die("read frame");
    buf[len] = 0;
    *out_len = len;
    return buf;
}

static char *cmdbuf = NULL;

/* returns 1 on a command, 0 on EOF */
static int read_command(struct command *c) {
    size_t len = 0;
    free(cmdbuf);
    cmdbuf = read_frame(&len);
    if (!cmdbuf) return 0;
    memset(c, 0, sizeof(*c));
    c->cwd = "/";
    c->cpu_s = 10;
    c->wall_s = 30;
    c->fsize = 64LL << 20;
    c->nofile = 256;
    c->nproc = 128;
    c->stack = 256LL << 20;
    for (size_t i = 0; i < len;) {
        char *tok = cmdbuf + i;
        size_t tl = strlen(tok);
        i += tl + 1;
        if (tl == 0) continue;
        char type = tok[0];
        char *v = tok + 1;
        switch (type) {
        case 'A':
            if (c->argc < 1023) c->argv[c->argc++] = v;
            break;
        case 'E':
            if (c->envc < 255) c->envp[c->envc++] = v;
            break;
        case 'C': c->cwd = v; break;
        case 'I': c->in = v; break;
        case 'O': c->out = v; break;
        case 'R': c->err = v; break;
        case 'G': c->cgset = atoi(v); break;
        case 'X': c->exe = v; break;
        case 'Z':
        case 'W': c->mode = type; break;
        case 'L': {
            char *eq = strchr(v, '=');
            if (!eq) break;
            *eq = 0;
            const char *k = v, *val = eq + 1;
            if (!strcmp(k, "cpu")) c->cpu_s = atof(val);
            else if (!strcmp(k, "wall")) c->wall_s = atof(val);
            else if (!strcmp(k, "fsize")) c->fsize = atoll(val);
            else if (!strcmp(k, "nofile")) c->nofile = atoll(val);
            else if (!strcmp(k, "nproc")) c->nproc = atoll(val);
            else if (!strcmp(k, "stack")) c->stack = atoll(val);
            else if (!strcmp(k, "as")) c->as = atoll(val);
            else if (!strcmp(k, "nsmem")) c->nsmem = atoll(val);
            break;
        }
        }
    }
    c->argv[c->argc] = NULL;
    c->envp[c->envc] = NULL;
    return 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU seconds consumed by a cgroup set, or -1 */
static double cg_cpu(int set) {
    if (set < 0 || set >= n_cgsets || cg_cpu_fd[set] < 0) return -1;
    char buf[4096];
    ssize_t n = pread(cg_cpu_fd[set], buf, sizeof(buf) - 1, 0);
    if (n <= 0) return -1;
    buf[n] = 0;
    if (!cg_cpu_v2[set]) return strtoull(buf, NULL, 10) / 1e9; /* cpuacct.usage: ns */
    char *p = strstr(buf, "usage_usec ");
    if (!p) return -1;
    return strtoull(p + 11, NULL, 10) / 1e6;
}

/* CPU seconds of one process (all its threads and its waited-for children) from /proc; the
   fallback when there is no cgroup CPU counter. */
static double proc_cpu(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may contain spaces */
    if (!p) return -1;
    unsigned long long v[4] = {0, 0, 0, 0};
    /* after ")": state(3) ppid ... utime(14) stime(15) cutime(16) cstime(17) */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &v[0],
               &v[1], &v[2], &v[3]) != 4)
        return -1;
    return (double)(v[0] + v[1] + v[2] + v[3]) / (double)sysconf(_SC_CLK_TCK);
}

/* ---------- rootless accounting: every process of the pid namespace ----------
 *
 * Without a cgroup CPU counter (rootless mode), pid 1 of the sandbox's pid namespace accounts
 * the CPU time and memory of every process of the namespace by sampling its /proc every
 * NS_SAMPLE_S seconds while a command runs (the cgroup path never samples).
 *
 * CPU: each process is tracked by (pid, start time). A live process contributes its own time
 * (utime+stime, all its threads, dead ones included) plus max(cutime+cstime, dead) where `dead`
 * is the sum of the last-seen subtrees of its children that vanished between two samples:
 * children it waited for show up in cutime, children auto-reaped (SIGCHLD ignored) only in
 * `dead`, and max() never counts one twice. A vanished process passes its subtree to its
 * last-known parent, or, when that is init (orphans, the main process) or gone, to `closed`;
 * for processes init reaped itself, the exact wait4() figure replaces the estimate when larger.
 * Processes init reaps without ever having seen them add their wait4() figure directly.
 * No process is counted twice (but for a scan racing with a reap, which the caller's second
 * sample filters out), so a well-behaved program is not overcharged; what can slip through is
 * documented in README.md ("Rootless accounting").
 *
 * Memory: the sum over processes of resident anonymous and shmem memory (RssAnon + RssShmem,
 * cheap); past the limit it is confirmed with the proportional figures (Pss_Anon + Pss_Shmem of
 * smaps_rollup), so pages shared copy-on-write after fork() count once. */

#define NS_MAXPROC 4096
#define NS_SAMPLE_S 0.010

struct nsproc {
    pid_t pid, ppid;
    unsigned long long start;
    double own, child, dead, reaped;
    int seen, by_init;
};

static struct nsproc ns_tab[NS_MAXPROC];
static int ns_n;
static double ns_closed;    /* CPU seconds of ended subtrees */
static long ns_mem_peak_kb; /* largest sampled memory total of the command */
static double ns_tick;

static void nsacct_begin(void) {
    ns_n = 0;
    ns_closed = 0;
    ns_mem_peak_kb = 0;
    if (ns_tick <= 0) ns_tick = (double)sysconf(_SC_CLK_TCK);
}

/* init reaped `pid` (wait4): its exact CPU, its own and that of the children it waited for */
static void nsacct_reaped(pid_t pid, const struct rusage *ru) {
    double cpu = ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 + ru->ru_stime.tv_sec +
                 ru->ru_stime.tv_usec / 1e6;
    for (int i = 0; i < ns_n; i++) {
        if (ns_tab[i].pid == pid && !ns_tab[i].by_init) {
            ns_tab[i].by_init = 1;
            ns_tab[i].reaped = cpu;
            return;
        }
    }
    ns_closed += cpu;
}

static int read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    return (int)n;
}

/* sum of the values of the given "Key:   N kB" lines of a /proc file; -1 if unreadable or if
   neither key is there (e.g. a kernel older than the Pss_Anon line of smaps_rollup) */
static long kb_fields(const char *path, const char *k1, const char *k2) {
    char buf[4096];
    if (read_small(path, buf, sizeof(buf)) < 0) return -1;
    long total = 0;
    int found = 0;
    size_t l1 = strlen(k1), l2 = strlen(k2);
    for (char *line = buf; line && *line;) {
        if (!strncmp(line, k1, l1) || !strncmp(line, k2, l2)) {
            total += strtol(strchr(line, ':') + 1, NULL, 10);
            found = 1;
        }
        line = strchr(line, '\n');
        if (line) line++;
    }
    return found ? total : -1;
}

static struct nsproc *ns_find(pid_t pid, unsigned long long start) {
    for (int i = 0; i < ns_n; i++)
        if (ns_tab[i].pid == pid && ns_tab[i].start == start) return &ns_tab[i];
    return NULL;
}

/* Fold every vanished entry (seen == 0) into its last-known parent's `dead` (the parent may have
   vanished too: children are folded first) or, for children of init, into `closed`. */
static void ns_fold(int i) {
    struct nsproc *q = &ns_tab[i];
    double g = q->own + (q->child > q->dead ? q->child : q->dead);
    if (q->by_init && q->reaped > g) g = q->reaped;
    struct nsproc *parent = NULL;
    for (int j = 0; j < ns_n && q->ppid > 1; j++)
        if (j != i && ns_tab[j].pid == q->ppid) parent = &ns_tab[j];
    if (parent) parent->dead += g;
    else ns_closed += g;
    *q = ns_tab[--ns_n];
}

static int ns_has_vanished_child(int i) {
    for (int j = 0; j < ns_n; j++)
        if (j != i && !ns_tab[j].seen && ns_tab[j].ppid == ns_tab[i].pid) return 1;
    return 0;
}

static void ns_resolve_vanished(void) {
    for (int progressed = 1; progressed;) {
        progressed = 0;
        for (int i = 0; i < ns_n; i++) {
            if (ns_tab[i].seen || ns_has_vanished_child(i)) continue;
            ns_fold(i);
            i--;
            progressed = 1;
        }
    }
    /* only a parent cycle (pid reuse) can be left: fold it as it is */
    for (int i = 0; i < ns_n; i++)
        if (!ns_tab[i].seen) ns_fold(i--);
}

/* One sample of the namespace: updates the CPU estimate (returned) and, when mem_limit_kb > 0,
   stores the memory total in *mem_kb (confirmed with PSS when over the limit). */
static double nsacct_sample(long mem_limit_kb, long *mem_kb) {
    for (int i = 0; i < ns_n; i++) ns_tab[i].seen = 0;
    long mem = 0;
    DIR *d = opendir("/proc");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char *end;
            long pid = strtol(e->d_name, &end, 10);
            if (*end || pid <= 1) continue;
            char path[64], buf[1024];
            snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
            if (read_small(path, buf, sizeof(buf)) < 0) continue; /* gone meanwhile */
            char *p = strrchr(buf, ')');
            if (!p) continue;
            int ppid = 0;
            unsigned long long ut, st, cut, cst, start;
            if (sscanf(p + 2,
                       "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu %*d %*d "
                       "%*d %*d %llu",
                       &ppid, &ut, &st, &cut, &cst, &start) != 6)
                continue;
            struct nsproc *q = ns_find((pid_t)pid, start);
            if (!q) {
                if (ns_n >= NS_MAXPROC) continue; /* cannot happen under RLIMIT_NPROC */
                q = &ns_tab[ns_n++];
                memset(q, 0, sizeof(*q));
                q->pid = (pid_t)pid;
                q->start = start;
            }
            q->seen = 1;
            q->ppid = ppid;
            q->own = (double)(ut + st) / ns_tick;
            q->child = (double)(cut + cst) / ns_tick;
            if (mem_limit_kb > 0) {
                snprintf(path, sizeof(path), "/proc/%ld/status", pid);
                long kb = kb_fields(path, "RssAnon:", "RssShmem:");
                if (kb > 0) mem += kb;
            }
        }
        if (mem_limit_kb > 0 && mem > mem_limit_kb) {
            /* confirm with proportional figures: CoW pages shared after fork count once */
            rewinddir(d);
            long pss = 0;
            while ((e = readdir(d)) != NULL) {
                char *end;
                long pid = strtol(e->d_name, &end, 10);
                if (*end || pid <= 1) continue;
                char path[64];
                snprintf(path, sizeof(path), "/proc/%ld/smaps_rollup", pid);
                long kb = kb_fields(path, "Pss_Anon:", "Pss_Shmem:");
                if (kb < 0) { /* unreadable or too old: the resident figure, never nothing */
                    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
                    kb = kb_fields(path, "RssAnon:", "RssShmem:");
                }
                if (kb > 0) pss += kb;
            }
            mem = pss;
        }
        closedir(d);
    }
    ns_resolve_vanished();
    double est = ns_closed;
    for (int i = 0; i < ns_n; i++)
        est += ns_tab[i].own + (ns_tab[i].child > ns_tab[i].dead ? ns_tab[i].child
                                                                  : ns_tab[i].dead);
    if (mem > ns_mem_peak_kb) ns_mem_peak_kb = mem;
    if (mem_kb) *mem_kb = mem;
    return est;
}

/* After every process of the command was killed and reaped: the final CPU total. */
static double nsacct_finish(void) {
    for (int i = 0; i < ns_n; i++) ns_tab[i].seen = 0;
    ns_resolve_vanished();
    return ns_closed;
}

/* No capability survives into the program: empty bounding and ambient sets and, in a user
   namespace where the program stays uid 0, securebits so that exec grants none either. */
static int drop_capabilities(void) {
    if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                     SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED,
              0, 0, 0) != 0)
        return -1;
    for (int cap = 0; cap <= 63; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return -1;
    }
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    return 0;
}

/* last step, after the uid switch (which needs CAP_SETUID): empty every capability set */
static int clear_capabilities(void) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof(data));
    return (int)syscall(SYS_capset, &hdr, data);
}

static void set_rlim(int res, long long v) {
    struct rlimit rl = {(rlim_t)v, (rlim_t)v};
    setrlimit(res, &rl);
}

/* The cgroup set init currently belongs to. Children inherit it at fork, so init moves itself
   once per purpose (compile, then run) instead of migrating every test process: a cgroup v1
   migration waits for an RCU grace period, which costs milliseconds on a loaded machine. */
static int cur_set = -1;

static int enter_cgset(int set) {
    if (set == cur_set || set < 0 || set >= n_cgsets) return 0;
    for (int i = 0; i < cg_procs_n[set]; i++)
        if (write(cg_procs_fd[set][i], "0", 1) != 1) return -1;
    cur_set = set;
    return 0;
}

/* A failure of the child before (or at) exec: reported on the error pipe as
   "<stage> <errno> <message>", so the engine can tell a program that cannot be executed
   (stage "exec", ENOENT/ENOEXEC) from a sandbox failure (every other stage or errno). The pipe is
   close-on-exec, so nothing the judged program does can write to it. */
static void child_fail(int errpipe, const char *stage, const char *what) {
    int e = errno;
    dprintf(errpipe, "%s %d %s%s%s: %s", stage, e, stage, *what ? " " : "", what, strerror(e));
    _exit(127);
}

#ifdef TEST_HOOKS
/* Test hook, compiled only into the engine's test build (-DTEST_HOOKS; the production launcher
   rejects the flag): `--test-fail-stage STAGE:SET` makes that stage of every command of cgroup
   set SET (e.g. the runs, not the compile) fail with EAGAIN; STAGE "unshare" makes the sandbox's
   start fail (SET ignored). It is configuration, set only by the engine's tests, never part of a
   command, so a judged program cannot trigger it. */
static char fail_stage[32];
static int fail_set = -1;
static int cmd_set = -1;

static int hook_fail(const char *stage) {
    if (fail_stage[0] && !strcmp(fail_stage, stage) &&
        (cmd_set == fail_set || !strcmp(stage, "unshare"))) {
        errno = EAGAIN;
        return 1;
    }
    return 0;
}
#define HOOK_SET_COMMAND(set) (cmd_set = (set))
#else
#define hook_fail(stage) 0
#define HOOK_SET_COMMAND(set) ((void)(set))
#endif

/* `ctl_fd` >= 0 (the zygote only): the control socket, handed over as fd 3 */
static void child_exec(struct command *c, int in_fd, int out_fd, int err_fd, int errpipe,
                       int ctl_fd) {
    HOOK_SET_COMMAND(c->cgset);
    /* init is exempt from the OOM killer; the program must not be */
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        if (write(oom, "0", 1) < 0) {
        }
        close(oom);
    }
    setsid();
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        child_fail(errpipe, "dup2", "");
    if (ctl_fd >= 0 && (ctl_fd == 3 ? fcntl(3, F_SETFD, 0) : dup2(ctl_fd, 3)) < 0)
        child_fail(errpipe, "dup2", "control socket");
    /* every other descriptor of init is close-on-exec except the error pipe (also CLOEXEC) */
    if (hook_fail("chdir") || chdir(c->cwd) != 0) child_fail(errpipe, "chdir", c->cwd);
    struct rlimit cpu = {(rlim_t)(c->cpu_s + 1.999), (rlim_t)(c->cpu_s + 2.999)};
    setrlimit(RLIMIT_CPU, &cpu);
    set_rlim(RLIMIT_FSIZE, c->fsize);
    set_rlim(RLIMIT_NOFILE, c->nofile);
    /* the zygote's hard limit must allow what its test processes get: one more (itself) */
    set_rlim(RLIMIT_NPROC, c->nproc + (c->mode == 'Z'));
    set_rlim(RLIMIT_CORE, 0);
    set_rlim(RLIMIT_STACK, c->stack);
    set_rlim(RLIMIT_MEMLOCK, 0);
    set_rlim(RLIMIT_MSGQUEUE, 0);
    if (c->as > 0) set_rlim(RLIMIT_AS, c->as);
    if (opt_setuid) {
        if (hook_fail("setgid") || setgroups(0, NULL) != 0 ||
            setresgid(run_gid, run_gid, run_gid) != 0)
            child_fail(errpipe, "setgid", "");
    }
    if (opt_ns && (hook_fail("capabilities") || drop_capabilities() != 0))
        child_fail(errpipe, "capabilities", "drop");
    if (opt_setuid && (hook_fail("setuid") || setresuid(run_uid, run_uid, run_uid) != 0))
        child_fail(errpipe, "setuid", "");
    if (opt_ns && clear_capabilities() != 0)
        child_fail(errpipe, "capabilities", "clear");
    if (have_seccomp_prog) {
        if (hook_fail("seccomp") || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
            prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &seccomp_prog) != 0)
            child_fail(errpipe, "seccomp", "");
    }
    environ = c->envp;
    if (!hook_fail("exec")) {
        if (c->exe) execv(c->exe, c->argv);
        else execvp(c->argv[0], c->argv);
    }
    child_fail(errpipe, "exec", c->exe ? c->exe : c->argv[0]);
}

static int sfd = -1;

/* Without a pid namespace: SIGKILL every process listed in the current cgroup set but us. */
static void kill_cgroup_members(void) {
    if (cur_set < 0 || cg_procs_n[cur_set] == 0) return;
    int fd = cg_procs_fd[cur_set][0];
    pid_t self = getpid();
    for (int round = 0; round < 50; round++) {
        char buf[65536];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0) return;
        buf[n] = 0;
        int others = 0;
        for (char *p = buf; *p;) {
            char *end;
            long pid = strtol(p, &end, 10);
            if (end == p) break;
            if (pid > 0 && pid != self) {
                kill((pid_t)pid, SIGKILL);
                others++;
            }
            p = end;
            while (*p == '\n') p++;
        }
        if (!others) return;
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        usleep(1000);
    }
}

static void kill_everything(pid_t main_pid) {
    if (getpid() == 1) {
        kill(-1, SIGKILL); /* every process of this pid namespace but init */
        return;
    }
    if (main_pid > 0) {
        kill(-main_pid, SIGKILL); /* fallback: its session/process group */
        kill(main_pid, SIGKILL);
    }
    kill_cgroup_members(); /* and whatever left the group but not the cgroup */
}

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void reply(const char *fmt, ...) {
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 2, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if (n > (int)sizeof(buf) - 2) n = sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t off = 0;
    while (off < n) {
        ssize_t w = write(1, buf + off, n - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            exit(112);
        }
        off += w;
    }
}

static void sanitize(char *s) {
    for (; *s; s++)
        if (*s == ' ' || *s == '\n' || *s == '\r' || *s == '\t') *s = '_';
}

/* The command's stdin/stdout/stderr, opened by init (relative to the io dir, /dev/null when
   not named); 0, or -1 after replying the error. */
static int open_io(const struct command *c, int fds[3]) {
    fds[0] = c->in ? openat(io_fd, c->in, O_RDONLY | O_CLOEXEC) : open("/dev/null", O_RDONLY | O_CLOEXEC);
    fds[1] = c->out ? openat(io_fd, c->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
                    : open("/dev/null", O_WRONLY | O_CLOEXEC);
    fds[2] = c->err ? openat(io_fd, c->err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
                    : open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fds[0] >= 0 && fds[1] >= 0 && fds[2] >= 0) return 0;
    char msg[256];
    snprintf(msg, sizeof(msg), "io_open:%s", strerror(errno));
    sanitize(msg);
    reply("error=%s", msg);
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0) close(fds[i]);
    return -1;
}

static void close_io(const int fds[3]) {
    for (int i = 0; i < 3; i++) close(fds[i]);
}

/* ---------- the zygote (cpython_zygote.c): warm starts of one interpreter ----------
 *
 * Frame word Z starts the command as a zygote: executed as X (the zygote binary) with the cold
 * command's argv, env, cwd and limits, in the command's cgroup set (the run set, so its pages
 * are charged as the cold interpreter's are and no test process ever migrates between cgroups),
 * with a control socket on fd 3. Reply: "zygote=1 zpid= cpu= wall=" (its start-up CPU and wall,
 * measured here once) or "zygote=0 why=...".
 *
 * Frame word W runs one test through it (io names, G, L as for a cold command; argv, env and
 * cwd are the zygote's). init passes the opened io files and a go socket, gets the pid of B,
 * checks B is its own child (its parent is init, as a cold test's), sets on B every rlimit, the
 * niceness, scheduler, CPU affinity and I/O priority a cold child would have (a program may have
 * changed the zygote's: same uid), then releases it. B is supervised as a cold child; its
 * start-up CPU and wall are the zygote's (added to what is measured, taken off the budgets).
 * After it, every process of the run set but init and the zygote is killed (never kill(-1)).
 * Reply: the cold command's, or "zygote=0 why=..." when nothing of the program ran (the zygote
 * is then gone and the engine runs the test cold). Any cold command ends the zygote first. */

#define ZYGOTE_REPLY_S 2.0 /* the longest a zygote may take to hand over a test process */

static pid_t zyg_pid = 0;
static int zyg_sock = -1, zyg_set = -1;
static double zyg_cpu = 0, zyg_wall = 0;

/* a process init reaped: the zygote's end is noted */
static void note_reaped(pid_t w) {
    if (w > 0 && w == zyg_pid) {
        zyg_pid = 0;
        close(zyg_sock);
        zyg_sock = -1;
    }
}

/* SIGKILL every process of cgroup set `set` but init and `keep`; how many were signalled.
   The list is read through a fresh open of cgroup.procs: cgroup v1 keeps the list an open file
   read first until it has been idle for a second, which would name processes long reaped. */
static int kill_set_except(int set, pid_t keep) {
    if (set < 0 || set >= n_cgsets || cg_procs_n[set] == 0) return 0;
    char buf[65536], path[64];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", cg_procs_fd[set][0]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1; /* cannot tell: not empty (the callers' bounds end the wait) */
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n < 0) return 1;
    if (n == 0) return 0;
    buf[n] = 0;
    int others = 0;
    pid_t self = getpid();
    for (char *p = buf; *p;) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p) break;
        if (pid > 0 && pid != self && pid != keep) {
            kill((pid_t)pid, SIGKILL);
            others++;
        }
        p = end;
        while (*p == '\n') p++;
    }
    return others;
}

static void wait_signal_ms(int ms) {
    struct pollfd pfd = {sfd, POLLIN, 0};
    if (poll(&pfd, 1, ms) > 0) {
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
        }
    }
}

/* End the zygote and whatever it started (every process of its set but init), reaped. */
static void discard_zygote(void) {
    if (zyg_pid <= 0) return;
    pid_t z = zyg_pid;
    kill(z, SIGKILL);
    double deadline = now_s() + 2.0;
    for (;;) {
        pid_t w;
        while ((w = waitpid(-1, NULL, WNOHANG)) > 0) note_reaped(w);
        int left = kill_set_except(zyg_set, 0);
        if ((zyg_pid == 0 && left == 0) || w < 0 || now_s() > deadline) break;
        wait_signal_ms(10);
    }
    if (zyg_pid == z) { /* stuck in the kernel: never used again */
        zyg_pid = 0;
        close(zyg_sock);
        zyg_sock = -1;
    }
}

/* One message of at most cap-1 bytes from `fd` within `seconds` (NUL-terminated); its length,
   0 on EOF, -1 on timeout or error. `fds` receives up to 0 descriptors: none are accepted. */
static int recv_bounded(int fd, char *buf, size_t cap, double seconds) {
    double deadline = now_s() + seconds;
    for (;;) {
        double left = deadline - now_s();
        if (left <= 0) return -1;
        struct pollfd pfd = {fd, POLLIN, 0};
        int r = poll(&pfd, 1, (int)(left * 1000.0) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        ssize_t n = recv(fd, buf, cap - 1, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return -1;
        buf[n] = 0;
        return (int)n;
    }
}

static void start_zygote(struct command *c) {
    discard_zygote();
    int set = c->cgset;
    if (getpid() != 1 || !c->exe || set < 0 || set >= n_cgsets || cg_procs_n[set] == 0 ||
        cg_cpu_fd[set] < 0) {
        reply("zygote=0 why=unsupported_here");
        return;
    }
    int fds[3];
    if (open_io(c, fds) != 0) return;
    int sv[2], ep[2];
    if (enter_cgset(set) != 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        close_io(fds);
        reply("zygote=0 why=setup:%d", errno);
        return;
    }
    if (pipe2(ep, O_CLOEXEC) != 0) die("pipe2");
    double cpu0 = cg_cpu(set), t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        close(ep[0]);
        close(sv[0]);
        child_exec(c, fds[0], fds[1], fds[2], ep[1], sv[1]);
    }
    close(ep[1]);
    close(sv[1]);
    close_io(fds);
    if (pid < 0) {
        close(ep[0]);
        close(sv[0]);
        reply("zygote=0 why=fork:%d", errno);
        return;
    }
    zyg_pid = pid;
    zyg_sock = sv[0];
    zyg_set = set;
    char msg[64];
    int n = recv_bounded(zyg_sock, msg, sizeof(msg), c->wall_s);
    double cpu1 = cg_cpu(set);
    if (n == 1 && msg[0] == 'R' && cpu0 >= 0 && cpu1 >= cpu0) {
        zyg_cpu = cpu1 - cpu0;
        zyg_wall = now_s() - t0;
        close(ep[0]);
        reply("zygote=1 zpid=%d cpu=%.6f wall=%.6f", (int)pid, zyg_cpu, zyg_wall);
        return;
    }
    discard_zygote();
    char err[256] = "";
    ssize_t en = read(ep[0], err, sizeof(err) - 1);
    close(ep[0]);
    err[en > 0 ? en : 0] = 0;
    sanitize(err);
    reply("zygote=0 why=%s", *err ? err : n < 0 ? "no_ready_in_time" : "ended_before_ready");
}

/* Every rlimit of a cold child of init: the command's, else init's own. B sets them on itself
   (prlimit(2) of another uid's process needs CAP_SYS_RESOURCE, which init may lack) and says
   "r" only when each one holds; a limit it cannot reach (a program lowered the zygote's hard
   limit) ends it, and the test runs cold. */
static const char *fill_rlimits(const struct command *c, struct rlimit out[RLIM_NLIMITS]) {
    for (int res = 0; res < RLIM_NLIMITS; res++) {
        struct rlimit own;
        if (getrlimit(res, &own) != 0) return "getrlimit";
        rlim_t soft = own.rlim_cur, hard = own.rlim_max;
        long long v = -1;
        switch (res) {
        case RLIMIT_CPU:
            soft = (rlim_t)(c->cpu_s + 1.999);
            hard = (rlim_t)(c->cpu_s + 2.999);
            break;
        case RLIMIT_FSIZE: v = c->fsize; break;
        case RLIMIT_NOFILE: v = c->nofile; break;
        case RLIMIT_NPROC: v = c->nproc + 1; break; /* the zygote is one process of the uid */
        case RLIMIT_CORE: v = 0; break;
        case RLIMIT_STACK: v = c->stack; break;
        case RLIMIT_MEMLOCK: v = 0; break;
        case RLIMIT_MSGQUEUE: v = 0; break;
        case RLIMIT_AS: v = c->as > 0 ? c->as : -1; break;
        }
        if (v >= 0) soft = hard = (rlim_t)v;
        out[res].rlim_cur = soft;
        out[res].rlim_max = hard;
    }
    return "";
}

/* B's other attributes as a cold child of init has them (a program of the same uid may have
   changed the zygote's, which B inherits): niceness, scheduler, affinity, I/O priority, OOM
   score. "" or what failed. */
static const char *reset_attributes(pid_t b) {
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0);
    if (errno != 0 || setpriority(PRIO_PROCESS, b, nice) != 0) return "nice";
    struct sched_param sp;
    int policy = sched_getscheduler(0);
    if (policy < 0 || sched_getparam(0, &sp) != 0 || sched_setscheduler(b, policy, &sp) != 0)
        return "scheduler";
    cpu_set_t cpus;
    if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0 ||
        sched_setaffinity(b, sizeof(cpus), &cpus) != 0)
        return "affinity";
    long io = syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0);
    if (io < 0 || syscall(SYS_ioprio_set, 1, b, io) != 0) return "ioprio";
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)b);
    int oom = open(path, O_WRONLY | O_CLOEXEC);
    int ok = oom >= 0 && write(oom, "0", 1) == 1;
    if (oom >= 0) close(oom);
    return ok ? "" : "oom_score_adj";
}

/* Why the zygote cannot serve `c` now ("" when it can): gone, stopped, another cgroup set. */
static const char *zygote_unusable(const struct command *c) {
    if (zyg_pid <= 0) return "gone";
    pid_t w = waitpid(zyg_pid, NULL, WNOHANG);
    if (w != 0) {
        note_reaped(w);
        return "gone";
    }
    if (c->cgset != zyg_set) return "other_cgroup_set";
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)zyg_pid);
    if (read_small(path, buf, sizeof(buf)) < 0) return "unreadable";
    char *p = strrchr(buf, ')');
    /* stopped or traced (a program of the same uid may SIGSTOP it), or dying */
    if (!p || p[1] != ' ' || !strchr("SRD", p[2])) return "not_waiting";
    return "";
}

static void supervise(struct command *c, pid_t pid, int errfd, double t0, double cpu0,
                      int sampling, int ns_cpu, int ns_mem, int warm);

static void run_warm(struct command *c) {
    const char *why = zygote_unusable(c);
    if (*why) {
        discard_zygote();
        reply("zygote=0 why=%s", why);
        return;
    }
    int fds[3];
    if (open_io(c, fds) != 0) return;
    int gs[2];
    if (enter_cgset(c->cgset) != 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, gs)) {
        close_io(fds);
        discard_zygote();
        reply("zygote=0 why=setup:%d", errno);
        return;
    }
    /* the request: "F" with the test's stdio and B's end of the go socket */
    int pass[4] = {fds[0], fds[1], fds[2], gs[1]};
    char ctl[CMSG_SPACE(sizeof(pass))];
    memset(ctl, 0, sizeof(ctl));
    char f = 'F';
    struct iovec iov = {&f, 1};
    struct msghdr msg;
    memset(&msg, 0, sizeof(msg));
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctl;
    msg.msg_controllen = sizeof(ctl);
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(pass));
    memcpy(CMSG_DATA(cm), pass, sizeof(pass));
    ssize_t sent = sendmsg(zyg_sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    close_io(fds);
    close(gs[1]);
    why = "";
    pid_t b = 0;
    char m[64];
    if (sent != 1) why = "request";
    else if (recv_bounded(zyg_sock, m, sizeof(m), ZYGOTE_REPLY_S) <= 1 || m[0] != 'P')
        why = "no_process";
    else {
        char *end;
        long v = strtol(m + 1, &end, 10);
        b = (*end || v <= 1) ? 0 : (pid_t)v;
        int st;
        /* B must be init's own child, alive, waiting at the go socket */
        struct rlimit rl[RLIM_NLIMITS];
        char lmsg[1 + sizeof(rl)];
        if (b <= 0 || waitpid(b, &st, WNOHANG) != 0) why = "not_our_child";
        else if (!*(why = fill_rlimits(c, rl))) {
            lmsg[0] = 'L';
            memcpy(lmsg + 1, rl, sizeof(rl));
            size_t len = sizeof(lmsg);
            if (send(gs[0], lmsg, len, MSG_NOSIGNAL) != (ssize_t)len) why = "limits";
            else if (recv_bounded(gs[0], m, sizeof(m), ZYGOTE_REPLY_S) != 1 || m[0] != 'r')
                why = "not_ready";
            else why = reset_attributes(b);
        }
    }
    double cpu0 = -1, t0 = now_s();
    if (!*why) {
        cpu0 = cg_cpu(c->cgset);
        t0 = now_s();
        if (cpu0 < 0 || send(gs[0], "g", 1, MSG_NOSIGNAL) != 1) why = "release";
    }
    close(gs[0]);
    if (*why) {
        if (b > 0) kill(b, SIGKILL);
        discard_zygote(); /* kills and reaps B and anything else of the set too */
        reply("zygote=0 why=%s", why);
        return;
    }
    supervise(c, b, -1, t0, cpu0, 0, 0, 0, 1);
}

static void run_command(struct command *c) {
    if (c->argc == 0) {
        reply("error=empty_argv");
        return;
    }
    if (c->mode == 'Z') {
        start_zygote(c);
        return;
    }
    if (c->mode == 'W') {
        run_warm(c);
        return;
    }
    discard_zygote(); /* a cold command never runs beside a zygote */
    int fds[3];
    if (open_io(c, fds) != 0) return;
    int in_fd = fds[0], out_fd = fds[1], err_fd = fds[2];
    if (enter_cgset(c->cgset) != 0) {
        char msg[256];
        snprintf(msg, sizeof(msg), "cgroup_join:%s", strerror(errno));
        sanitize(msg);
        reply("error=%s", msg);
        close(in_fd);
        close(out_fd);
        close(err_fd);
        return;
    }
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) != 0) die("pipe2");
    double cpu0 = cg_cpu(c->cgset);
    /* rootless (no cgroup counter): pid 1 samples the whole namespace */
    int ns_cpu = getpid() == 1 && cpu0 < 0;
    int ns_mem = getpid() == 1 && c->nsmem > 0;
    int sampling = ns_cpu || ns_mem;
    if (sampling) nsacct_begin();
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        reply("error=fork:%d", errno);
        close(in_fd);
        close(out_fd);
        close(err_fd);
        close(ep[0]);
        close(ep[1]);
        return;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        close(ep[0]);
        child_exec(c, in_fd, out_fd, err_fd, ep[1], -1);
    }
    close(ep[1]);
    close(in_fd);
    close(out_fd);
    close(err_fd);
    supervise(c, pid, ep[0], t0, cpu0, sampling, ns_cpu, ns_mem, 0);
}

/* Wait for the command's main process `pid` (limits, accounting), end everything it left, and
   reply. `warm`: a test through the zygote (its start-up counted in, only its set killed). */
static void supervise(struct command *c, pid_t pid, int errfd, double t0, double cpu0,
                      int sampling, int ns_cpu, int ns_mem, int warm) {
    double base_cpu = warm ? zyg_cpu : 0, base_wall = warm ? zyg_wall : 0;
    double cpu_budget = c->cpu_s - base_cpu;
    const char *killed = "none";
    int status = 0, have_main = 0;
    struct rusage ru_main;
    memset(&ru_main, 0, sizeof(ru_main));
    double wall_deadline = t0 + c->wall_s - base_wall;
    for (;;) {
        /* reap whatever has exited */
        for (;;) {
            int st;
            struct rusage ru;
            pid_t w = wait4(-1, &st, WNOHANG, &ru);
            if (w <= 0) break;
            note_reaped(w);
            if (sampling) nsacct_reaped(w, &ru);
            if (w == pid) {
                status = st;
                ru_main = ru;
                have_main = 1;
            }
        }
        if (have_main) break;
        double now = now_s();
        double timeout = wall_deadline - now;
        if (strcmp(killed, "none") != 0) {
            /* already over a limit: kill again, then wait for the SIGCHLD without spinning */
            kill(pid, SIGKILL);
            if (warm) kill_set_except(c->cgset, zyg_pid);
            else kill_everything(pid);
            timeout = 0.01;
        } else if (timeout <= 0) {
            killed = "wall";
            continue;
        } else {
            double used = -1;
            /* the first sample comes one interval after the start: a test shorter than that
               costs no sampling at all (init reaps it, wait4 gives its exact figures) */
            if (sampling && now - t0 >= NS_SAMPLE_S) {
                long mem_kb = 0, limit_kb = ns_mem ? (long)(c->nsmem / 1024) : 0;
                double est = nsacct_sample(limit_kb, &mem_kb);
                /* over a limit: a second sample must agree (a process reaped in the middle of
                   a scan may be counted twice in that one sample) */
                if ((ns_mem && mem_kb > limit_kb) || (ns_cpu && est > c->cpu_s))
                    est = nsacct_sample(limit_kb, &mem_kb);
                if (ns_mem && mem_kb > limit_kb) {
                    killed = "mem";
                    continue;
                }
                if (ns_cpu) used = est;
            }
            if (!ns_cpu) {
                used = cg_cpu(c->cgset);
                if (used >= 0 && cpu0 >= 0) used -= cpu0;
                else used = proc_cpu(pid);
            }
            if (used > cpu_budget) {
                killed = "cpu";
                continue;
            }
            if (used >= 0) {
                /* CPU time cannot grow faster than ncpu seconds per second: sleep until the
                   earliest moment the budget could be exhausted */
                double until_cpu = (cpu_budget - used) / (double)ncpu;
                if (until_cpu < 0.005) until_cpu = 0.005;
                if (until_cpu < timeout) timeout = until_cpu;
            }
            if (sampling) {
                double next = now - t0 < NS_SAMPLE_S ? t0 + NS_SAMPLE_S - now : NS_SAMPLE_S;
                if (next < timeout) timeout = next;
            }
        }
        struct pollfd pfd = {sfd, POLLIN, 0};
        int ms = (int)(timeout * 1000.0) + 1;
        int r = poll(&pfd, 1, ms);
        if (r > 0) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
            }
        }
    }
    double wall = now_s() - t0 + base_wall;
    double cpu1 = cg_cpu(c->cgset);
    /* nothing of the program outlives its main process: kill and reap everything, bounded in
       time (a process stuck in the kernel must not hang the sandbox) */
    if (warm) kill_set_except(c->cgset, zyg_pid);
    else kill_everything(pid);
    double reap_deadline = now_s() + 2.0;
    for (;;) {
        int st;
        pid_t w;
        struct rusage ru;
        while ((w = wait4(-1, &st, WNOHANG, &ru)) > 0) {
            note_reaped(w);
            if (sampling) nsacct_reaped(w, &ru);
        }
        if (w < 0 || getpid() != 1) break; /* ECHILD: all gone */
        if (now_s() > reap_deadline) break;
        if (warm) {
            /* the zygote stays: done once nothing else of the run set is left */
            if (kill_set_except(c->cgset, zyg_pid) == 0) break;
        } else {
            kill_everything(pid);
        }
        struct pollfd pfd = {sfd, POLLIN, 0};
        if (poll(&pfd, 1, 10) > 0) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
            }
        }
    }
    char errbuf[512], stage[32] = "";
    ssize_t en = errfd >= 0 ? read(errfd, errbuf, sizeof(errbuf) - 1) : 0;
    if (errfd >= 0) close(errfd);
    if (en < 0) en = 0;
    errbuf[en] = 0;
    int err_no = 0, msg_at = 0;
    if (en > 0 && sscanf(errbuf, "%31s %d %n", stage, &err_no, &msg_at) < 2) {
        snprintf(stage, sizeof(stage), "unknown"); /* never expected: still a sandbox failure */
        msg_at = 0;
    }
    char *errmsg = errbuf + msg_at;
    sanitize(errmsg);
    double ru_cpu = ru_main.ru_utime.tv_sec + ru_main.ru_utime.tv_usec / 1e6 +
                    ru_main.ru_stime.tv_sec + ru_main.ru_stime.tv_usec / 1e6 + base_cpu;
    double cgcpu = (cpu0 >= 0 && cpu1 >= 0) ? cpu1 - cpu0 + base_cpu : -1;
    double nscpu = ns_cpu ? nsacct_finish() : -1;
    long nsmem_kb = ns_mem ? ns_mem_peak_kb : -1;
    int exited = WIFEXITED(status), code = exited ? WEXITSTATUS(status) : -1;
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    reply("exited=%d code=%d signal=%d cpu=%.6f cgcpu=%.6f nscpu=%.6f nsmem_kb=%ld wall=%.6f "
          "maxrss_kb=%ld killed=%s error_stage=%s error_errno=%d error=%s",
          exited, code, sig, ru_cpu, cgcpu, nscpu, nsmem_kb, wall, ru_main.ru_maxrss, killed,
          stage, err_no,
          en > 0 ? (*errmsg ? errmsg : "unknown") : "");
}

/* ---------- cleanup ---------- */

/* A directory on the way down: its identity, its name in the parent, the subdirs left. */
struct rm_frame {
    dev_t dev;
    ino_t ino;
    char *name;
    char **pending;
    size_t n, cap;
};

/* Open subdir `name` of `dirfd` without following a symlink; a mode that keeps the owner out
   (000) is opened up first (without root, the tree's owner can still do that). */
static int open_subdir(int dirfd, const char *name) {
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno != EACCES) return fd;
    int pfd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0) return -1;
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
    int r = chmod(proc, 0700);
    close(pfd);
    if (r != 0) return -1;
    return openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Unlink every non-directory of `fd`; the names of its subdirectories on the same file system
   go to `f->pending`. */
static void rm_scan(int fd, dev_t dev, struct rm_frame *f) {
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 0700) != 0700)
        fchmod(fd, (st.st_mode & 07777) | 0700);
    int dfd = dup(fd);
    if (dfd < 0) return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISDIR(st.st_mode)) {
            unlinkat(fd, e->d_name, 0);
            continue;
        }
        if (st.st_dev != dev) continue; /* a mount point: never entered */
        if (f->n == f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 16;
            char **p = realloc(f->pending, cap * sizeof(*p));
            if (!p) break;
            f->pending = p;
            f->cap = cap;
        }
        char *name = strdup(e->d_name);
        if (!name) break;
        f->pending[f->n++] = name;
    }
    closedir(d);
}

static void rm_free(struct rm_frame *f) {
    for (size_t i = 0; i < f->n; i++) free(f->pending[i]);
    free(f->pending);
    free(f->name);
}

/* Remove `path` and everything below it: no recursion, no symlink followed, no path longer
   than one name (each step is relative to the directory fd it is in; climbing uses ".." checked
   against the inode it came from), at most two descriptors open. A program may have left
   chains thousands of levels deep, mode 000 directories, symlink loops, sockets and FIFOs. */
static void remove_tree(const char *path) {
    char parent[4096];
    snprintf(parent, sizeof(parent), "%s", path);
    char *slash = strrchr(parent, '/');
    if (!slash || !slash[1]) return;
    *slash = 0;
    const char *base = slash + 1;
    int top = open(*parent ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top < 0) return;
    struct stat st;
    if (fstatat(top, base, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
        unlinkat(top, base, 0);
        close(top);
        return;
    }
    dev_t dev = st.st_dev;
    size_t depth = 0, cap = 64;
    struct rm_frame *stack = calloc(cap, sizeof(*stack));
    int fd = stack ? open_subdir(top, base) : -1;
    if (fd < 0) {
        free(stack);
        close(top);
        return;
    }
    stack[0] = (struct rm_frame){st.st_dev, st.st_ino, strdup(base), NULL, 0, 0};
    depth = 1;
    rm_scan(fd, dev, &stack[0]);
    while (depth > 0) {
        struct rm_frame *f = &stack[depth - 1];
        if (f->n > 0) {
            char *name = f->pending[--f->n];
            int sub = -1;
            if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
                st.st_dev == dev)
                sub = open_subdir(fd, name);
            struct stat sst;
            if (sub >= 0 && (fstat(sub, &sst) != 0 || sst.st_ino != st.st_ino)) {
                close(sub);
                sub = -1;
            }
            if (sub >= 0 && depth == cap) {
                struct rm_frame *grown = realloc(stack, 2 * cap * sizeof(*stack));
                if (grown) {
                    stack = grown;
                    cap *= 2;
                } else {
                    close(sub);
                    sub = -1;
                }
            }
            if (sub < 0) {
                free(name);
                continue;
            }
            close(fd);
            fd = sub;
            stack[depth++] = (struct rm_frame){st.st_dev, st.st_ino, name, NULL, 0, 0};
            rm_scan(fd, dev, &stack[depth - 1]);
            continue;
        }
        /* every child done: climb, check we are where we came from, remove this directory */
        struct rm_frame done = *f;
        depth--;
        int up = depth > 0 ? openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : dup(top);
        close(fd);
        fd = up;
        if (fd < 0 || fstat(fd, &st) != 0 ||
            (depth > 0 && (st.st_dev != stack[depth - 1].dev || st.st_ino != stack[depth - 1].ino))) {
            rm_free(&done);
            break; /* moved while walking: stop rather than remove elsewhere */
        }
        unlinkat(fd, done.name, AT_REMOVEDIR);
        rm_free(&done);
    }
    while (depth > 0) rm_free(&stack[--depth]);
    free(stack);
    if (fd >= 0) close(fd);
    close(top);
}

static void cleanup(void) {
    for (int i = 0; i < n_cleanup; i++) {
        for (int attempt = 0; attempt < 100; attempt++) {
            if (rmdir(cleanup_dirs[i]) == 0 || errno == ENOENT) break;
            usleep(2000 * (attempt < 10 ? attempt + 1 : 10));
        }
    }
    if (cleanup_tree) remove_tree(cleanup_tree);
}

static void usage(const char *bad) {
    fprintf(stderr,
            "launcher: %s%s\n"
            "usage: <launcher> (no arguments; argv[0] is any neutral name)\n"
            "  fd 0 carries one configuration frame, then command frames; fd 1 the replies.\n"
            "  configuration words: --io DIR (required) --ncpu N --seccomp\n"
            "    --ns --root DIR [--userns] [--uid N --gid N] [--box --box-mb N]\n"
            "    --ro PATH --ro1 PATH --view SRC DST --rw PATH --mask PATH --copy HOSTFILE:NAME\n"
            "    (repeatable)\n"
            "    --cg SET:CGROUP_PROCS --cgcpu SET:CPUACCT_USAGE --cgcpu2 SET:CPU_STAT\n"
            "    --cleanup-cgroup DIR (repeatable) --cleanup-tree DIR\n"
#ifdef TEST_HOOKS
            "    --test-fail-stage STAGE:SET (test build only)\n"
#endif
            "  exit codes: 0 end of input, 2 bad configuration, 111 sandbox setup failed,\n"
            "  112 reply pipe closed, 113 init killed by a signal\n",
            bad ? "bad configuration word: " : "bad configuration", bad ? bad : "");
    exit(2);
}

static void serve(void) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) die("signalfd");
    if (getpid() != 1) prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    /* init may sit in the program's memory cgroup: never let the OOM killer pick it */
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        if (write(oom, "-1000", 5) < 0) {
        }
        close(oom);
    }
    /* /proc/1/{mem,fd,environ} of init stay out of reach even for a same-uid program
       (rootless mode), since it would need CAP_SYS_PTRACE, which programs never have */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    reply("ready=1 pid1=%d seccomp=%d", getpid() == 1, have_seccomp_prog);
    struct command c;
    while (read_command(&c)) run_command(&c);
}

/* The configuration frame, split into words: the sandbox's init keeps the launcher's argv, which
   every process of the sandbox can read in /proc/1/cmdline, so nothing of the host travels there. */
static char **read_config(int *count) {
    size_t len = 0;
    char *buf = read_frame(&len);
    if (!buf) {
        fprintf(stderr, "launcher: no configuration frame on fd 0\n");
        exit(2);
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += buf[i] == 0;
    char **words = calloc(n + 1, sizeof(*words));
    if (!words) die("calloc");
    size_t k = 0;
    for (size_t i = 0; i < len && k < n; i += strlen(buf + i) + 1) words[k++] = buf + i;
    *count = (int)k;
    return words;
}

int main(int argc, char **argv) {
    if (argc > 1) usage(argv[1]); /* configuration comes from fd 0 only */
    (void)argv;
    prctl(PR_SET_NAME, "sandbox-init", 0, 0, 0);
    int nconf = 0;
    char **conf = read_config(&nconf);
    for (int i = 0; i < nconf; i++) {
        const char *a = conf[i];
        const char *v = (i + 1 < nconf) ? conf[i + 1] : NULL;
        if (!strcmp(a, "--ns")) opt_ns = 1;
        else if (!strcmp(a, "--userns")) opt_userns = 1;
        else if (!strcmp(a, "--seccomp")) opt_seccomp = 1;
        else if (!strcmp(a, "--box")) opt_box = 1;
        else if (!v) usage(a);
        else if (!strcmp(a, "--box-mb")) box_mb = atol(v), i++;
        else if (!strcmp(a, "--ro") || !strcmp(a, "--ro1")) {
            if (n_ro >= MAXLIST) usage(a);
            ro_ops[n_ro].kind = a[4] ? '1' : 'r';
            ro_ops[n_ro].src = ro_ops[n_ro].dst = v;
            n_ro++, i++;
        } else if (!strcmp(a, "--view")) {
            if (n_ro >= MAXLIST || i + 2 >= nconf || v[0] != '/' || conf[i + 2][0] != '/')
                usage(a);
            ro_ops[n_ro].kind = 'v';
            ro_ops[n_ro].src = v;
            ro_ops[n_ro].dst = conf[i + 2];
            n_ro++, i += 2;
        }
        else if (!strcmp(a, "--rw")) { if (n_rw < MAXLIST) rw_paths[n_rw++] = v; i++; }
        else if (!strcmp(a, "--mask")) { if (n_mask < MAXLIST) mask_paths[n_mask++] = v; i++; }
        else if (!strcmp(a, "--copy")) { if (n_copies < MAXLIST) copies[n_copies++] = v; i++; }
        else if (!strcmp(a, "--io")) io_dir = v, i++;
        else if (!strcmp(a, "--cleanup-cgroup")) { if (n_cleanup < MAXLIST) cleanup_dirs[n_cleanup++] = v; i++; }
        else if (!strcmp(a, "--cleanup-tree")) cleanup_tree = v, i++;
        else if (!strcmp(a, "--root")) root_dir = v, i++;
        else if (!strcmp(a, "--uid")) run_uid = (uid_t)atol(v), opt_setuid = 1, i++;
        else if (!strcmp(a, "--gid")) run_gid = (gid_t)atol(v), i++;
        else if (!strcmp(a, "--ncpu")) ncpu = atol(v), i++;
#ifdef TEST_HOOKS
        else if (!strcmp(a, "--test-fail-stage")) {
            const char *colon = strchr(v, ':');
            if (!colon || colon - v >= (long)sizeof(fail_stage)) usage(a);
            memcpy(fail_stage, v, (size_t)(colon - v));
            fail_set = atoi(colon + 1);
            i++;
        }
#endif
        else if (!strcmp(a, "--cg")) {
            /* SET:PATH/cgroup.procs */
            int set = atoi(v);
            const char *path = strchr(v, ':');
            if (!path || set < 0 || set >= MAXCG || cg_procs_n[set] >= 4) usage(a);
            cg_procs_path[set][cg_procs_n[set]++] = path + 1;
            if (set + 1 > n_cgsets) n_cgsets = set + 1;
            i++;
        } else if (!strcmp(a, "--cgcpu") || !strcmp(a, "--cgcpu2")) {
            int set = atoi(v);
            const char *path = strchr(v, ':');
            if (!path || set < 0 || set >= MAXCG) usage(a);
            cg_cpu_path[set] = path + 1;
            cg_cpu_v2[set] = !strcmp(a, "--cgcpu2");
            if (set + 1 > n_cgsets) n_cgsets = set + 1;
            i++;
        } else usage(a);
    }
    if (ncpu < 1) ncpu = 1;
    if (!io_dir) usage("--io missing");
    io_fd = open(io_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (io_fd < 0) die("open io dir");
    for (int s = 0; s < MAXCG; s++) {
        cg_cpu_fd[s] = -1;
        for (int i = 0; i < cg_procs_n[s]; i++) {
            cg_procs_fd[s][i] = open(cg_procs_path[s][i], O_RDWR | O_CLOEXEC);
            if (cg_procs_fd[s][i] < 0) die(cg_procs_path[s][i]);
        }
        if (cg_cpu_path[s]) {
            cg_cpu_fd[s] = open(cg_cpu_path[s], O_RDONLY | O_CLOEXEC);
            if (cg_cpu_fd[s] < 0) die(cg_cpu_path[s]);
        }
    }
#ifdef HAVE_SECCOMP
    if (opt_seccomp) build_seccomp();
#else
    if (opt_seccomp) {
        fprintf(stderr, "launcher: built without libseccomp\n");
        exit(111);
    }
#endif
    if (opt_ns) {
        if (!root_dir) usage("--root missing");
        uid_t ouid = getuid();
        gid_t ogid = getgid();
        /* the mount namespace is created by init alone: the outer process keeps the host's
           view so that it can clean up after the sandbox (pivot_root would move it too) */
        int flags = CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS;
        if (opt_userns) flags |= CLONE_NEWUSER;
        if (hook_fail("unshare") ||
            (unshare(flags | CLONE_NEWCGROUP) != 0 && unshare(flags) != 0))
            die("unshare");
        if (opt_userns) {
            char map[64];
            int fd = open("/proc/self/setgroups", O_WRONLY | O_CLOEXEC);
            if (fd >= 0) {
                if (write(fd, "deny", 4) < 0) die("setgroups deny");
                close(fd);
            }
            snprintf(map, sizeof(map), "0 %u 1", (unsigned)ouid);
            write_file("/proc/self/uid_map", map);
            snprintf(map, sizeof(map), "0 %u 1", (unsigned)ogid);
            write_file("/proc/self/gid_map", map);
        }
        pid_t pid1 = fork();
        if (pid1 < 0) die("fork init");
        if (pid1 > 0) {
            /* outer process: waits for the sandbox's end, then removes its cgroups and work
               files, so that nothing is left behind even when the engine was SIGKILLed */
            int st = 0;
            signal(SIGINT, SIG_IGN);
            signal(SIGTERM, SIG_IGN);
            signal(SIGHUP, SIG_IGN);
            signal(SIGPIPE, SIG_IGN);
            while (waitpid(pid1, &st, 0) < 0 && errno == EINTR) {
            }
            /* a failed setup (exit 111) leaves the files to the engine, which reads the
               launcher's message there, reports the job's INFRA_ERROR and removes them */
            if (!(WIFEXITED(st) && WEXITSTATUS(st) == 111)) cleanup();
            return WIFEXITED(st) ? WEXITSTATUS(st) : 113;
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (unshare(CLONE_NEWNS) != 0) die("unshare mount namespace");
        sethostname("box", 3);
        build_root();
    } else if (root_dir) {
        usage("--root without --ns");
    }
    serve();
    return 0;
}
