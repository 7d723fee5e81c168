#!/usr/bin/env bash
# Runs one ptdp job with ranks on every host of a cluster made by cluster.sh: one
# `ptdp-host run --node-rank I` per host (ptdp-host's own launcher places launch.nproc_per_node
# ranks on each of launch.nnodes hosts), the rendezvous store on host 0's address with a fresh
# secret only this job's hosts are given, comm-ucx over TCP between hosts and shared memory within
# a host. Exits with the first failing host's status (0 when every host's ranks finished).
#
#   job.sh NAME PTDP_HOST MANIFEST NPROC_PER_NODE [ptdp-host run options...]
#
# Each host's output goes to $JOB_LOG_DIR/hI.log (default: a temporary folder, said on stderr)
# and is copied to stdout prefixed "[hI] " when the job ends. JOB_PORT picks the store's port
# (default 29400), JOB_TRANSPORTS comm-ucx's transports (default "sm,tcp"), JOB_TIMEOUT_S bounds
# the whole job (default 600 s; then every host's launcher is stopped).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=cluster.sh
source "$here/cluster.sh"

[ $# -ge 4 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
name=$1 host_bin=$2 manifest=$3 nproc=$4
shift 4
hosts=$(cat "$(cluster_state "$name")/hosts" 2>/dev/null) || { echo "job: no cluster $name (cluster.sh up $name N)" >&2; exit 2; }
port=${JOB_PORT:-29400}
transports=${JOB_TRANSPORTS:-sm,tcp}
limit=${JOB_TIMEOUT_S:-600}
log_dir=${JOB_LOG_DIR:-}
if [ -z "$log_dir" ]; then log_dir=$(mktemp -d /tmp/ptdp-job-XXXXXX); echo "job: logs in $log_dir" >&2; fi
mkdir -p "$log_dir"

# The job's secret: in a file only root can read, which every host's ranks are pointed at (the
# hosts share the machine's file system, as cluster nodes share a home folder).
secret_file="$log_dir/secret"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret_file")

pids=()
for ((i = 0; i < hosts; i++)); do
  # UCX_NET_DEVICES=eth0: TCP between hosts goes over the host's link, never its loopback, which
  # every host has and which would lead a peer back into its own namespace.
  cluster_exec "$name" "$i" env PTDP_RENDEZVOUS_SECRET_FILE="$secret_file" UCX_NET_DEVICES=eth0 \
    "$host_bin" run "$manifest" --node-rank "$i" \
    --set launch.nnodes="$hosts" --set launch.nproc_per_node="$nproc" \
    --set launch.master_addr=\""$(cluster_addr "$name" 0)"\" --set launch.master_port="$port" \
    --set plugins.options.communicator.transports=\""$transports"\" "$@" \
    >"$log_dir/h$i.log" 2>&1 &
  pids+=($!)
done

# Bounded wait: every host's launcher, or the limit.
deadline=$((SECONDS + limit))
status=0
for ((i = 0; i < hosts; i++)); do
  while kill -0 "${pids[$i]}" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  if kill -0 "${pids[$i]}" 2>/dev/null; then
    echo "job: still running after ${limit} s; stopping every host's launcher" >&2
    for p in "${pids[@]}"; do kill -TERM $(cluster_tree "$p") 2>/dev/null; done
    status=124
  fi
  wait "${pids[$i]}"
  rc=$?
  [ $status -eq 0 ] && [ $rc -ne 0 ] && status=$rc
done
for ((i = 0; i < hosts; i++)); do sed "s/^/[h$i] /" "$log_dir/h$i.log"; done
rm -f "$secret_file"
exit $status
