#!/usr/bin/env bash
# Plans the paper's 4- and 8-GPU sweeps on the CPU: every layout is checked by `ptdp-host validate`
# (world size, divisibility, parameter count, FLOPs of a step) and every pipelined one has its
# schedule verified and simulated by `ptdp-host schedule` with t_f = 1, t_b = 2. Prints one
# markdown table per sweep: (a) tensor vs pipeline (Figure 13), (b) pipeline vs data and tensor vs
# data (Figures 14, 15), (c) interleaved vs non-interleaved (Figure 12), (d) scatter/gather
# (Figure 18), (e) weak scaling 1 -> 8 GPUs (Figure 11, Table 1). Nothing here runs a model: the
# bubbles are simulated schedules and the traffic columns are arithmetic on the layout.
#
#   scripts/sweeps/plan_scale_sweeps.sh [--host PATH] [--manifest PATH]
#
# --host      ptdp-host to use (default: $PTDP_HOST, else build-cpu/bin/ptdp-host)
# --manifest  base manifest the layouts override with --set (default: examples/gpt-1gpu.toml)
# Exit status: 0 all planned, 1 a layout was refused by validate or schedule, 2 bad usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
me=$(basename "$0")
host=${PTDP_HOST:-$root/build-cpu/bin/ptdp-host}
manifest=$root/examples/gpt-1gpu.toml

usage() { sed -n '/^#   scripts/,/^# Exit status/s/^# \{0,1\}//p' "$0"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --host) [[ $# -ge 2 ]] || { echo "$me: --host needs a path" >&2; exit 2; }; host=$2; shift 2 ;;
    --manifest) [[ $# -ge 2 ]] || { echo "$me: --manifest needs a path" >&2; exit 2; }; manifest=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "$me: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x $host ]] || { echo "$me: ptdp-host $host: not an executable file (build it: cmake --build build-cpu --target ptdp-host)" >&2; exit 2; }
[[ -r $manifest ]] || { echo "$me: manifest $manifest: cannot read the file" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
index=$work/index.tsv
: > "$index"
n=0

# plan SWEEP LAYERS HIDDEN HEADS P T D V B GLOBAL_B SCATTER_GATHER [LATENCY]
# Validates one layout and, for p > 1, verifies and simulates its schedule (again with a
# transfer latency when LATENCY is given); files go to $work/N.*, one line to the index.
plan() {
  local sweep=$1 l=$2 h=$3 a=$4 p=$5 t=$6 d=$7 v=$8 b=$9 B=${10} sg=${11} latency=${12:-}
  local what="sweep $sweep layout l=$l h=$h p=$p t=$t d=$d v=$v b=$b B=$B scatter_gather=$sg"
  local sched=sched-1f1b
  [[ $v -gt 1 ]] && sched=sched-interleaved
  n=$((n + 1))
  # --manifest-only: the GPU manifests' plugins need not be built on the planning machine.
  if ! "$host" validate --manifest-only "$manifest" \
      --set model.layers="$l" --set model.hidden="$h" --set model.heads="$a" \
      --set model.seq_len=2048 --set model.vocab=51200 \
      --set parallel.pipeline="$p" --set parallel.tensor="$t" --set parallel.data="$d" \
      --set parallel.virtual_stages="$v" --set parallel.micro_batch="$b" --set parallel.global_batch="$B" \
      --set parallel.scatter_gather="$sg" --set parallel.recompute=full \
      --set plugins.scheduler="$sched" --set launch.nproc_per_node=$((p * t * d)) \
      > "$work/$n.validate" 2> "$work/$n.err"; then
    echo "$me: $what: refused by ptdp-host validate: $(head -n 1 "$work/$n.err")" >&2
    exit 1
  fi
  if [[ $p -gt 1 ]]; then
    local m=$((B / (b * d))) i=0
    for L in 0 $latency; do
      if ! "$host" schedule --scheduler "$sched" --stages "$p" --chunks "$v" --microbatches "$m" \
          --t-forward 1 --t-backward 2 --transfer-latency "$L" --json > "$work/$n.sched$i.json" 2> "$work/$n.err"; then
        echo "$me: $what: ptdp-host schedule --stages $p --chunks $v --microbatches $m failed:" \
             "$(head -n 1 "$work/$n.err")" >&2
        exit 1
      fi
      i=$((i + 1))
    done
  fi
  printf '%s\t' "$n" "$sweep" "$l" "$h" "$p" "$t" "$d" "$v" "$b" "$B" "$sg" >> "$index"
  printf '%s\n' "${latency:-0}" >> "$index"
}

# (a) Figure 13 in miniature: 39.1B GPT (Table 1's l 48, h 8192, a 64) on 8 GPUs, p*t = 8, d = 1,
#     the paper's global batches 32 and 128.
for B in 32 128; do
  for pt in "1 8" "2 4" "4 2" "8 1"; do
    read -r p t <<< "$pt"
    plan a 48 8192 64 "$p" "$t" 1 1 1 "$B" false
  done
done
# (b) Figures 14 and 15 in miniature: the paper's 5.9B GPT (l 32, h 3840, a 32) on 8 GPUs,
#     (p, d) with t = 1 and (t, d) with p = 1, global batches 32, 128, 512.
for B in 32 128 512; do
  for xd in "1 8" "2 4" "4 2" "8 1"; do
    read -r x d <<< "$xd"
    plan b14 32 3840 32 "$x" 1 "$d" 1 1 "$B" false
  done
done
for B in 32 128 512; do
  for xd in "1 8" "2 4" "4 2" "8 1"; do
    read -r x d <<< "$xd"
    plan b15 32 3840 32 1 "$x" "$d" 1 1 "$B" false
  done
done
# (c) Figure 12: the 39.1B GPT at p = 4 (t = 2) and p = 8 (t = 1), v = 1 and 2, B = p .. 5p as in
#     the paper's sweep at p = 12; a second simulation with a transfer latency of 0.1 t_f.
for pt in "4 2" "8 1"; do
  read -r p t <<< "$pt"
  for B in 8 16 24 32 40; do
    for v in 1 2; do
      plan c 48 8192 64 "$p" "$t" 1 "$v" 1 "$B" true 0.1
    done
  done
done
# (d) Figure 18: the interleaved 39.1B GPT where tensor ranks exist on both ends of a transfer,
#     scatter/gather off and on (the schedule does not change; the bytes per rank do).
for pt in "4 2" "2 4"; do
  read -r p t <<< "$pt"
  for B in 8 24 40; do
    for sg in false true; do
      plan d 48 8192 64 "$p" "$t" 1 2 1 "$B" "$sg"
    done
  done
done
# (e) Weak scaling, Figure 11 style: h 8192, a 64, 6 layers per GPU (5.3B on 1 GPU .. 39.1B on 8),
#     one pipeline stage per GPU, the paper's global batches 8 and 128; v = 2 as Table 1 ran.
for B in 8 128; do
  for gpus in 1 2 4 8; do
    plan e $((6 * gpus)) 8192 64 "$gpus" 1 1 1 1 "$B" false
    if [[ $gpus -gt 1 ]]; then plan e $((6 * gpus)) 8192 64 "$gpus" 1 1 2 1 "$B" false; fi
  done
done

python3 - "$work" "$(date -u +%F)" "$(cd "$root" && realpath --relative-to=. "$manifest" 2>/dev/null || echo "$manifest")" <<'PY'
import json, os, re, sys

work, date, manifest = sys.argv[1:4]
S, V = 2048, 51200   # sequence length and vocabulary of every layout
BF16, FP32 = 2, 4    # bytes: activations travel in bf16; gradients are reduced in fp32
STATE = 18           # bytes per parameter: bf16 weights + fp32 master, gradient, Adam m and v


def validated(n):
    text = open(os.path.join(work, f"{n}.validate")).read()
    params = int(re.search(r"^parameters\s+(\d+)", text, re.M).group(1))
    flops = float(re.search(r"^flops/step\s+([0-9.e+]+)", text, re.M).group(1))
    return params, flops


def schedule(n, i):
    path = os.path.join(work, f"{n}.sched{i}.json")
    return json.load(open(path)) if os.path.exists(path) else None


rows = []
for line in open(os.path.join(work, "index.tsv")):
    f = line.split("\t")
    r = dict(n=f[0], sweep=f[1], l=int(f[2]), h=int(f[3]), p=int(f[4]), t=int(f[5]), d=int(f[6]),
             v=int(f[7]), b=int(f[8]), B=int(f[9]), sg=f[10] == "true", latency=float(f[11]))
    r["m"] = r["B"] // (r["b"] * r["d"])
    r["params"], r["flops"] = validated(r["n"])
    r["sched"], r["sched_latency"] = schedule(r["n"], 0), schedule(r["n"], 1)
    rows.append(r)


def units(x):
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if x >= scale:
            return f"{x / scale:.2f}{suffix}"
    return str(x)


def pflop(x): return f"{x / 1e15:.3g}"
def gb(x): return f"{x / 1e9:.1f}"
def frac(x): return f"{x:.4f}"


def params_per_gpu(r):
    # The busiest GPU's share: its stage's blocks plus the vocab-parallel embedding (on the first
    # stage, tied on the last), split over the tensor group.
    block = 12 * r["h"] ** 2 + 13 * r["h"]
    return ((r["l"] // r["p"]) * block + (V + S) * r["h"]) / r["t"]


def state_gb(r):
    # Weights, gradients and Adam state; activations not counted.
    return STATE * params_per_gpu(r)


def tp_allreduces(r):
    # Per layer and microbatch: 2 forward, 2 again in the recomputed forward, 2 backward.
    return 6 * (r["l"] // r["p"]) * r["m"] if r["t"] > 1 else 0


def tp_traffic(r):
    # Ring all-reduce: every rank sends 2(t-1)/t of the b*s*h tensor.
    return tp_allreduces(r) * 2 * (r["t"] - 1) / r["t"] * r["b"] * S * r["h"] * BF16


def dp_traffic(r):
    # One ring all-reduce of the GPU's fp32 gradients per step.
    return 2 * (r["d"] - 1) / r["d"] * params_per_gpu(r) * FP32


def bubble_cells(r):
    s = r["sched"]
    if s is None:
        return ["0 (p = 1)", "0 (p = 1)", "-"]
    assert s["valid"], s["error"]
    return [frac(s["formula_bubble_fraction"]), frac(s["bubble_fraction"]), str(s["peak_activations"][0])]


def table(title, note, header, body):
    print(f"### {title}\n")
    if note:
        print(note + "\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for cells in body:
        print("| " + " | ".join(str(c) for c in cells) + " |")
    print()


def of(sweep): return [r for r in rows if r["sweep"] == sweep]


BUBBLE = ["bubble (p-1)/(v·m)", "bubble simulated", "peak act. stage 0"]
print(f"Planned {date} with ptdp-host validate and ptdp-host schedule (t_f = 1, t_b = 2, transfer latency 0 "
      f"unless a column says otherwise), base manifest {manifest}; every layout: s = {S}, V = {V}, "
      "micro-batch b = 1, full recomputation (FLOPs by the paper's Eq. 3 with recomputation). "
      "Bubbles are simulated schedules; traffic and memory columns are arithmetic on the layout. "
      "Nothing here is a measurement.\n")

table("(a) Tensor vs pipeline, Figure 13 in miniature: 8 GPUs, p·t = 8, d = 1",
      "Model: l 48, h 8192, a 64.",
      ["p", "t", "d", "B", "m", "parameters", "PFLOP/step", "state GB/GPU"] + BUBBLE +
      ["TP all-reduces/GPU/step", "TP ring traffic GB/GPU/step"],
      [[r["p"], r["t"], r["d"], r["B"], r["m"], units(r["params"]), pflop(r["flops"]), gb(state_gb(r))]
       + bubble_cells(r) + [tp_allreduces(r), gb(tp_traffic(r))] for r in of("a")])

table("(b1) Pipeline vs data, Figure 14 in miniature: 8 GPUs, p·d = 8, t = 1",
      "Model: l 32, h 3840, a 32.",
      ["p", "t", "d", "B", "m", "parameters", "PFLOP/step", "state GB/GPU"] + BUBBLE +
      ["DP ring traffic GB/GPU/step"],
      [[r["p"], r["t"], r["d"], r["B"], r["m"], units(r["params"]), pflop(r["flops"]), gb(state_gb(r))]
       + bubble_cells(r) + [gb(dp_traffic(r))] for r in of("b14")])

table("(b2) Tensor vs data, Figure 15 in miniature: 8 GPUs, t·d = 8, p = 1",
      "Model: l 32, h 3840, a 32. No pipeline, so no bubble: the schedule cannot tell these layouts apart.",
      ["p", "t", "d", "B", "m", "parameters", "PFLOP/step", "state GB/GPU", "bubble",
       "TP all-reduces/GPU/step", "TP ring traffic GB/GPU/step", "DP ring traffic GB/GPU/step"],
      [[r["p"], r["t"], r["d"], r["B"], r["m"], units(r["params"]), pflop(r["flops"]), gb(state_gb(r)), "0",
        tp_allreduces(r), gb(tp_traffic(r)), gb(dp_traffic(r))] for r in of("b15")])


def speedup(r, rows_of_sweep):
    # Step time is ideal·(1 + bubble); the bubble alone predicts this gain of v = 2 over v = 1.
    if r["v"] == 1:
        return "-"
    base = next(x for x in rows_of_sweep if (x["p"], x["B"], x["v"]) == (r["p"], r["B"], 1))
    gain = lambda key: (1 + base[key]["bubble_fraction"]) / (1 + r[key]["bubble_fraction"]) - 1
    return f"{100 * gain('sched'):+.1f}% / {100 * gain('sched_latency'):+.1f}%"


c = of("c")
table("(c) Interleaved vs non-interleaved, Figure 12: 8 GPUs, p = 4 (t = 2) and p = 8 (t = 1), d = 1",
      "Model: l 48, h 8192, a 64. \"latency 0.1\": the same schedule simulated with every transfer taking "
      "0.1·t_f after both ends post it (an illustration of the v× message count, not a measured latency). "
      "Peak activations are microbatch-chunks for v = 2.",
      ["p", "t", "v", "B", "m", "bubble formula", "bubble simulated", "bubble simulated, latency 0.1",
       "peak act. stage 0", "sends/step (pipeline)", "v = 2 gain from the bubble (latency 0 / 0.1)"],
      [[r["p"], r["t"], r["v"], r["B"], r["m"], frac(r["sched"]["formula_bubble_fraction"]),
        frac(r["sched"]["bubble_fraction"]), frac(r["sched_latency"]["bubble_fraction"]),
        r["sched"]["peak_activations"][0], r["sched"]["transfers"], speedup(r, c)] for r in c])


def per_send(r, sg):
    # One microbatch's b*s*h activation (or its gradient) per send and tensor rank.
    return r["b"] * S * r["h"] * BF16 / (r["t"] if sg else 1)


d_rows = [r for r in of("d") if r["sg"]]
offs = {(r["p"], r["B"]) for r in of("d") if not r["sg"]}
assert all((r["p"], r["B"]) in offs for r in d_rows), "every scatter/gather layout validated both ways"
table("(d) Scatter/gather, Figure 18: interleaved v = 2, 8 GPUs, validated with scatter_gather off and on",
      "Model: l 48, h 8192, a 64. The schedule is the same either way; what changes is what each tensor rank "
      "puts on its link per send: b·s·h (off: every rank of the stage sends the same tensor) or b·s·h/t (on: "
      "each rank sends its slice, and the receiving stage all-gathers the slices over its own tensor group, "
      "which these columns do not count).",
      ["p", "t", "v", "B", "m", "bubble simulated", "sends/step (pipeline)", "MB/send/rank off", "MB/send/rank on",
       "GB/step between stages off", "GB/step between stages on"],
      [[r["p"], r["t"], r["v"], r["B"], r["m"], frac(r["sched"]["bubble_fraction"]), r["sched"]["transfers"],
        f"{per_send(r, False) / 1e6:.1f}", f"{per_send(r, True) / 1e6:.1f}",
        gb(per_send(r, False) * r["sched"]["transfers"] * r["t"]),
        gb(per_send(r, True) * r["sched"]["transfers"] * r["t"])]
       for r in d_rows])


def efficiency(r):
    s = r["sched"]
    return "1.000" if s is None else f"{1 / (1 + s['bubble_fraction']):.3f}"


table("(e) Weak scaling 1 → 2 → 4 → 8 GPUs, Figure 11 style: 6 layers per GPU, t = 1, d = 1",
      "Model: h 8192, a 64, l = 6 per GPU (5.3B on 1 GPU, 39.1B on 8). \"bubble-only efficiency\" is "
      "1/(1 + simulated bubble), the per-GPU throughput relative to 1 GPU if the bubble were the only loss.",
      ["GPUs", "l", "p", "v", "B", "m", "parameters", "PFLOP/step", "PFLOP/step/GPU", "state GB/GPU"] + BUBBLE +
      ["bubble-only efficiency"],
      [[r["p"] * r["t"] * r["d"], r["l"], r["p"], r["v"], r["B"], r["m"], units(r["params"]), pflop(r["flops"]),
        pflop(r["flops"] / (r["p"] * r["t"] * r["d"])), gb(state_gb(r))] + bubble_cells(r) + [efficiency(r)]
       for r in of("e")])
PY
