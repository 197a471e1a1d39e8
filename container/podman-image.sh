#!/usr/bin/env bash
# Copy the judge image (IMAGE, default code-eval-judge:latest, built by build-image.sh into
# Docker's store) into root's podman storage and into USER's rootless storage: `docker save`
# piped to `podman load`, so no registry is involved and the image ID stays the same. Skipped
# for a store that already holds that ID; an older build left untagged is removed. Needs root
# and a Docker daemon (with-dockerd.sh).
set -euo pipefail
USER_NAME=${1:?usage: $0 USER [IMAGE]}
IMAGE=${2:-code-eval-judge:latest}
DOCKER=${DOCKER:-/usr/bin/docker}
id=$("$DOCKER" image inspect -f '{{.Id}}' "$IMAGE")
id=${id#sha256:}
load() {  # load [runuser -u USER --]: into that podman's storage unless it holds $id
    if "$@" sh -c 'cd && podman image exists "$0"' "$id"; then
        "$@" sh -c 'cd && podman tag "$0" "$1"' "$id" "$IMAGE"
        echo "podman-image: ${*:-root}: up to date ($id)"
        return
    fi
    "$DOCKER" save "$IMAGE" | "$@" sh -c 'cd && podman load -q' >/dev/null
    "$@" sh -c 'cd && podman image exists "$0"' "$id"
    "$@" sh -c 'cd && podman image prune -f' >/dev/null  # an older build, now untagged
    echo "podman-image: ${*:-root}: loaded $IMAGE ($id)"
}
load
load runuser -u "$USER_NAME" --
