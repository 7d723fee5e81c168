#!/usr/bin/env bash
# Every process of host 1 is killed mid-run (its PID namespace's first process, so its launcher
# and all its ranks go at once, as when a node dies): host 0's ranks stop within launch.timeout_s,
# each naming host 1 and the rank it lost, and no committed step is lost.
source "$(dirname "$0")/lib.sh"
timeout_s=5
exit_slack_s=3
ckpt="$WORK/ckpt"

cluster_up "$CLUSTER" 2 || fail "cannot make 2 hosts"
JOB_LOG_DIR="$WORK/job" JOB_TIMEOUT_S=300 "$CLUSTER_JOB" "$CLUSTER" "$PTDP_HOST" "$TINY" 4 \
  --set parallel.pipeline=2 --set parallel.tensor=2 --set parallel.data=2 \
  --set run.steps=100000 --set checkpoint.dir=\""$ckpt"\" --set checkpoint.every=2 \
  --set launch.timeout_s=$timeout_s --metrics "$WORK/m.jsonl" >"$WORK/job.out" 2>&1 &
job=$!
wait_for_steps "$WORK/m.jsonl" 6 180 $job || { cat "$WORK/job.out" "$WORK"/job/h*.log; fail "the job did not reach step 6"; }
before=$(committed_steps "$ckpt")
kill -KILL "$(cluster_host_pid "$CLUSTER" 1)"
killed=$(now)
echo "killed every process of host 1 after step $(metrics_steps "$WORK/m.jsonl"), committed: $(echo $before)"

expect_stop_within $job "$killed" $timeout_s $exit_slack_s
grep -E "peer [0-9]+ \((world rank [0-9]+, )?host $CLUSTER-h1\)|world rank [0-9]+ \(host $CLUSTER-h1\)" \
  "$WORK/job/h0.log" >/dev/null || fail "no rank of host 0 named host 1 and the rank it lost"
for step in $before; do
  [ -d "$ckpt/$step" ] || fail "$step, committed before host 1 died, is gone"
done
echo "PASS"
