#!/usr/bin/env bash
# torchrun (Debian's python3-torch, `python3 -m torch.distributed.run`) starts 4 ranks on one host
# as docs/launching.md writes it: --no_python (torchrun would put python in front of ptdp-host),
# --nproc_per_node (torch 1.13 knows no --nproc-per-node). The manifest gives parallel.data, and
# its launch table (1 rank) disagrees with torchrun's world of 4: the table is ignored with a
# note (it used to refuse the job), and the losses are the one-rank ones. Then one torchrun on each
# of two hosts (--nnodes 2 --node_rank I, its agents meeting at host 0's address) runs p 2 across
# them with the job's secret: the one-rank losses again.
source "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c "import torch.distributed.run" 2>/dev/null ||
  { echo "SKIP: torch is not installed for /usr/bin/python3 (scripts/setup.sh installs python3-torch)"; exit 77; }
torchrun=(/usr/bin/python3 -m torch.distributed.run)
# Debian 12's torch 1.13 under Python 3.11 reads its own default "--redirects 0" and "--tee 0" as
# None and stops ('NoneType' object has no attribute 'get'); a map naming no local rank of the
# job ("9:0") means no redirection and works on every version.
if /usr/bin/python3 -c "from torch.distributed.elastic.multiprocessing.api import Std; exit(Std.from_str('0') is None)"; then
  quirk=()
else
  quirk=(--redirects 9:0 --tee 9:0)
fi

"$PTDP_HOST" run "$TINY" --nproc 1 --metrics "$WORK/one-rank.jsonl" >"$WORK/one-rank.log" 2>&1 ||
  { cat "$WORK/one-rank.log"; fail "the one-rank run failed"; }
cluster_up "$CLUSTER" 1 || fail "cannot make a host"
cluster_exec "$CLUSTER" 0 "${torchrun[@]}" --standalone --nproc_per_node 4 "${quirk[@]}" --no_python \
  "$PTDP_HOST" run "$TINY" --set parallel.tensor=2 --set parallel.data=2 --metrics "$WORK/torchrun.jsonl" \
  >"$WORK/torchrun.log" 2>&1 || { cat "$WORK/torchrun.log"; fail "torchrun failed"; }
cat "$WORK/torchrun.log"
grep -q "note: launch.nproc_per_node and nnodes (nproc_per_node (1) \* nnodes (1) = 1) are ignored: torchrun started 4 ranks" \
  "$WORK/torchrun.log" || fail "no note that the launch table is ignored"
/usr/bin/python3 "$PTDP_SOURCE_DIR/tests/cluster/compare_losses.py" "$WORK/one-rank.jsonl" "$WORK/torchrun.jsonl" 1e-5 ||
  fail "torchrun does not give the one-rank losses"
cluster_down "$CLUSTER"

cluster_up "$CLUSTER" 2 || fail "cannot make 2 hosts"
secret="$WORK/secret"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret")
pids=()
for i in 0 1; do
  cluster_exec "$CLUSTER" $i env PTDP_RENDEZVOUS_SECRET_FILE="$secret" UCX_NET_DEVICES=eth0 \
    "${torchrun[@]}" --nnodes 2 --node_rank $i --nproc_per_node 4 --master_addr "$(cluster_addr "$CLUSTER" 0)" \
    --master_port 29500 "${quirk[@]}" --no_python "$PTDP_HOST" run "$TINY" \
    --set parallel.pipeline=2 --set parallel.tensor=2 --set parallel.data=2 \
    --set 'plugins.options.communicator.transports="sm,tcp"' --metrics "$WORK/two-hosts.jsonl" \
    >"$WORK/two-hosts-h$i.log" 2>&1 &
  pids+=($!)
done
for i in 0 1; do
  wait_bounded "${pids[$i]}" 300 || { cat "$WORK"/two-hosts-h*.log; fail "torchrun on host $i failed"; }
done
cat "$WORK/two-hosts-h0.log"
/usr/bin/python3 "$PTDP_SOURCE_DIR/tests/cluster/compare_losses.py" "$WORK/one-rank.jsonl" "$WORK/two-hosts.jsonl" 1e-5 ||
  fail "torchrun across two hosts does not give the one-rank losses"
echo "PASS"
