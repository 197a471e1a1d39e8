#!/usr/bin/env bash
# Run CMD... with a Docker daemon answering: when none answers, start dockerd (no bridge, no
# iptables, a private data root; gVisor's runsc registered when installed), wait for it, run the
# command, and stop the daemon it started on exit. Installs nothing (see `make container-tools`).
set -euo pipefail
DOCKER=${DOCKER:-/usr/bin/docker}
DATA_ROOT=${CODE_EVAL_DOCKER_ROOT:-/var/tmp/code-eval-docker}
if [ $# -eq 0 ]; then
    echo "usage: $0 CMD [ARGS...]" >&2
    exit 2
fi
if "$DOCKER" info >/dev/null 2>&1; then
    exec "$@"
fi
if ! command -v dockerd >/dev/null 2>&1; then
    echo "with-dockerd: no daemon answers and dockerd is not installed (make container-tools)" >&2
    exit 1
fi
args=(--bridge=none --iptables=false --ip-masq=false --data-root "$DATA_ROOT"
      --pidfile "$DATA_ROOT.pid" --exec-root "$DATA_ROOT.exec")
if command -v runsc >/dev/null 2>&1; then
    args+=(--add-runtime "runsc=$(command -v runsc)")
fi
mkdir -p "$DATA_ROOT"
log="$DATA_ROOT.log"
dockerd "${args[@]}" >"$log" 2>&1 &
pid=$!
stop() {
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
}
trap stop EXIT
for _ in $(seq 1 300); do
    if "$DOCKER" info >/dev/null 2>&1; then break; fi
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "with-dockerd: dockerd exited; its log:" >&2
        tail -n 30 "$log" >&2
        exit 1
    fi
    sleep 0.2
done
if ! "$DOCKER" info >/dev/null 2>&1; then
    echo "with-dockerd: dockerd did not answer within 60 s; its log:" >&2
    tail -n 30 "$log" >&2
    exit 1
fi
"$@"
