#!/usr/bin/env bash
# A cluster on one machine: N hosts, each a network namespace joined to one bridge, and each with
# its own IPC, UTS, mount (a private /dev/shm) and PID namespaces, so that nothing a process does
# on one host (shared memory, SysV IPC, cross-memory attach by pid) reaches another host except
# through its network link. Every name and address it makes belongs to the cluster alone: the
# bridge lives in a namespace of its own, no interface or address is added to the machine's own
# namespace, and `down` removes all of it. Needs root (CI runs as root).
#
#   cluster.sh up NAME N        make hosts NAME-h0 .. NAME-h(N-1), addresses 10.213.X.1 .. N
#   cluster.sh exec NAME I CMD  run CMD on host I (all its namespaces); its exit code
#   cluster.sh addr NAME I      host I's address
#   cluster.sh link NAME I up|down     cut or restore host I's link to the bridge
#   cluster.sh degrade NAME I [RATE [LOSS%]]  slow (tbf) and lossy (nftables) link for host I; none: clean
#   cluster.sh down NAME        stop every process of the cluster's hosts and remove it all
#   cluster.sh check            exit 0 when this machine can make a cluster, else say why (exit 77)
#
# NAME is at most 8 characters of [a-z0-9] (netns names carry it). Source this file to call the
# cluster_* functions directly (the tests do).
set -uo pipefail

CLUSTER_STATE_ROOT=${CLUSTER_STATE_ROOT:-/run/ptdp-cluster}
# How long `up` waits for a host's namespaces to exist: bounded, never forever.
CLUSTER_START_TRIES=${CLUSTER_START_TRIES:-100}

cluster_die() { echo "cluster: $*" >&2; return 1; }

# Why this machine cannot host a cluster, or nothing (exit 0) when it can.
cluster_check() {
  if [ "$(id -u)" -ne 0 ]; then echo "cluster: needs root (network namespaces and bridges)"; return 77; fi
  local tool
  for tool in ip unshare nsenter tc awk; do
    command -v "$tool" >/dev/null 2>&1 || { echo "cluster: $tool is not installed (apt-get install iproute2 util-linux)"; return 77; }
  done
  local probe="ptdpprobe$$"
  if ! ip netns add "$probe" 2>/dev/null; then echo "cluster: cannot create a network namespace here (ip netns add failed)"; return 77; fi
  local ok=0
  ip -n "$probe" link add br0 type bridge 2>/dev/null || ok=1
  ip netns exec "$probe" unshare --ipc --uts --mount --pid --fork true 2>/dev/null || ok=2
  ip netns del "$probe"
  [ $ok -eq 1 ] && { echo "cluster: cannot create a bridge in a network namespace (no bridge module?)"; return 77; }
  [ $ok -eq 2 ] && { echo "cluster: cannot unshare IPC, UTS, mount and PID namespaces"; return 77; }
  return 0
}

# The third octet of the cluster's /24: from its name, so two clusters at once rarely share one
# (and never share an address outside their own namespaces anyway: each has its own bridge).
cluster_subnet() {
  local sum
  sum=$(printf '%s' "$1" | cksum | cut -d' ' -f1)
  echo "10.213.$((sum % 250 + 1))"
}

cluster_addr() { echo "$(cluster_subnet "$1").$(($2 + 1))"; }

cluster_state() { echo "$CLUSTER_STATE_ROOT/$1"; }

# Host I's PID 1 (in the machine's PID namespace): nsenter joins all of the host's namespaces through it.
cluster_host_pid() { cat "$(cluster_state "$1")/h$2.pid"; }

cluster_up() {
  local name=$1 n=$2 i
  [[ "$name" =~ ^[a-z0-9]{1,8}$ ]] || { cluster_die "name '$name': 1 to 8 of [a-z0-9]"; return 1; }
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] || { cluster_die "hosts '$n': 1 to 64"; return 1; }
  local state
  state=$(cluster_state "$name")
  [ -e "$state" ] && { cluster_die "$name exists ($state); cluster.sh down $name first"; return 1; }
  mkdir -p "$state/machine-proc" && echo "$n" >"$state/hosts"
  local sw="ptdp-$name-sw" subnet
  subnet=$(cluster_subnet "$name")
  # The hosts' names resolve on every host, as a cluster's DNS would have them (mpirun and Slurm
  # name nodes); each host sees this file as its /etc/hosts, the machine's own is untouched.
  {
    echo "127.0.0.1 localhost"
    for ((i = 0; i < n; i++)); do echo "$subnet.$((i + 1)) $name-h$i"; done
  } >"$state/etc-hosts"
  ip netns add "$sw" || return 1
  ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up || return 1
  local ns
  for ((i = 0; i < n; i++)); do
    ns="ptdp-$name-h$i"
    ip netns add "$ns" || return 1
    # The veth pair is made inside the two namespaces at once: nothing appears on the machine.
    ip -n "$sw" link add "port$i" type veth peer name eth0 netns "$ns" || return 1
    ip -n "$sw" link set "port$i" master br0 up || return 1
    ip -n "$ns" link set lo up && ip -n "$ns" link set eth0 up || return 1
    ip -n "$ns" addr add "$subnet.$((i + 1))/24" dev eth0 || return 1
    # The host's other namespaces: PID 1 mounts its own /proc and /dev/shm and then waits;
    # everything run on the host joins them through it. The machine's /proc stays reachable at
    # $state/machine-proc, so that a launch agent running on one host can enter another
    # (host_agent.sh, for mpirun); nothing else of the machine's processes shows on a host.
    ip netns exec "$ns" unshare --ipc --uts --mount --pid --fork --propagation private \
      sh -c "hostname $name-h$i && mount --bind /proc '$state/machine-proc' && mount -t proc proc /proc &&
             mount -t tmpfs -o mode=1777,size=2g tmpfs /dev/shm && mount --bind '$state/etc-hosts' /etc/hosts &&
             touch /dev/shm/.up && exec sleep infinity" \
      </dev/null >/dev/null 2>&1 &
    local unshare_pid=$! tries=0 child=""
    # Not a job of this shell: `down` kills it, and the shell would report that as a failure.
    disown "$unshare_pid" 2>/dev/null
    while [ $tries -lt "$CLUSTER_START_TRIES" ]; do
      child=$(cat "/proc/$unshare_pid/task/$unshare_pid/children" 2>/dev/null | tr -d ' ')
      if [ -n "$child" ] && [ "$(readlink "/proc/$child/exe" 2>/dev/null)" != "$(readlink /proc/$unshare_pid/exe)" ] &&
        nsenter -t "$child" --mount test -e /dev/shm/.up 2>/dev/null; then break; fi
      tries=$((tries + 1))
      sleep 0.05
    done
    [ $tries -lt "$CLUSTER_START_TRIES" ] || { cluster_die "host $i did not start"; return 1; }
    echo "$unshare_pid" >"$state/h$i.unshare"
    echo "$child" >"$state/h$i.pid"
  done
}

cluster_exec() {
  local name=$1 i=$2
  shift 2
  local pid
  pid=$(cluster_host_pid "$name" "$i") || return 1
  nsenter -t "$pid" --net --ipc --uts --mount --pid --wd="$PWD" -- "$@"
}

# PID and every process below it, deepest first (to signal a process tree that crosses into a
# host's PID namespace, which nsenter does not forward signals into).
cluster_tree() {
  local pid=$1 child
  for child in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do cluster_tree "$child"; done
  echo "$pid"
}

cluster_link() {
  local name=$1 i=$2 state=$3
  ip -n "ptdp-$name-sw" link set "port$i" "$state"
}

# A slow and lossy link for host I: its traffic both ways limited to RATE (tc's tbf, e.g.
# "20mbit") and PERCENT of its packets dropped at random (nftables), or back to a clean link with
# no arguments. Not netem: kernels built without CONFIG_NET_SCH_NETEM (this project's test
# machine's) lack it, while tbf and nftables are in every Debian kernel. The queue tbf keeps is
# the delay a slow link adds.
cluster_degrade() {
  local name=$1 i=$2 rate=${3:-} loss=${4:-0}
  local ns="ptdp-$name-h$i" sw="ptdp-$name-sw"
  ip netns exec "$ns" tc qdisc del dev eth0 root 2>/dev/null
  ip netns exec "$sw" tc qdisc del dev "port$i" root 2>/dev/null
  ip netns exec "$ns" nft delete table inet ptdp_cluster 2>/dev/null
  [ -z "$rate" ] && return 0
  ip netns exec "$ns" tc qdisc replace dev eth0 root tbf rate "$rate" burst 32kbit latency 400ms &&
    ip netns exec "$sw" tc qdisc replace dev "port$i" root tbf rate "$rate" burst 32kbit latency 400ms || return 1
  [ "$loss" = 0 ] && return 0
  command -v nft >/dev/null || { cluster_die "nft is not installed (apt-get install nftables)"; return 1; }
  ip netns exec "$ns" nft -f - <<NFT
table inet ptdp_cluster {
  chain out { type filter hook output priority 0; oif "eth0" numgen random mod 100 < $loss counter drop; }
  chain in { type filter hook input priority 0; iif "eth0" numgen random mod 100 < $loss counter drop; }
}
NFT
}

# Idempotent: removes whatever of the cluster exists, so it is safe on every exit path.
cluster_down() {
  local name=$1 state i pid
  state=$(cluster_state "$name")
  # A munged that slurm.sh started for the cluster runs on the machine, not on a host.
  [ -f "$state/slurm/munged.pid" ] && kill -TERM "$(cat "$state/slurm/munged.pid")" 2>/dev/null
  if [ -f "$state/hosts" ]; then
    for f in "$state"/h*.pid "$state"/h*.unshare; do
      [ -f "$f" ] || continue
      pid=$(cat "$f")
      # Killing a PID namespace's first process kills every process in it.
      [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    done
    for f in "$state"/h*.unshare; do
      [ -f "$f" ] || continue
      pid=$(cat "$f")
      for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    done
  fi
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^ptdp-$name-(h[0-9]+|sw)$"); do
    ip netns del "$ns"
  done
  rm -rf "$state"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  cmd=${1:-}
  shift || true
  case "$cmd" in
    check) cluster_check ;;
    up) cluster_up "$@" || { cluster_down "$1"; exit 1; } ;;
    exec) cluster_exec "$@" ;;
    addr) cluster_addr "$@" ;;
    link) cluster_link "$@" ;;
    degrade) cluster_degrade "$@" ;;
    down) cluster_down "$@" ;;
    *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
fi
