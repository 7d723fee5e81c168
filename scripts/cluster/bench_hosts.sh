#!/usr/bin/env bash
# Step time of one job placed on 1, 2 and 4 hosts of a cluster on this machine (cluster.sh):
# the same manifest and layout, 8 ranks as 1 x 8, 2 x 4 and 4 x 2, shared memory inside a host and
# TCP over the namespace links between hosts. Prints the median step time of each (the first
# step, start-up, left out). Needs root; makes and removes its own clusters.
#
#   bench_hosts.sh PTDP_HOST MANIFEST STEPS [ptdp-host run options...]
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=cluster.sh
source "$here/cluster.sh"
[ $# -ge 3 ] || { sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
host_bin=$1 manifest=$2 steps=$3
shift 3
why=$(cluster_check) || { echo "$why"; exit 77; }
name="b$(($$ % 1000000))"
work=$(mktemp -d /tmp/ptdp-bench-hosts-XXXXXX)
trap 'cluster_down "$name"; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

for shape in 1x8 2x4 4x2; do
  hosts=${shape%x*} per_host=${shape#*x}
  cluster_up "$name" "$hosts" || exit 1
  JOB_LOG_DIR="$work/$shape" "$here/job.sh" "$name" "$host_bin" "$manifest" "$per_host" --set run.steps="$steps" \
    "$@" --metrics "$work/$shape.jsonl" >"$work/$shape.out" 2>&1 || { cat "$work/$shape.out"; exit 1; }
  median=$(/usr/bin/python3 "$here/median_step_time.py" "$work/$shape.jsonl") || exit 1
  echo "$hosts host(s) x $per_host ranks: median step time $median s over steps 2-$steps"
  cluster_down "$name"
done
