#!/bin/sh
# Stands in for `srun -n N` on one machine, for testing `ptdp-host ab --launcher`: starts N copies
# of the command, each with the variables srun gives a task, and exits 1 if any copy fails.
# Usage: local_srun.sh N COMMAND [ARG]...
n=$1
shift
pids=""
i=0
while [ "$i" -lt "$n" ]; do
  SLURM_PROCID=$i SLURM_NTASKS=$n SLURM_LOCALID=$i SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=$n \
    SLURM_STEP_NODELIST=localhost SLURM_JOB_ID=$$ SLURM_STEP_ID=0 "$@" &
  pids="$pids $!"
  i=$((i + 1))
done
status=0
for pid in $pids; do
  wait "$pid" || status=1
done
exit $status
