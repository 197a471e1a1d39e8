"""The isolation policy, shared by every backend: the layer vocabulary, the policies, and the one
function that decides whether a session may run under a policy.

A backend declares the layers it promises (`Backend.required_layers`); `policy_refusal` compares
them with what a session reports as active. Under "required" any promised layer that is inactive,
or any limit that no mechanism enforces over every process ("unenforced"), refuses the session;
under "best-effort" the session runs and its result lists what is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: isolation policies: "required" (the default) refuses to run a program unless every layer its
#: backend promises is active; "best-effort" runs with what the host offers and lists the rest
ISOLATION_POLICIES: tuple[str, ...] = ("required", "best-effort")

#: every layer a result's `isolation` dict reports (True = active for that program)
LAYERS: tuple[str, ...] = (
    "private_workdir",
    "env_allowlist",
    "new_session",
    "rlimits",
    "pid_namespace",
    "net_namespace",
    "mount_namespace",
    "ipc_namespace",
    "uts_namespace",
    "fs_view",
    "unprivileged_uid",
    "seccomp",
    "cgroup",
)

#: what the local sandbox promises (and `required` demands of it): namespaces, the private
#: file-system view and seccomp (as root the uid switch is active too; rootless, a user namespace
#: stands in for it)
REQUIRED_LAYERS: tuple[str, ...] = tuple(
    layer for layer in LAYERS if layer not in ("unprivileged_uid", "cgroup")
)

#: the outer layers a judge container adds around the local sandbox (`backends/container/backend.py`),
#: each probed from inside by the agent at start-up (`agent.container_layers`), not assumed
#: from the `docker run` flags
CONTAINER_LAYERS: tuple[str, ...] = (
    "container_no_network",  # no interface but loopback (--network none)
    "container_read_only_root",  # the image's root file system mounted read-only
    "container_no_capabilities",  # effective and bounding capability sets empty
    "container_no_new_privileges",  # no_new_privs set: no setuid gain
    "container_seccomp",  # a seccomp filter on the agent (the container's profile)
    "container_unprivileged_user",  # the agent is not uid 0
    "container_pids_ceiling",  # the container's pids cgroup has a limit
    "container_memory_ceiling",  # the container's memory cgroup has a limit
)


def check_policy(policy: str) -> str:
    """`policy` if it is one of ISOLATION_POLICIES, else ValueError naming them."""
    if policy not in ISOLATION_POLICIES:
        raise ValueError(f"unknown isolation policy {policy!r}; use one of {ISOLATION_POLICIES}")
    return policy


def inactive_layers(isolation: Mapping[str, Any]) -> list[str]:
    """Names of the isolation layers that were not active for a result."""
    return [name for name in LAYERS if not isolation.get(name)]


def policy_refusal(
    policy: str, promised: Sequence[str], isolation: Mapping[str, Any], backend: str = "local"
) -> str:
    """Why a session with `isolation` may not run under `policy` when its backend promises the
    layers `promised` ("" when it may). The one place the policy is decided for every backend."""
    if check_policy(policy) != "required":
        return ""
    refused = [name for name in promised if not isolation.get(name)]
    # a limit held per process only is a missing protection too (e.g. CPU time of children)
    refused += [f"{name} limit" for name in isolation.get("unenforced", ())]
    if not refused:
        return ""
    return (
        f"isolation policy 'required' refused to run: layers {', '.join(refused)} are not "
        f"active here (backend {backend}); choose --isolation best-effort to run without them"
    )


class SandboxError(RuntimeError):
    """The sandbox itself failed (an engine failure: INFRA_ERROR, never the program's fault)."""


class IsolationRefused(SandboxError):
    """The policy demands a layer this host cannot give: nothing was run."""
