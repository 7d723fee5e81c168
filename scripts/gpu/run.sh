#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu-bundle carried (made here by
# scripts/gpu/build.sh); builds nothing. Parts, in order, as arguments (default: all but largest):
#   tests    device tests of kernels-fused (each kernel and the model against kernels-ref) and comm-nccl
#   losses   20 training steps of a small GPT on the GPU against the same run on the CPU
#   bench    the 1.3B GPT (l 24, h 2048, a 16, s 2048, V 51200) at micro-batch 4 and 8, beside
#            the PyTorch baseline on the same model and batch
#   largest  the largest model that trains, with and without full recomputation
# Prints a short table ($RESULTS/table.txt); logs and JSON are packed into $RESULTS/logs.tgz
# ($RESULTS: $OUT when set, else ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/../.."
B=$PWD/.gpu-bundle
RESULTS=${OUT:-$PWD/gpu-out}
OUT=$(mktemp -d)
mkdir -p "$RESULTS"
export LD_LIBRARY_PATH=$B/deps:${LD_LIBRARY_PATH:-}
export UCX_MODULE_DIR=$B/deps/ucx UCX_WARN_UNUSED_ENV_VARS=n
HOST=$B/bin/ptdp-host
parts=${*:-tests losses bench}
table=$OUT/table.txt
: > "$table"
row() { printf '%-44s %s\n' "$1" "$2" | tee -a "$table"; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu   date: $(date -u +%F)" | tee -a "$table"

# Lines of a log that report a check with this verdict (some prefix a "[rank N] ").
count() { grep -cE "(^|\] )$1 " "$OUT/$2"; }
# Mean of a field over the steps after the warm-up ones, from a --metrics file.
steady() {  # file field warmup
  python3 - "$@" <<'PY'
import json, sys
rows = [r for r in (json.loads(l) for l in open(sys.argv[1]) if l.strip()) if "step" in r]  # not the header
xs = [r[sys.argv[2]] for r in rows[int(sys.argv[3]):]]
print(f"{sum(xs) / len(xs):.1f}" if xs else "n/a")
PY
}
# Peak GPU memory (GiB) seen by nvidia-smi while a command runs.
with_peak_memory() {  # outfile cmd...
  local out=$1; shift
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 > "$out.mem" &
  local sampler=$!
  "$@"
  local rc=$?
  kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
  sort -n "$out.mem" | tail -1 | awk '{printf "%.1f\n", $1/1024}' > "$out"
  return $rc
}

for part in $parts; do
case $part in
tests)
  "$B/bin/kernels-fused-device-checks" "$B/lib/ptdp" > "$OUT/kernels-fused-checks.log" 2>&1
  rc=$?
  row "kernels-fused device checks" "$(count PASS kernels-fused-checks.log) pass, $(count FAIL kernels-fused-checks.log) fail (exit $rc)"
  grep -E '(^|\] )FAIL' "$OUT/kernels-fused-checks.log" | head -20
  "$B/bin/comm-nccl-device-test" > "$OUT/comm-nccl-checks.log" 2>&1
  rc=$?
  row "comm-nccl device checks" "$(count PASS comm-nccl-checks.log) pass, $(count FAIL comm-nccl-checks.log) fail, $(count SKIP comm-nccl-checks.log) need 2 GPUs (exit $rc)"
  grep -E '(^|\] )FAIL' "$OUT/comm-nccl-checks.log" | head -20
  ;;
losses)
  small=(--nproc 1 --set parallel.pipeline=1 --set parallel.tensor=1 --set parallel.data=1
         --set parallel.virtual_stages=1 --set 'plugins.scheduler="sched-1f1b"' --set run.steps=20
         --set model.hidden=256 --set model.heads=4 --set parallel.micro_batch=8 --set parallel.global_batch=8
         --set optimizer.lr=5e-4)
  "$HOST" run examples/gpt-tiny-cpu.toml "${small[@]}" --metrics "$OUT/losses-cpu.jsonl" > "$OUT/losses-cpu.log" 2>&1
  "$HOST" run examples/gpt-tiny-cpu.toml "${small[@]}" --set 'plugins.kernels="kernels-fused"' \
    --set 'plugins.comm="comm-nccl"' --set 'precision.params="bf16"' --metrics "$OUT/losses-gpu.jsonl" > "$OUT/losses-gpu.log" 2>&1
  row "20 steps, GPU vs CPU losses" "$(python3 - "$OUT/losses-cpu.jsonl" "$OUT/losses-gpu.jsonl" <<'PY'
import json, sys
cpu = [json.loads(l)["loss"] for l in open(sys.argv[1]) if l.strip()]
gpu = [json.loads(l)["loss"] for l in open(sys.argv[2]) if l.strip()]
if len(cpu) != 20 or len(gpu) != 20:
    print(f"FAIL: {len(cpu)} CPU and {len(gpu)} GPU steps"); sys.exit()
worst = max(abs(g - c) / abs(c) for c, g in zip(cpu, gpu))
print(f"{'PASS' if worst < 2e-2 else 'FAIL'}: max relative difference {worst:.2e} (bf16 tolerance 2e-2); "
      f"loss {cpu[0]:.4f} -> {cpu[-1]:.4f} (CPU), {gpu[0]:.4f} -> {gpu[-1]:.4f} (GPU)")
PY
)"
  ;;
bench)
  for b in 4 8; do
    with_peak_memory "$OUT/bench-b$b.peak" "$HOST" run examples/gpt-1gpu.toml --set parallel.micro_batch=$b \
      --set parallel.global_batch=$b --set run.steps=13 --set run.log_every=13 \
      --metrics "$OUT/bench-b$b.jsonl" > "$OUT/bench-b$b.log" 2>&1 || tail -5 "$OUT/bench-b$b.log"
    row "ptdp 1.3B b=$b: TFLOP/s per GPU (72-formula)" "$(steady "$OUT/bench-b$b.jsonl" tflops_per_gpu 3), peak $(cat "$OUT/bench-b$b.peak") GiB (nvidia-smi)"
    python3 "$B/bench/torch_gpt.py" --layers 24 --hidden 2048 --heads 16 --seq 2048 --vocab 51200 \
      --micro-batch $b --steps 10 > "$OUT/torch-b$b.json" 2> "$OUT/torch-b$b.log" || tail -5 "$OUT/torch-b$b.log"
    row "pytorch eager 1.3B b=$b: TFLOP/s per GPU" "$(python3 -c "import json,sys; r=json.load(open('$OUT/torch-b$b.json')); print(r['tflops_per_gpu'], ', peak', r['peak_mem_gib'], 'GiB (allocator)')" 2>/dev/null || echo failed)"
  done
  ;;
largest)
  # (layers, hidden, heads) in growing size; the first that fails ends each scan.
  # LARGEST_SHAPES="38 4096 32,40 4096 32" scans other shapes.
  shapes=("30 3072 32" "24 4096 32" "32 4096 32" "36 4096 32" "38 4096 32" "40 4096 32")
  [ -n "${LARGEST_SHAPES:-}" ] && IFS=',' read -ra shapes <<< "$LARGEST_SHAPES"
  for recompute in none full; do
    for shape in "${shapes[@]}"; do
      read -r l h a <<< "$shape"
      name="largest-$recompute-l$l-h$h"
      with_peak_memory "$OUT/$name.peak" "$HOST" run examples/gpt-1gpu.toml --set model.layers=$l --set model.hidden=$h --set model.heads=$a \
        --set parallel.micro_batch=1 --set parallel.global_batch=1 --set "parallel.recompute=\"$recompute\"" \
        --set run.steps=5 --set run.log_every=5 --metrics "$OUT/$name.jsonl" > "$OUT/$name.log" 2>&1
      if [ $? -ne 0 ]; then row "l=$l h=$h recompute=$recompute" "does not train: $(grep -m1 -iE 'error|out of memory' "$OUT/$name.log" | cut -c1-120)"; break; fi
      row "l=$l h=$h recompute=$recompute trains" "$(steady "$OUT/$name.jsonl" tflops_per_gpu 2) TFLOP/s per GPU, peak $(cat "$OUT/$name.peak") GiB"
    done
  done
  ;;
*) echo "unknown part: $part"; exit 2 ;;
esac
done
echo; cat "$table"
cp "$table" "$RESULTS/table.txt"
tar czf "$RESULTS/logs.tgz" -C "$OUT" .
