#!/usr/bin/env bash
# Make USER a user who can run rootless podman: the account and its home (created once), and
# subordinate uid and gid ranges of 65536 in /etc/subuid and /etc/subgid (added when missing,
# after the highest range already given out). Idempotent; needs root.
set -euo pipefail
USER_NAME=${1:?usage: $0 USER}
if ! id -u "$USER_NAME" >/dev/null 2>&1; then
    useradd --create-home --shell /bin/bash "$USER_NAME"
fi
for f in /etc/subuid /etc/subgid; do
    touch "$f"
    if ! grep -q "^$USER_NAME:" "$f"; then
        start=$(awk -F: 'BEGIN { top = 100000 } { end = $2 + $3; if (end > top) top = end }
            END { print top }' "$f")
        echo "$USER_NAME:$start:65536" >>"$f"
    fi
done
home=$(getent passwd "$USER_NAME" | cut -d: -f6)
mkdir -p "$home"
chown "$USER_NAME:" "$home"
# podman re-reads the ranges only when its user namespace is set up again
runuser -u "$USER_NAME" -- sh -c "cd && podman system migrate" >/dev/null 2>&1 || true

# The user's image store on the kernel's own overlay file system (rootless overlay mounts,
# Linux >= 5.13) rather than vfs, podman's fallback when fuse-overlayfs cannot open /dev/fuse:
# vfs copies the whole image for each container (seconds to start a judge container), overlay
# shares its layers. Only where overlay works for this user, and a store already made with vfs
# is reset only when it holds nothing but judge images (make podman-image loads them again).
as_user() { runuser -u "$USER_NAME" -- sh -c "cd && $1" 2>/dev/null; }
conf="$home/.config/containers/storage.conf"
driver=$(as_user 'podman info --format "{{.Store.GraphDriverName}}"' || true)
if [ ! -e "$conf" ] && [ "$driver" != overlay ]; then
    probe=$(runuser -u "$USER_NAME" -- mktemp -d)
    if as_user "podman --storage-driver overlay --root $probe/root --runroot $probe/run info \
            --format '{{.Store.GraphStatus}}'" | grep -q 'Native Overlay Diff:true'; then
        others=$(as_user "podman images --format '{{.Repository}}'" | grep -vc '/code-eval-judge$' || true)
        if [ "$others" = 0 ]; then
            as_user 'podman system reset --force' >/dev/null || true
            runuser -u "$USER_NAME" -- mkdir -p "$home/.config/containers"
            printf '[storage]\ndriver = "overlay"\n' | runuser -u "$USER_NAME" -- tee "$conf" >/dev/null
            driver=overlay
        else
            echo "podman-user: $USER_NAME's $driver store holds other images: left as it is"
        fi
    fi
    as_user "podman --storage-driver overlay --root $probe/root --runroot $probe/run system reset --force" \
        >/dev/null || true
    rm -rf "$probe"
fi
echo "podman-user: $USER_NAME ($(grep "^$USER_NAME:" /etc/subuid), storage ${driver:-?})"
