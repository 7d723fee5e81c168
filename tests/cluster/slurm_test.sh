#!/usr/bin/env bash
# Slurm starts the ranks: slurmctld, one slurmd per host and munge, from a generated minimal
# slurm.conf (scripts/cluster/slurm.sh), on two namespace hosts of 4 CPUs each.
#  - `srun -N 1 -n 4` with no variable and no secret: every rank is on one node, so the store
#    stays on loopback and the job trains (it used to refuse on rank 0 and hang the others);
#  - `srun -N 2 -n 8` without a secret: every rank refuses at once, in one line each, instead of
#    rank 0 alone while the others wait out the timeout;
#  - `srun -N 2 -n 8` with the secret, and an sbatch script like docs/launching.md's: the
#    one-rank losses.
source "$(dirname "$0")/lib.sh"
for tool in slurmctld slurmd munged srun sbatch; do
  command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (scripts/setup.sh installs slurm-wlm and munge)"; exit 77; }
done
slurm="$PTDP_SOURCE_DIR/scripts/cluster/slurm.sh"
layout=(--set parallel.pipeline=2 --set parallel.tensor=2 --set 'plugins.options.communicator.transports="sm,tcp"')
check() {
  /usr/bin/python3 "$PTDP_SOURCE_DIR/tests/cluster/compare_losses.py" "$WORK/one-rank.jsonl" "$WORK/$1.jsonl" 1e-5 ||
    fail "$1 does not give the one-rank losses"
}
"$PTDP_HOST" run "$TINY" --nproc 1 --metrics "$WORK/one-rank.jsonl" >"$WORK/one-rank.log" 2>&1 ||
  { cat "$WORK/one-rank.log"; fail "the one-rank run failed"; }

cluster_up "$CLUSTER" 2 || fail "cannot make 2 hosts"
"$slurm" up "$CLUSTER" 4 || fail "Slurm did not start"
eval "$("$slurm" env "$CLUSTER")"
on_host0() { cluster_exec "$CLUSTER" 0 env UCX_NET_DEVICES=eth0 "$@"; }

# One node, nothing set.
on_host0 timeout 120 srun -N 1 -n 4 "$PTDP_HOST" run "$TINY" --set parallel.tensor=2 \
  --metrics "$WORK/srun-one-node.jsonl" >"$WORK/srun-one-node.log" 2>&1 ||
  { cat "$WORK/srun-one-node.log"; fail "srun -N 1 -n 4 failed"; }
cat "$WORK/srun-one-node.log"
check srun-one-node

# Two nodes without a secret: all 8 refuse, at once.
start=$(now)
on_host0 timeout 120 srun -N 2 -n 8 "$PTDP_HOST" run "$TINY" "${layout[@]}" >"$WORK/no-secret.log" 2>&1 &&
  fail "srun across two nodes without a secret trained"
took=$(elapsed_since "$start")
refusals=$(grep -c "can be reached from other machines, and without a secret" "$WORK/no-secret.log")
echo "without a secret: $refusals of 8 ranks refused, the job ended after $took s"
[ "$refusals" -eq 8 ] || { cat "$WORK/no-secret.log"; fail "$refusals of 8 ranks refused"; }
awk -v t="$took" 'BEGIN { exit !(t < 15) }' || fail "the refusal took $took s: ranks waited for the store"

# Two nodes with the secret: srun, then sbatch.
secret="$WORK/secret"
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$secret")
on_host0 PTDP_RENDEZVOUS_SECRET_FILE="$secret" timeout 120 srun -N 2 -n 8 "$PTDP_HOST" run "$TINY" "${layout[@]}" \
  --metrics "$WORK/srun-two-nodes.jsonl" >"$WORK/srun-two-nodes.log" 2>&1 ||
  { cat "$WORK/srun-two-nodes.log"; fail "srun -N 2 -n 8 failed"; }
cat "$WORK/srun-two-nodes.log"
check srun-two-nodes

cat >"$WORK/job.sbatch" <<SBATCH
#!/bin/bash
#SBATCH --nodes=2 --ntasks-per-node=4 --time=00:10:00 --output=$WORK/sbatch.out
export PTDP_RENDEZVOUS_SECRET_FILE=$secret UCX_NET_DEVICES=eth0
srun $PTDP_HOST run $TINY ${layout[*]} --metrics $WORK/sbatch.jsonl
SBATCH
job_id=$(on_host0 sbatch --parsable "$WORK/job.sbatch") || fail "sbatch refused the script"
echo "sbatch: job $job_id"
deadline=$((SECONDS + 180))
while [ $SECONDS -lt $deadline ]; do
  state=$(on_host0 scontrol show job "$job_id" 2>/dev/null | grep -oE 'JobState=[A-Z_]+' | cut -d= -f2)
  case "$state" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
  sleep 0.5
done
cat "$WORK/sbatch.out"
[ "$state" = COMPLETED ] || fail "the sbatch job ended $state"
check sbatch
echo "PASS"
