#!/usr/bin/env bash
# A remote-shell stand-in for a cluster made by cluster.sh: `host_agent.sh NAME-hI COMMAND...`
# runs COMMAND (one shell command line, as ssh would) on host I, in all five of its namespaces.
# Open MPI's mpirun uses it as its launch agent (--mca plm_rsh_agent) to start its daemon on each
# host, where it would use ssh between real nodes. It works from the machine or from any host of
# the cluster: it reaches the other host's namespaces through the machine's /proc, which every
# host keeps at $CLUSTER_STATE_ROOT/NAME/machine-proc.
set -euo pipefail
state_root=${CLUSTER_STATE_ROOT:-/run/ptdp-cluster}
target=$1
shift
[[ "$target" =~ ^([a-z0-9]+)-h([0-9]+)$ ]] || { echo "host_agent: '$target' is not a cluster host (NAME-hI)" >&2; exit 255; }
name=${BASH_REMATCH[1]} host=${BASH_REMATCH[2]}
pid=$(cat "$state_root/$name/h$host.pid") || { echo "host_agent: no host $target" >&2; exit 255; }
ns="$state_root/$name/machine-proc/$pid/ns"
[ -e "$ns/net" ] || ns="/proc/$pid/ns"  # on the machine itself
exec nsenter --net="$ns/net" --ipc="$ns/ipc" --uts="$ns/uts" --mount="$ns/mnt" --pid="$ns/pid" --wd="$PWD" \
  -- sh -c "$*"
