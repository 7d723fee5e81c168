#!/usr/bin/env bash
# A slow and lossy link (host 1's traffic limited in rate, and a share of its packets dropped) only
# slows the job: it finishes, with the one-rank losses, and its step time is measured against
# the same job over a clean link.
source "$(dirname "$0")/lib.sh"
rate=${SLOW_LINK_RATE:-10mbit}
loss=${SLOW_LINK_LOSS_PERCENT:-3}
steps=12
layout=(--set parallel.pipeline=2 --set parallel.tensor=2 --set parallel.data=2 --set run.steps=$steps)
command -v nft >/dev/null || { echo "SKIP: nft is not installed (scripts/setup.sh installs nftables)"; exit 77; }

"$PTDP_HOST" run "$TINY" --nproc 1 --set run.steps=$steps --metrics "$WORK/one-rank.jsonl" >"$WORK/one-rank.log" 2>&1 ||
  { cat "$WORK/one-rank.log"; fail "the one-rank run failed"; }
cluster_up "$CLUSTER" 2 || fail "cannot make 2 hosts"
for link in clean slow; do
  [ $link = slow ] && { cluster_degrade "$CLUSTER" 1 "$rate" "$loss" || fail "cannot slow host 1's link"; }
  JOB_LOG_DIR="$WORK/$link" JOB_TIMEOUT_S=400 "$CLUSTER_JOB" "$CLUSTER" "$PTDP_HOST" "$TINY" 4 "${layout[@]}" \
    --set launch.timeout_s=60 --metrics "$WORK/$link.jsonl" >"$WORK/$link.out" 2>&1 ||
    { cat "$WORK/$link.out"; fail "the job over the $link link failed"; }
  /usr/bin/python3 "$PTDP_SOURCE_DIR/tests/cluster/compare_losses.py" "$WORK/one-rank.jsonl" "$WORK/$link.jsonl" 1e-5 ||
    fail "the job over the $link link does not give the one-rank losses"
done
dropped=$(ip netns exec "ptdp-$CLUSTER-h1" nft list table inet ptdp_cluster | grep -o 'packets [0-9]*' | awk '{ n += $2 } END { print n + 0 }')
clean_s=$(/usr/bin/python3 "$PTDP_SOURCE_DIR/scripts/cluster/median_step_time.py" "$WORK/clean.jsonl")
slow_s=$(/usr/bin/python3 "$PTDP_SOURCE_DIR/scripts/cluster/median_step_time.py" "$WORK/slow.jsonl")
echo "median step time: clean link $clean_s s, $rate with $loss% loss $slow_s s ($dropped packets dropped)"
[ "$dropped" -gt 0 ] || fail "no packet was dropped: the lossy link was not in the path"
awk -v a="$slow_s" -v b="$clean_s" 'BEGIN { exit !(a > b) }' || fail "the slow link did not slow the job: was it applied?"
echo "PASS"
