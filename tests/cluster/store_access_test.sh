#!/usr/bin/env bash
# The rendezvous store seen from another host of the cluster while a job runs: a connection
# without the job's secret, and one with a wrong secret, are refused and logged by rank 0 with the
# address they came from; a flood of connections is capped (and said so in the log) while the job
# goes on to finish; and the secret appears in no log and no metrics.
source "$(dirname "$0")/lib.sh"
port=29400

cluster_up "$CLUSTER" 2 || fail "cannot make 2 hosts"
store="$(cluster_addr "$CLUSTER" 0)"
JOB_LOG_DIR="$WORK/job" JOB_PORT=$port JOB_TIMEOUT_S=400 "$CLUSTER_JOB" "$CLUSTER" "$PTDP_HOST" "$TINY" 1 \
  --set parallel.pipeline=2 --set parallel.data=1 --set run.steps=100000 \
  --metrics "$WORK/m.jsonl" >"$WORK/job.out" 2>&1 &
job=$!
wait_for_steps "$WORK/m.jsonl" 2 180 $job || { cat "$WORK/job.out" "$WORK"/job/h*.log; fail "the job did not start training"; }
secret=$(cat "$WORK/job/secret") || fail "no secret file"
[ ${#secret} -ge 32 ] || fail "the job's secret is only ${#secret} characters"

probe() { cluster_exec "$CLUSTER" 1 /usr/bin/python3 "$PTDP_SOURCE_DIR/tests/cluster/store_probe.py" "$store" $port "$@"; }
answer=$(probe no-secret) || fail "the probe without a secret could not talk to the store"
echo "without a secret: $answer"
[[ "$answer" == "refused: this store requires the job's secret, and the connection offered none" ]] ||
  fail "a connection without the secret was not refused: $answer"
answer=$(probe wrong-secret)
echo "with a wrong secret: $answer"
[[ "$answer" == "refused: wrong secret" ]] || fail "a connection with a wrong secret was not refused: $answer"
# A world of 2 may hold 2 * 2 + 16 = 20 connections; its ranks hold 2 of them.
answer=$(probe flood 60)
echo "60 connections at once: $answer"
greeted=$(echo "$answer" | awk '{ print $2 }')
[ "$greeted" -le 18 ] || fail "the store served $greeted connections beside the ranks', above its cap"

# Every connection beyond the cap is counted in the log, the flood's last second too (a report a
# second at most), while the job goes on training; then it is stopped as a scheduler would stop it.
sleep 1.5
trained=$(metrics_steps "$WORK/m.jsonl")
wait_for_steps "$WORK/m.jsonl" $((trained + 5)) 120 $job || fail "the job stopped training after the probes"
for pid in $(cluster_tree $job); do
  [ "$(cat /proc/$pid/comm 2>/dev/null)" = ptdp-host ] && kill -TERM "$pid" 2>/dev/null
done
wait_bounded $job 120
status=$?
[ $status -eq 75 ] || { cat "$WORK/job.out"; fail "the job did not stop cleanly on SIGTERM (status $status)"; }
host1=$(cluster_addr "$CLUSTER" 1)
for reason in "this store requires the job's secret, and the connection offered none" "wrong secret"; do
  grep -F "rendezvous: refused a connection from $host1:" "$WORK/job/h0.log" | grep -qF "$reason" ||
    fail "rank 0 did not log the refusal ($reason) with host 1's address"
done
closed=$(grep -oE "rendezvous: closed [0-9]+ connection\(s\) at once \(the latest from $host1:[0-9]+\): 20 are open" \
  "$WORK/job/h0.log" | awk '{ n += $3 } END { print n + 0 }')
[ "$closed" -eq $((60 - greeted)) ] || fail "rank 0 logged $closed connections closed at the cap, not $((60 - greeted))"
grep -h "rendezvous:" "$WORK/job/h0.log"

# The secret (and its file's name is fine to show, its content never).
if grep -rqF "$secret" "$WORK/job"/h*.log "$WORK/job.out" "$WORK/m.jsonl"; then
  fail "the secret appears in a log or the metrics"
fi
echo "PASS"
