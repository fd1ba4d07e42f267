#!/usr/bin/env bash
# Stands in for rented nodes on this machine, to try an ssh pool (README "Rented nodes over SSH")
# before paying for any: N sshd daemons (Debian's openssh-server) on loopback ports chosen by the
# OS, each with a host key of its own, all letting in one new key; and DIR/pools.yaml, a pool
# `rented` of those hosts, as examples/pools-rented.yaml with their logins. The "nodes" share
# this machine's file system, so their bundle, work and data folders are under DIR.
#   scripts/loopback_nodes.sh start DIR [N] [--bundle FILE] [--data-dir DATASETS]
#   scripts/loopback_nodes.sh stop DIR     stops the daemons (and anything still running there)
# --bundle: the bundle the nodes get (default: the newest dist/ablate-*.tar.gz, here or in the
# source tree; scripts/dist.sh or ./dev.sh dist makes one). --data-dir: the nodes' datasets
# (default: ablate up's, ~/.local/share/ablate/datasets). Prints the pools file's path.
set -euo pipefail
ROOT=$(cd -P "$(dirname "$0")/.." && pwd)
SSHD=/usr/sbin/sshd

usage() {
  sed -n '7,8p' "$0" | sed 's/^# *//' >&2
  exit 2
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

accepts() {
  python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$1" 2>/dev/null
}

start() {
  local dir=$1 n=$2 bundle=$3 data=$4
  [ -x "$SSHD" ] || { echo "loopback_nodes.sh: no $SSHD (apt-get install openssh-server)" >&2; exit 1; }
  if [ -z "$bundle" ]; then
    bundle=$(ls -t dist/ablate-*-linux-x86_64.tar.gz "$ROOT"/dist/ablate-*-linux-x86_64.tar.gz 2>/dev/null | head -n 1 || true)
    [ -n "$bundle" ] || { echo "loopback_nodes.sh: no bundle in dist/: run scripts/dist.sh build dist (or ./dev.sh dist), or pass --bundle FILE" >&2; exit 1; }
  fi
  [ -f "$bundle" ] || { echo "loopback_nodes.sh: bundle $bundle does not exist" >&2; exit 1; }
  case $n in ''|*[!0-9]*) echo "loopback_nodes.sh: N must be a number of nodes, got '$n'" >&2; exit 2 ;; esac
  [ "$n" -ge 1 ] && [ "$n" -le 16 ] || { echo "loopback_nodes.sh: N must be 1 to 16" >&2; exit 2; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  bundle=$(cd "$(dirname "$bundle")" && pwd)/$(basename "$bundle")
  if ls "$dir"/node*/sshd.pid >/dev/null 2>&1; then
    echo "loopback_nodes.sh: $dir already has nodes; stop them first (scripts/loopback_nodes.sh stop $dir)" >&2
    exit 1
  fi
  # sshd's privilege separation folder (as root; a user's own sshd does without).
  mkdir -p /run/sshd 2>/dev/null || true
  [ -f "$dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "ablate loopback nodes" -f "$dir/id_ed25519"
  : > "$dir/known_hosts"
  local user hosts=""
  user=$(id -un)
  for i in $(seq 1 "$n"); do
    local node=$dir/node$i port=""
    mkdir -p "$node"
    [ -f "$node/host_key" ] || ssh-keygen -q -t ed25519 -N '' -C "node$i" -f "$node/host_key"
    cp "$dir/id_ed25519.pub" "$node/authorized_keys"
    for _ in 1 2 3 4 5; do
      port=$(free_port)
      cat > "$node/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
HostKey $node/host_key
PidFile $node/sshd.pid
AuthorizedKeysFile $node/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp internal-sftp
EOF
      "$SSHD" -f "$node/sshd_config" -E "$node/sshd.log" || true
      for _ in $(seq 1 50); do accepts "$port" && break; sleep 0.1; done
      accepts "$port" && break
      rm -f "$node/sshd.pid"
      port=""
    done
    [ -n "$port" ] || { echo "loopback_nodes.sh: sshd for node$i did not start: $(tail -n 5 "$node/sshd.log" 2>/dev/null)" >&2; exit 1; }
    echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$node/host_key.pub")" >> "$dir/known_hosts"
    hosts="$hosts${hosts:+, }$user@127.0.0.1:$port"
  done
  cat > "$dir/pools.yaml" <<EOF
# Written by scripts/loopback_nodes.sh: $n sshd "nodes" on this machine's loopback, in place of
# rented ones (examples/pools-rented.yaml is the same pool for real nodes). No GPUs: CPU runs,
# one at a time per node.
pools:
  - name: rented
    kind: ssh
    hosts: [$hosts]
    identity_file: $dir/id_ed25519
    known_hosts: $dir/known_hosts
    host_keys: strict
    gpus_per_node: 0
    min_nodes: 0
    idle_exit: 1m
    bundle: $bundle
    worker: {bundle_dir: $dir/opt, work_dir: $dir/work, data_dir: $data, cpu_slots: 1}
EOF
  echo "loopback_nodes.sh: $n nodes: $hosts" >&2
  echo "$dir/pools.yaml"
}

stop() {
  local dir=$1
  [ -d "$dir" ] || { echo "loopback_nodes.sh: no folder $dir" >&2; exit 1; }
  dir=$(cd "$dir" && pwd)
  local stopped=0
  for pidfile in "$dir"/node*/sshd.pid; do
    [ -f "$pidfile" ] || continue
    kill "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
    stopped=$((stopped + 1))
  done
  # What the nodes still run (a worker the coordinator did not stop): every process started
  # from this folder's bundle.
  pkill -TERM -f "^$dir/opt/" 2>/dev/null || true
  echo "loopback_nodes.sh: stopped $stopped nodes in $dir" >&2
}

cmd=${1:-}
[ $# -ge 2 ] || usage
dir=$2
shift 2
case $cmd in
  start)
    n=2 bundle="" data="$HOME/.local/share/ablate/datasets"
    if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then n=$1; shift; fi
    while [ $# -gt 0 ]; do
      case $1 in
        --bundle) bundle=${2:?--bundle FILE}; shift 2 ;;
        --data-dir) data=${2:?--data-dir DATASETS}; shift 2 ;;
        *) echo "loopback_nodes.sh: unknown argument '$1'" >&2; usage ;;
      esac
    done
    start "$dir" "$n" "$bundle" "$data" ;;
  stop) stop "$dir" ;;
  *) usage ;;
esac
