"""The container's seccomp profile: every system call of the x86-64 table except a deny list.

Docker's default profile refuses the user-namespace `clone`/`unshare` and the `mount` calls the
launcher needs to build its rootless sandbox inside the container; this profile allows them and
keeps refusing what no judged program or toolchain needs (kernel modules, kexec, bpf, perf,
keyrings, ptrace, clock setting, io_uring...). Calls missing from the table (newer kernels) are
refused too: the default action is EPERM. The launcher's own per-program filter still applies
inside (see sandbox/command.py, seccomp)."""

from __future__ import annotations

import json
import re
from pathlib import Path

UNISTD = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")

DENIED: frozenset[str] = frozenset(
    [
        "acct",
        "add_key",
        "adjtimex",
        "bpf",
        "clock_adjtime",
        "clock_settime",
        "create_module",
        "delete_module",
        "finit_module",
        "fsconfig",
        "fsmount",
        "fsopen",
        "fspick",
        "get_kernel_syms",
        "init_module",
        "io_uring_enter",
        "io_uring_register",
        "io_uring_setup",
        "ioperm",
        "iopl",
        "kcmp",
        "kexec_file_load",
        "kexec_load",
        "keyctl",
        "lookup_dcookie",
        "move_mount",
        "name_to_handle_at",
        "nfsservctl",
        "open_by_handle_at",
        "open_tree",
        "perf_event_open",
        "process_vm_readv",
        "process_vm_writev",
        "ptrace",
        "query_module",
        "quotactl",
        "quotactl_fd",
        "reboot",
        "request_key",
        "setns",
        "settimeofday",
        "swapoff",
        "swapon",
        "syslog",
        "uselib",
        "userfaultfd",
        "vhangup",
        "_sysctl",
        "afs_syscall",
        "tuxcall",
        "security",
        "vserver",
        "putpmsg",
        "getpmsg",
    ]
)


def syscall_names(header: Path = UNISTD) -> list[str]:
    """The x86-64 system call names of the kernel headers (OSError when absent: fail closed)."""
    text = header.read_text(encoding="utf-8")
    return sorted(set(re.findall(r"^#define __NR_(\w+)\s+\d+", text, re.M)))


def profile(header: Path = UNISTD) -> dict[str, object]:
    allowed = [n for n in syscall_names(header) if n not in DENIED]
    if len(allowed) < 200:
        raise OSError(f"{header}: only {len(allowed)} system calls found")
    return {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 1,
        "architectures": ["SCMP_ARCH_X86_64"],
        "syscalls": [{"names": allowed, "action": "SCMP_ACT_ALLOW"}],
    }


def write_profile(path: Path) -> Path:
    path.write_text(json.dumps(profile()), encoding="utf-8")
    return path
