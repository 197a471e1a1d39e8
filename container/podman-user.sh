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
echo "podman-user: $USER_NAME ($(grep "^$USER_NAME:" /etc/subuid))"
