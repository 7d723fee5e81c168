#!/usr/bin/env bash
# The same layout (p 2, t 2, d 2) on 2 hosts x 4 ranks (tensor pairs and data replicas inside a
# host, the pipeline across the link) and on 4 hosts x 2 ranks (only tensor pairs inside a host)
# gives the losses of one rank within 1e-5, with the traffic between hosts on their links.
source "$(dirname "$0")/lib.sh"
layout=(--set parallel.pipeline=2 --set parallel.tensor=2 --set parallel.data=2)

"$PTDP_HOST" run "$TINY" --nproc 1 --metrics "$WORK/one-rank.jsonl" >"$WORK/one-rank.log" 2>&1 ||
  { cat "$WORK/one-rank.log"; fail "the one-rank run failed"; }

for shape in 2x4 4x2; do
  hosts=${shape%x*} per_host=${shape#*x}
  cluster_up "$CLUSTER" "$hosts" || fail "cannot make $hosts hosts"
  before=$(host_rx_bytes 1)
  JOB_LOG_DIR="$WORK/$shape" JOB_TIMEOUT_S=300 "$CLUSTER_JOB" "$CLUSTER" "$PTDP_HOST" "$TINY" "$per_host" \
    "${layout[@]}" --metrics "$WORK/$shape.jsonl" || fail "the job on $hosts hosts x $per_host ranks failed"
  received=$(($(host_rx_bytes 1) - before))
  echo "$hosts hosts x $per_host ranks: host 1 received $received bytes over its link"
  # The pipeline's activations and gradients alone are several hundred KB over 5 steps.
  [ "$received" -gt 100000 ] || fail "host 1 received only $received bytes: the ranks did not talk over the link"
  /usr/bin/python3 "$PTDP_SOURCE_DIR/tests/cluster/compare_losses.py" "$WORK/one-rank.jsonl" "$WORK/$shape.jsonl" 1e-5 ||
    fail "$hosts hosts x $per_host ranks do not give the one-rank losses"
  cluster_down "$CLUSTER"
done
echo "PASS"
