# Sourced by every cluster test (tests/cluster/*_test.sh): skips (exit 77, which ctest reports
# as skipped) with the reason where this machine cannot make a cluster, gives the test a cluster
# name and a work folder of its own, and removes both on every exit path.
# The test is run with PTDP_HOST (the ptdp-host binary) and PTDP_SOURCE_DIR set.
set -uo pipefail
: "${PTDP_HOST:?PTDP_HOST: the ptdp-host to test}" "${PTDP_SOURCE_DIR:?PTDP_SOURCE_DIR: the source tree}"
# shellcheck source=../../scripts/cluster/cluster.sh
source "$PTDP_SOURCE_DIR/scripts/cluster/cluster.sh"
CLUSTER_JOB="$PTDP_SOURCE_DIR/scripts/cluster/job.sh"
TINY="$PTDP_SOURCE_DIR/tests/cluster/tiny.toml"

if ! why=$(cluster_check); then
  echo "SKIP: $why"
  exit 77
fi

# Short and unique among tests running at once: netns names carry it.
CLUSTER="t$(($$ % 1000000))"
WORK=$(mktemp -d "/tmp/ptdp-cluster-test-XXXXXX")
cleanup() {
  cluster_down "$CLUSTER"
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

fail() {
  echo "FAIL: $*"
  exit 1
}

# Bytes host I has received over its link so far.
host_rx_bytes() { cluster_exec "$CLUSTER" "$1" cat /sys/class/net/eth0/statistics/rx_bytes; }

# Committed steps of a ckpt-fs folder, one a line ("step-00000004").
committed_steps() { ls "$1" 2>/dev/null | grep -E '^step-[0-9]+$' || true; }

# The newest committed step's number (0 when none).
newest_step() {
  local last
  last=$(committed_steps "$1" | tail -1)
  [ -n "$last" ] && echo $((10#${last#step-})) || echo 0
}

# Step lines a --metrics log holds (its header not counted).
metrics_steps() {
  local n=0
  [ -f "$1" ] && n=$(grep -c '"step"' "$1")
  echo "${n:-0}"
}

# Waits until the metrics log $1 holds $2 steps, for at most $3 seconds, while process $4 lives.
wait_for_steps() {
  local deadline=$((SECONDS + $3))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(metrics_steps "$1")" -ge "$2" ] && return 0
    kill -0 "$4" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# Waits for background process $1 for at most $2 seconds; its exit code, or 124 after killing
# its process tree when it outlived them.
wait_bounded() {
  local deadline=$((SECONDS + $2))
  while kill -0 "$1" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  if kill -0 "$1" 2>/dev/null; then
    kill -KILL $(cluster_tree "$1") 2>/dev/null
    wait "$1" 2>/dev/null
    return 124
  fi
  wait "$1"
}

now() { date +%s.%N; }
elapsed_since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }

# After a fault at time $2 (now()), waits for job $1 and checks that it stopped with a failure
# within launch.timeout_s ($3) of the fault, plus what the ranks' exit takes ($4 s): a rank stops
# once its wait has gone timeout_s without progress, and the last progress was before the fault.
expect_stop_within() {
  local job=$1 fault_at=$2 timeout_s=$3 slack_s=$4 status took
  wait_bounded "$job" $((timeout_s * 6 + 30))
  status=$?
  took=$(elapsed_since "$fault_at")
  cat "$WORK/job.out"
  echo "the job ended with status $status, $took s after the fault (launch.timeout_s = $timeout_s)"
  [ $status -ne 0 ] && [ $status -ne 124 ] || fail "the job did not stop with a failure (status $status)"
  awk -v t="$took" -v limit=$((timeout_s + slack_s)) 'BEGIN { exit !(t <= limit) }' ||
    fail "the ranks took $took s to stop, more than launch.timeout_s ($timeout_s s) + $slack_s s"
}
