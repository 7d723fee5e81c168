#!/usr/bin/env bash
# plan_scale_sweeps.sh against a built ptdp-host: exit 0, every sweep's table with its header and
# its number of rows, bubbles that match (p-1)/(v*m), and a one-line error with the documented
# exit status for a missing ptdp-host, a manifest validate refuses and an unknown argument.
#   plan_scale_sweeps_test.sh SCRIPT PTDP_HOST
set -uo pipefail
script=$1 host=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$script" --host "$host" > "$tmp/out.md" 2> "$tmp/err"
rc=$?
[[ $rc -eq 0 ]] || fail "planner exited $rc: $(cat "$tmp/err")"
[[ ! -s $tmp/err ]] || fail "planner wrote to stderr: $(cat "$tmp/err")"

# rows_of TITLE_PREFIX: the table rows (not header, not rule) under the heading that starts so.
rows_of() {
  awk -v t="### $1" 'index($0, t) == 1 { on = 1; next } /^### / { on = 0 }
                     on && /^\| [0-9]/ { print }' "$tmp/out.md"
}
# expect_table TITLE_PREFIX HEADER ROWS
expect_table() {
  grep -qF "### $1" "$tmp/out.md" || { fail "no table '$1'"; return; }
  awk -v t="### $1" -v h="$2" 'index($0, t) == 1 { on = 1; next } /^### / { on = 0 }
                               on && $0 == h { found = 1 } END { exit !found }' "$tmp/out.md" ||
    fail "table '$1' lacks the header: $2"
  local n
  n=$(rows_of "$1" | wc -l)
  [[ $n -eq $3 ]] || fail "table '$1' has $n rows, expected $3"
}
expect_table "(a) Tensor vs pipeline" \
  "| p | t | d | B | m | parameters | PFLOP/step | state GB/GPU | bubble (p-1)/(v·m) | bubble simulated | peak act. stage 0 | TP all-reduces/GPU/step | TP ring traffic GB/GPU/step |" 8
expect_table "(b1) Pipeline vs data" \
  "| p | t | d | B | m | parameters | PFLOP/step | state GB/GPU | bubble (p-1)/(v·m) | bubble simulated | peak act. stage 0 | DP ring traffic GB/GPU/step |" 12
expect_table "(b2) Tensor vs data" \
  "| p | t | d | B | m | parameters | PFLOP/step | state GB/GPU | bubble | TP all-reduces/GPU/step | TP ring traffic GB/GPU/step | DP ring traffic GB/GPU/step |" 12
expect_table "(c) Interleaved vs non-interleaved" \
  "| p | t | v | B | m | bubble formula | bubble simulated | bubble simulated, latency 0.1 | peak act. stage 0 | sends/step (pipeline) | v = 2 gain from the bubble (latency 0 / 0.1) |" 20
expect_table "(d) Scatter/gather" \
  "| p | t | v | B | m | bubble simulated | sends/step (pipeline) | MB/send/rank off | MB/send/rank on | GB/step between stages off | GB/step between stages on |" 6
expect_table "(e) Weak scaling" \
  "| GPUs | l | p | v | B | m | parameters | PFLOP/step | PFLOP/step/GPU | state GB/GPU | bubble (p-1)/(v·m) | bubble simulated | peak act. stage 0 | bubble-only efficiency |" 14

# Rows worked out by hand: the 39.1B model at p = 8, m = 32 (bubble 7/32, 1F1B keeps p
# microbatches on stage 0); the interleaved p = 8, m = 8 (7/16, and 7/8 for v = 1 so the bubble
# alone predicts 1.875/1.4375 = +30.4%); scatter/gather at t = 4 (b*s*h*2 bytes = 33.6 MB, a
# quarter on).
for row in \
    "| 8 | 1 | 1 | 32 | 32 | 39.10B | 21.3 | 94.8 | 0.2188 | 0.2188 | 8 | 0 | 0.0 |" \
    "| 8 | 1 | 2 | 8 | 8 | 0.4375 | 0.4375 | 0.6208 | 16 | 240 | +30.4% / +22.6% |" \
    "| 2 | 4 | 2 | 8 | 8 | 0.0625 | 48 | 33.6 | 8.4 | 6.4 | 1.6 |"; do
  grep -qxF "$row" "$tmp/out.md" || fail "missing row: $row"
done
# With no transfer latency every simulated bubble is the paper's formula.
for title in "(a) Tensor" "(b1) Pipeline" "(e) Weak"; do
  col=$([[ $title == "(e) Weak" ]] && echo 12 || echo 10)
  rows_of "$title" | awk -F' *\\| *' -v c="$col" '$c != $(c + 1) { print; bad = 1 } END { exit bad }' ||
    fail "table '$title': simulated bubble differs from the formula"
done

# Bad input: one line naming the thing, and the documented exit status.
expect_error() {  # RC PATTERN ARGS...
  local want=$1 pattern=$2; shift 2
  "$script" "$@" > "$tmp/o" 2> "$tmp/e"
  local got=$?
  [[ $got -eq $want ]] || fail "'$*' exited $got, expected $want"
  [[ $(wc -l < "$tmp/e") -eq 1 ]] || fail "'$*' wrote not one line to stderr: $(cat "$tmp/e")"
  grep -qE "$pattern" "$tmp/e" || fail "'$*': stderr '$(cat "$tmp/e")' does not match $pattern"
}
expect_error 2 "ptdp-host $tmp/none: not an executable file" --host "$tmp/none"
expect_error 2 "unknown argument '--stages'" --host "$host" --stages 4
expect_error 2 "manifest $tmp/none.toml: cannot read the file" --host "$host" --manifest "$tmp/none.toml"
printf '[model]\nlayers = 2\nhidden = 64\nheads = 4\nseq_len = 16\nvocab = 256\nwidth = 3\n' > "$tmp/bad.toml"
expect_error 1 "sweep a layout .*refused by ptdp-host validate: .*model.width: unknown key" \
  --host "$host" --manifest "$tmp/bad.toml"

[[ $failures -eq 0 ]] && echo "plan_scale_sweeps: all checks passed"
exit $((failures > 0))
