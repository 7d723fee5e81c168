#!/usr/bin/env bash
# Host 1's link is cut mid-run (`ip link set ... down` on its bridge port) while p 2 runs across
# the two hosts: every rank on both sides stops within launch.timeout_s of the cut, each with one
# line naming the host and rank it lost; every step committed before the cut is still there; and
# the run resumes from the newest on 4 hosts x 2 ranks, resharding it.
source "$(dirname "$0")/lib.sh"
timeout_s=5
# The ranks stop when their wait has gone timeout_s without progress; their exit then takes at most
# this much more (closing UCX endpoints and the store), and no more.
exit_slack_s=3
ckpt="$WORK/ckpt"
layout=(--set parallel.pipeline=2 --set parallel.tensor=2 --set parallel.data=2)

cluster_up "$CLUSTER" 2 || fail "cannot make 2 hosts"
JOB_LOG_DIR="$WORK/job" JOB_TIMEOUT_S=300 "$CLUSTER_JOB" "$CLUSTER" "$PTDP_HOST" "$TINY" 4 "${layout[@]}" \
  --set run.steps=100000 --set checkpoint.dir=\""$ckpt"\" --set checkpoint.every=2 \
  --set launch.timeout_s=$timeout_s --metrics "$WORK/m.jsonl" >"$WORK/job.out" 2>&1 &
job=$!
wait_for_steps "$WORK/m.jsonl" 6 180 $job || { cat "$WORK/job.out" "$WORK"/job/h*.log; fail "the job did not reach step 6"; }
before=$(committed_steps "$ckpt")
cluster_link "$CLUSTER" 1 down
cut=$(now)
echo "cut host 1's link after step $(metrics_steps "$WORK/m.jsonl"), committed: $(echo $before)"

# Each host's launcher ends when its ranks do; the job when both have.
expect_stop_within $job "$cut" $timeout_s $exit_slack_s

# One line per stopping rank names the lost host and rank: host 0's name host 1, and back.
for side in 0 1; do
  other=$((1 - side))
  grep -E "waiting for peer [0-9]+ \((world rank [0-9]+, )?host $CLUSTER-h$other\)|world rank [0-9]+ \(host $CLUSTER-h$other\) failed|peer [0-9]+ \((world rank [0-9]+, )?host $CLUSTER-h$other\) unreachable" \
    "$WORK/job/h$side.log" >/dev/null || fail "no rank of host $side named host $other and its rank"
done

# Nothing committed is lost (a step half saved at the cut is staging, not committed).
for step in $before; do
  [ -d "$ckpt/$step" ] || fail "$step, committed before the cut, is gone"
done
last=$(newest_step "$ckpt")
[ "$last" -ge 2 ] || fail "no step was committed"

# Resume on 4 hosts x 2 ranks: the same layout placed otherwise, its shards read back resharded.
cluster_down "$CLUSTER"
cluster_up "$CLUSTER" 4 || fail "cannot make 4 hosts"
JOB_LOG_DIR="$WORK/resume" JOB_TIMEOUT_S=300 "$CLUSTER_JOB" "$CLUSTER" "$PTDP_HOST" "$TINY" 2 "${layout[@]}" \
  --set run.steps=$((last + 2)) --set checkpoint.dir=\""$ckpt"\" --set checkpoint.every=2 \
  --set launch.timeout_s=$timeout_s --metrics "$WORK/resumed.jsonl" >"$WORK/resume.out" 2>&1 ||
  { cat "$WORK/resume.out"; fail "resuming on 4 hosts failed"; }
grep -q "resumed from $ckpt at step $last" "$WORK/resume.out" || { cat "$WORK/resume.out"; fail "did not resume from step $last"; }
[ "$(newest_step "$ckpt")" -eq $((last + 2)) ] || fail "the resumed run did not commit step $((last + 2))"
echo "PASS"
