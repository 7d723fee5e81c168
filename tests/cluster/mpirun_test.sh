#!/usr/bin/env bash
# Open MPI's mpirun starts the ranks: on one host (4 ranks, t 2 d 2; the store on loopback, its
# port from mpirun's job id, no variable given), and across two namespace hosts (8 ranks, p 2
# across them), with host_agent.sh as mpirun's launch agent where ssh would start its daemons on
# real nodes. Both give the one-rank losses; the manifest's launch table, which says 1 rank, is
# ignored with a note, since mpirun's world is the job's.
source "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: mpirun is not installed (scripts/setup.sh installs openmpi-bin)"; exit 77; }
# Root needs --allow-run-as-root; --bind-to none: Open MPI would pin every rank to one core, and
# 8 ranks share this machine's few.
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

"$PTDP_HOST" run "$TINY" --nproc 1 --metrics "$WORK/one-rank.jsonl" >"$WORK/one-rank.log" 2>&1 ||
  { cat "$WORK/one-rank.log"; fail "the one-rank run failed"; }
check() {
  /usr/bin/python3 "$PTDP_SOURCE_DIR/tests/cluster/compare_losses.py" "$WORK/one-rank.jsonl" "$WORK/$1.jsonl" 1e-5 ||
    fail "mpirun $1 does not give the one-rank losses"
  grep -q "note: launch.nproc_per_node and nnodes (nproc_per_node (1) \* nnodes (1) = 1) are ignored: mpirun started $2 ranks" \
    "$WORK/$1.log" || fail "mpirun $1: no note that the launch table is ignored"
}

cluster_up "$CLUSTER" 1 || fail "cannot make a host"
cluster_exec "$CLUSTER" 0 "${mpirun[@]}" -np 4 "$PTDP_HOST" run "$TINY" \
  --set parallel.tensor=2 --set parallel.data=2 --metrics "$WORK/one-host.jsonl" >"$WORK/one-host.log" 2>&1 ||
  { cat "$WORK/one-host.log"; fail "mpirun on one host failed"; }
cat "$WORK/one-host.log"
check one-host 4
cluster_down "$CLUSTER"

cluster_up "$CLUSTER" 2 || fail "cannot make 2 hosts"
secret="$WORK/secret"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret")
before=$(host_rx_bytes 1)
# mpirun runs in host 0's network namespace (its daemons call back to it over the bridge) but in
# the machine's PID namespace, from which host_agent.sh can enter every host's.
ip netns exec "ptdp-$CLUSTER-h0" "${mpirun[@]}" -np 8 -H "$CLUSTER-h0:4,$CLUSTER-h1:4" \
  --mca plm_rsh_agent "$PTDP_SOURCE_DIR/scripts/cluster/host_agent.sh" --mca plm_rsh_no_tree_spawn 1 \
  --mca oob_tcp_if_include eth0 \
  -x MASTER_ADDR="$(cluster_addr "$CLUSTER" 0)" -x PTDP_RENDEZVOUS_SECRET_FILE="$secret" -x UCX_NET_DEVICES=eth0 \
  "$PTDP_HOST" run "$TINY" --set parallel.pipeline=2 --set parallel.tensor=2 --set parallel.data=2 \
  --set 'plugins.options.communicator.transports="sm,tcp"' --metrics "$WORK/two-hosts.jsonl" \
  >"$WORK/two-hosts.log" 2>&1 || { cat "$WORK/two-hosts.log"; fail "mpirun across two hosts failed"; }
cat "$WORK/two-hosts.log"
received=$(($(host_rx_bytes 1) - before))
echo "host 1 received $received bytes over its link"
[ "$received" -gt 100000 ] || fail "host 1 received only $received bytes: its ranks did not run there"
check two-hosts 8
echo "PASS"
