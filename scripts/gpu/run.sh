#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .gpu-bundle carried (made on the build
# machine by scripts/gpu/build.sh); builds nothing. Parts, in order, as arguments (default: all but largest):
#   smoke    three steps on one rank and on two ranks sharing the GPU; stacks of a run that hangs
#   tests    device tests of kernels-fused (each kernel against fp64, the optimizer against
#            kernels-ref), the LayerKernels conformance suite for kernels-fused with its fusions on,
#            off and with unfused attention, and comm-nccl's own checks
#   conformance  the communicator conformance suite on CUDA memory: comm-ucx with 8 ranks sharing
#            the GPU, comm-nccl with one rank per GPU (its two-rank tests are reported not run)
#   losses   20 training steps of a small GPT on the GPU against the same run on the CPU
#   layouts  tensor, pipeline and data parallel layouts of a small GPT with every rank on one GPU
#            (comm-ucx), each against the single-rank losses and kernels-ref; a rank killed mid-step
#   layouts-1.3b  the 1.3B model at t 2 and at p 2 (two ranks on the GPU) against one rank
#   dopt     data parallelism on one GPU (comm-ucx, ranks sharing it): the small GPT at d 2 with and
#            without the distributed optimizer against d 1; the 1.3B model at d 2 with and without
#            it (its weight all-gathers beside the next forward, and right after Adam) against d 1,
#            with each rank's peak device memory and step time, and a profiled trace of d 2 read
#            for how much of the bucket reductions ran beside compute (reduction_overlap.py)
#   bench    the 1.3B GPT (l 24, h 2048, a 16, s 2048, V 51200) at micro-batch 4 and 8, beside
#            the PyTorch baseline on the same model and batch
#   accumulation  the 1.3B GPT at global batch 32: micro-batch 4, 8 and 16 (8, 4 and 2 microbatches a step)
#   gemm-workspace  ptdp-host ab of kernels-fused's gemm_workspace_scope, "all" against
#            "gradient_epilogues", at global batch 4 and 32; then the 1.3B step profiled with each (A B B A)
#   graph-replay  what replaying a CUDA graph saves against launching eagerly, on 4 layers of the
#            1.3B's forward and backward (bench/graph_replay.py, PyTorch)
#   stream-overlap  how much of a fused AdamW step over 1.3B parameters hides behind FC1-shaped
#            GEMMs on another stream (bench/stream_overlap.py, PyTorch)
#   baseline ptdp-host ab of this tree's kernels-fused against another commit's (BASELINE=COMMIT
#            scripts/gpu/build.sh), the 1.3B model at global batch 4 and 32
#   ab       ptdp-host ab on the 1.3B model: flash against unfused attention (micro-batch 4), and
#            micro-batch 4 against 8 at global batch 8 (the same model trained either way)
#   largest  the largest model that trains, with and without full recomputation
#   fusions  ptdp-host ab on the 1.3B model: kernels-fused's fusion options all on against all off
#   fusions-each  ptdp-host ab of each kernels-fused fusion alone against none
#   option   ptdp-host ab of the kernels-fused option OPTION (a bool) off against on, B=4 and 32
#   first-gradient  the same for OPTION=first_backward_writes_gradients
#   gemm     ptdp-host ab on the 1.3B model: kernels-fused's GEMM autotuning and its GeLU epilogues,
#            each alone and both, against neither; the algorithms autotuning picked and what they saved
#   gemm-profile  the settings of `gemm`, each under --profile twice: GEMM, bias + GeLU and idle ms a step
#   adam-bandwidth  kernels-fused's Adam over half the 1.3B model's parameters against cudaMemcpy
#            between device buffers: the device's own ceiling for streaming DRAM traffic
#   fp8-cast-bandwidth  kernels-fused's FP8 casts of one block of the 1.3B step (stored and
#            transposed) against cudaMemcpy between device buffers
#   fp8      FP8 (precision.fp8 = "hybrid"): 20 steps of a small GPT on the GPU against kernels-ref's
#            emulation of the same recipe on the CPU, tensorwise and delayed; the 1.3B model's
#            step, bf16 against both recipes (ptdp-host ab; with a baseline in the bundle, its
#            kernels-fused's delayed recipe as a fourth arm); a delayed-recipe FP8 step profiled
#   fp8-memory  peak device memory of the 1.3B step in bf16 and in FP8 (both recipes); then the
#            largest of the `largest` scan's shapes that trains in FP8 (delayed, micro-batch 1, no
#            recomputation), and bf16 against FP8 on it (ptdp-host ab)
#   activation-memory  the 1.3B model at t 2 and 4 (ranks sharing the GPU), sequence parallelism and
#            selective recomputation off and on: each rank's activations from kernels-fused's
#            allocator against the planner's prediction in the metrics header, and each run's
#            losses against one rank's
#   zb-costs  sched-zb on the 1.3B model at p 2 (two ranks sharing the GPU): its losses against
#            sched-1f1b's, and its traced F, B and W costs in the simulator at p 4, m 8
#   fp16     precision.params = "fp16": 20 steps of a small GPT on the GPU (one rank, and t 2 over
#            comm-ucx) against kernels-ref's fp16 emulation on the CPU; the 1.3B model's peak memory
#            and step, bf16 against fp16 (ptdp-host ab)
#   parity   loss parity (also named fp8-parity): the 1.3B model trained PARITY_STEPS (1000) steps on
#            the shipped corpus in 2000 SentencePiece pieces (data/corpus-sp2k.*, made here by the two
#            commands at the top of examples/gpt-tiny-cpu-sentencepiece.toml and carried), bf16
#            against the PARITY_ARMS (fp16, fp8, fp8-delayed, fp8-edges, fp8-delayed-edges; default
#            "fp8 fp8-delayed") from the same initialization and batches: bench/loss_parity.py and
#            the curves
#   fp8-cast-probe  the FP8 cast kernels of a 1.3B step under ncu: time, DRAM bytes and throughput
#   profile  the 1.3B model with --profile: the table of its kernels (docs/profiling.md), then a
#            trace with one track per GPU stream ($RESULTS/profile-trace.json.gz); PROFILE_SET
#            ("KEY=VALUE ...") sets manifest keys for both runs
# Prints a short table ($RESULTS/table.txt); logs and JSON are packed into $RESULTS/logs.tgz
# ($RESULTS: $OUT when set, else ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/../.."
B=$(mktemp -d)
tar xzf .gpu-bundle/bundle.tar.gz -C "$B" || { echo "no .gpu-bundle/bundle.tar.gz: run scripts/gpu/build.sh here first"; exit 2; }
RESULTS=${OUT:-$PWD/gpu-out}
OUT=$(mktemp -d)
mkdir -p "$RESULTS"
export LD_LIBRARY_PATH=$B/deps:${LD_LIBRARY_PATH:-}
export UCX_MODULE_DIR=$B/deps/ucx UCX_WARN_UNUSED_ENV_VARS=n
HOST=$B/bin/ptdp-host
FUSIONS_OFF=(--set plugins.options.kernels.gemm_autotune=false --set plugins.options.kernels.gelu_epilogue=false --set plugins.options.kernels.bias_grad_epilogue=false
             --set plugins.options.kernels.fused_layer_norm_backward=false --set plugins.options.kernels.fused_residual_layer_norm=false
             --set plugins.options.kernels.layer_norm_bias_grads=false
             --set plugins.options.kernels.one_pass_cross_entropy=false --set plugins.options.kernels.first_backward_writes_gradients=false)
parts=${*:-tests conformance losses layouts layouts-1.3b bench}
table=$OUT/table.txt
: > "$table"
# Each row and each part's logs reach $RESULTS at once, so a call cut short keeps what it did.
row() { printf '%-44s %s\n' "$1" "$2" | tee -a "$table"; cp "$table" "$RESULTS/table.txt"; }
pack_logs() { tar czf "$RESULTS/logs.tgz" -C "$OUT" .; cp "$table" "$RESULTS/table.txt"; }
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu   date: $(date -u +%F)" | tee -a "$table"

# A GoogleTest log's tests passed, failed and skipped.
gtest_counts() {  # log
  echo "$(grep -oE '\[  PASSED  \] [0-9]+' "$OUT/$1" | grep -oE '[0-9]+$' || echo 0) pass," \
    "$(grep -cE '^\[  FAILED  \] .* ms\)$' "$OUT/$1") fail, $(grep -cE '^\[  SKIPPED \] .* ms\)$' "$OUT/$1") skipped"
}
# Lines of a log that report a check with this verdict (some prefix a "[rank N] ").
count() { grep -cE "(^|\] )$1 " "$OUT/$2"; }
# An ab run's report (NAME: its --out folder under $OUT, and NAME.log beside it) into $RESULTS and
# the table, or the end of its log when it wrote none.
ab_report() {  # name
  if [ -f "$OUT/$1/report.md" ]; then
    cp "$OUT/$1/report.md" "$RESULTS/$1.md"
    [ -f "$OUT/$1/report.svg" ] && cp "$OUT/$1/report.svg" "$RESULTS/$1.svg"
    tee -a "$table" < "$OUT/$1/report.md"
  else
    tail -5 "$OUT/$1.log"
  fi
}
# Mean of a field over the steps after the warm-up ones, from a --metrics file.
steady() {  # file field warmup [scale]
  python3 - "$@" <<'PY'
import json, sys
rows = [r for r in (json.loads(l) for l in open(sys.argv[1]) if l.strip()) if "step" in r]  # not the header
scale = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
xs = [r[sys.argv[2]] * scale for r in rows[int(sys.argv[3]):]]
print(f"{sum(xs) / len(xs):.1f}" if xs else "n/a")
PY
}
# One ptdp-host run, bounded: NAME MANIFEST ARGS... writes $OUT/NAME.{log,jsonl} and a progress line.
timed_run() {
  local name=$1; shift
  local start=$SECONDS
  timeout "${RUN_LIMIT_S:-150}" "$HOST" run "$@" --metrics "$OUT/$name.jsonl" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $((SECONDS - start)) s, $(grep -sc '"step"' "$OUT/$name.jsonl") steps"
  [ $rc -ne 0 ] && tail -3 "$OUT/$name.log"
  pack_logs
  return $rc
}
# "TFLOP/s, peak memory" of a bench/torch_gpt.py result.
torch_result() {
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['tflops_per_gpu'], ', peak', r['peak_mem_gib'], 'GiB (allocator)')" "$1" 2>/dev/null || echo failed
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
# Peak GPU memory (GiB) of each process on the GPU while a command runs, highest first.
with_rank_memory() {  # outfile cmd...
  local out=$1; shift
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 200 > "$out.mem" &
  local sampler=$!
  "$@"
  local rc=$?
  kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
  awk -F', *' '$1 ~ /^[0-9]+$/ && $2 + 0 > peak[$1] { peak[$1] = $2 + 0 } END { for (p in peak) printf "%.1f\n", peak[p] / 1024 }' "$out.mem" |
    sort -rn | paste -sd' ' > "$out"
  return $rc
}
# The largest relative difference of two --metrics files' losses, "no run" unless both have N
# steps, against TOLERANCE (relative; default 2e-3, see `losses`).
loss_gap() {  # file file steps [tolerance]
  python3 - "$@" <<'PY'
import json, sys
def losses(path):
    try:
        return [r["loss"] for r in (json.loads(l) for l in open(path) if l.strip()) if "step" in r]
    except OSError:
        return []
a, b, n = losses(sys.argv[1]), losses(sys.argv[2]), int(sys.argv[3])
tolerance = float(sys.argv[4]) if len(sys.argv) > 4 else 2e-3
if len(a) != n or len(b) != n:
    print(f"FAIL: {len(a)} and {len(b)} of {n} steps")
else:
    w = max(abs(x - y) / abs(y) for x, y in zip(a, b))
    print(f"{'PASS' if w < tolerance else 'FAIL'}: max relative difference {w:.2e} (tolerance {tolerance:g}), loss {b[0]:.4f} -> {b[-1]:.4f}")
PY
}

for part in $parts; do
case $part in
tests)
  "$B/bin/kernels-fused-device-checks" "$B/lib/ptdp" > "$OUT/kernels-fused-checks.log" 2>&1
  rc=$?
  row "kernels-fused device checks" "$(gtest_counts kernels-fused-checks.log) (exit $rc)"
  grep -E '^\[  (FAILED|SKIPPED) \] .* ms\)$' "$OUT/kernels-fused-checks.log" | head -20
  # Every built kernels plugin against kernels-ref, kernels-fused under each setting of its fusion
  # options that the suite lists (tests/kernels_conformance/kernels_under_test.cpp).
  CUBLASLT_LOG_LEVEL=${CUBLASLT_LOG_LEVEL:-0} timeout 300 "$B/bin/test-conformance-kernels" \
    > "$OUT/conformance-kernels.log" 2>&1
  rc=$?
  row "conformance suite, kernels-fused settings" "$(gtest_counts conformance-kernels.log) (exit $rc)"
  grep -E '^\[  FAILED  \] .* ms\)$' "$OUT/conformance-kernels.log" | head -20
  "$B/bin/comm-nccl-device-test" > "$OUT/comm-nccl-checks.log" 2>&1
  rc=$?
  row "comm-nccl device scenarios" "$(gtest_counts comm-nccl-checks.log) (exit $rc)"
  row "comm-nccl checks within them" "$(count PASS comm-nccl-checks.log) pass, $(count FAIL comm-nccl-checks.log) fail"
  grep -E '(^|\] )FAIL|^\[  SKIPPED \] .* ms\)$' "$OUT/comm-nccl-checks.log" | head -20
  ;;
losses)
  small=(--nproc 1 --set parallel.pipeline=1 --set parallel.tensor=1 --set parallel.data=1
         --set parallel.virtual_stages=1 --set 'plugins.scheduler="sched-1f1b"' --set run.steps=20
         --set model.hidden=256 --set model.heads=4 --set parallel.micro_batch=8 --set parallel.global_batch=8
         --set optimizer.lr=5e-4)
  "$HOST" run examples/gpt-tiny-cpu.toml "${small[@]}" --metrics "$OUT/losses-cpu.jsonl" > "$OUT/losses-cpu.log" 2>&1
  "$HOST" run examples/gpt-tiny-cpu.toml "${small[@]}" --set 'plugins.kernels="kernels-fused"' \
    --set 'plugins.communicator="comm-nccl"' --set 'precision.params="bf16"' --metrics "$OUT/losses-gpu.jsonl" > "$OUT/losses-gpu.log" 2>&1
  row "20 steps, GPU vs CPU losses" "$(python3 - "$OUT/losses-cpu.jsonl" "$OUT/losses-gpu.jsonl" <<'PY'
import json, sys
cpu = [r["loss"] for r in (json.loads(l) for l in open(sys.argv[1]) if l.strip()) if "step" in r]
gpu = [r["loss"] for r in (json.loads(l) for l in open(sys.argv[2]) if l.strip()) if "step" in r]
if len(cpu) != 20 or len(gpu) != 20:
    print(f"FAIL: {len(cpu)} CPU and {len(gpu)} GPU steps"); sys.exit()
worst = max(abs(g - c) / abs(c) for c, g in zip(cpu, gpu))
print(f"{'PASS' if worst < 2e-3 else 'FAIL'}: max relative difference {worst:.2e} (tolerance 2e-3); "
      f"loss {cpu[0]:.4f} -> {cpu[-1]:.4f} (CPU), {gpu[0]:.4f} -> {gpu[-1]:.4f} (GPU)")
PY
)"
  ;;
fp8)
  small=(--nproc 1 --set parallel.pipeline=1 --set parallel.tensor=1 --set parallel.data=1
         --set parallel.virtual_stages=1 --set 'plugins.scheduler="sched-1f1b"' --set run.steps=20
         --set model.hidden=256 --set model.heads=4 --set parallel.micro_batch=8 --set parallel.global_batch=8
         --set optimizer.lr=5e-4 --set 'precision.fp8="hybrid"')
  for recipe in tensorwise delayed; do
    "$HOST" run examples/gpt-tiny-cpu.toml "${small[@]}" --set "precision.fp8_recipe=\"$recipe\"" \
      --metrics "$OUT/fp8-$recipe-cpu.jsonl" > "$OUT/fp8-$recipe-cpu.log" 2>&1
    "$HOST" run examples/gpt-tiny-cpu.toml "${small[@]}" --set "precision.fp8_recipe=\"$recipe\"" \
      --set 'plugins.kernels="kernels-fused"' --set 'plugins.communicator="comm-nccl"' --set 'precision.params="bf16"' \
      --metrics "$OUT/fp8-$recipe-gpu.jsonl" > "$OUT/fp8-$recipe-gpu.log" 2>&1
    # 4e-3: FP8 on the GPU rounds bf16 inputs where kernels-ref rounds fp32 ones (1.9e-3 measured).
    row "FP8 $recipe, 20 steps, GPU vs CPU" "$(loss_gap "$OUT/fp8-$recipe-gpu.jsonl" "$OUT/fp8-$recipe-cpu.jsonl" 20 4e-3)"
    tail -2 "$OUT/fp8-$recipe-gpu.log"
  done
  fp8=(--set 'precision.fp8="hybrid"')
  # With a baseline in the bundle (BASELINE=COMMIT scripts/gpu/build.sh), its kernels-fused's
  # delayed recipe too, in the same ab.
  base_arm=()
  if [ -f "$B/baseline/libptdp-kernels-fused.so" ]; then
    base_arm=(--arm "fp8-delayed-$(cut -c1-7 "$B/baseline/commit")" "${fp8[@]}" --set 'precision.fp8_recipe="delayed"'
              --set "plugins.search_path=[\"$B/baseline\"]")
  fi
  "$HOST" ab examples/gpt-1gpu.toml --rounds "${AB_ROUNDS:-2}" --steps 10 --warmup 3 --out "$OUT/ab-fp8" \
    --arm bf16 --arm fp8 "${fp8[@]}" --arm fp8-delayed "${fp8[@]}" --set 'precision.fp8_recipe="delayed"' \
    "${base_arm[@]}" > "$OUT/ab-fp8.log" 2>&1
  row "ab: bf16 against FP8, 1.3B b=4" "exit $?"
  ab_report ab-fp8
  # The delayed recipe's step, whose casts compute the GeLU (the tensorwise one's was profiled on 2026-12-04).
  RUN_LIMIT_S=300 timed_run fp8-profile examples/gpt-1gpu.toml --set run.steps=8 --set run.log_every=8 "${fp8[@]}" \
    --set 'precision.fp8_recipe="delayed"' --profile --trace-steps 5 > /dev/null
  sed -n '/profile of rank/,/summed over streams/p' "$OUT/fp8-profile.log" | tee -a "$table"
  ;;
fp16)
  # precision.params = "fp16" in kernels-fused: 20 steps against kernels-ref's fp16 emulation, on
  # one rank and at t 2 (two ranks sharing the GPU over comm-ucx, which then reduces half
  # activations); then bf16 against fp16 on the 1.3B (ptdp-host ab) and each one's peak memory.
  small=(--set parallel.pipeline=1 --set parallel.data=1 --set parallel.virtual_stages=1
         --set 'plugins.scheduler="sched-1f1b"' --set run.steps=20 --set model.hidden=256 --set model.heads=4
         --set parallel.micro_batch=8 --set parallel.global_batch=8 --set optimizer.lr=5e-4 --set 'precision.params="fp16"')
  "$HOST" run examples/gpt-tiny-cpu.toml "${small[@]}" --nproc 1 --set parallel.tensor=1 \
    --metrics "$OUT/fp16-cpu.jsonl" > "$OUT/fp16-cpu.log" 2>&1
  for spec in "t1 1 comm-nccl" "t2 2 comm-ucx"; do
    read -r name t comm <<< "$spec"
    "$HOST" run examples/gpt-tiny-cpu.toml "${small[@]}" --nproc $t --set parallel.tensor=$t --set launch.ranks_per_gpu=$t \
      --set 'plugins.kernels="kernels-fused"' --set "plugins.communicator=\"$comm\"" \
      --metrics "$OUT/fp16-$name-gpu.jsonl" > "$OUT/fp16-$name-gpu.log" 2>&1
    row "fp16 $name ($comm), 20 steps, GPU vs CPU" "$(loss_gap "$OUT/fp16-$name-gpu.jsonl" "$OUT/fp16-cpu.jsonl" 20)"
    tail -2 "$OUT/fp16-$name-gpu.log"
  done
  for arm in bf16 fp16; do
    with_peak_memory "$OUT/memory-$arm.peak" "$HOST" run examples/gpt-1gpu.toml --set "precision.params=\"$arm\"" \
      --set run.steps=6 --set run.log_every=6 --metrics "$OUT/memory-$arm.jsonl" > "$OUT/memory-$arm.log" 2>&1
    row "1.3B b=4 $arm" "exit $?, $(steady "$OUT/memory-$arm.jsonl" tflops_per_gpu 2) TFLOP/s, peak $(cat "$OUT/memory-$arm.peak") GiB"
  done
  "$HOST" ab examples/gpt-1gpu.toml --rounds "${AB_ROUNDS:-2}" --steps 10 --warmup 3 --out "$OUT/ab-fp16" \
    --arm bf16 --arm fp16 --set 'precision.params="fp16"' > "$OUT/ab-fp16.log" 2>&1
  row "ab: bf16 against fp16, 1.3B b=4" "exit $?"
  ab_report ab-fp16
  pack_logs
  ;;
activation-memory)
  # The 1.3B model at t 2 and t 4 (ranks sharing the GPU over comm-ucx), sequence parallelism off
  # and on, selective recomputation of the LayerNorms and the GeLU off and on (core_attention
  # saves only flash attention's statistics): each rank's activations from kernels-fused's
  # allocator (its end-of-run line), beside the planner's prediction for this run that the metrics
  # header records (activation_memory.stage_bytes_flash_attention: the layers and the fp32
  # logits); and each layout's losses beside one rank's (t 1, comm-nccl), within bf16 rounding.
  RUN_LIMIT_S=240 timed_run activations-t1 examples/gpt-1gpu.toml --set run.steps=3 --set run.log_every=3
  for t in 2 4; do for sp in false true; do for sel in none selective; do
    name="activations-t$t-sp-$sp-$sel"
    args=(--nproc $t --set parallel.tensor=$t --set launch.ranks_per_gpu=$t --set 'plugins.communicator="comm-ucx"'
          --set parallel.sequence_parallel=$sp --set run.steps=3 --set run.log_every=3)
    [ $sel = selective ] && args+=(--set 'parallel.recompute="selective"' --set 'parallel.recompute_modules=["layernorm","mlp_activation"]')
    RUN_LIMIT_S=240 timed_run "$name" examples/gpt-1gpu.toml "${args[@]}"
    row "1.3B t=$t sp=$sp $sel" "$(python3 - "$OUT/$name.log" "$OUT/$name.jsonl" <<'PY'
import json, os, re, sys
found = [float(x) for x in re.findall(r"activations and workspace at most ([0-9.]+) GiB", open(sys.argv[1], errors="replace").read())]
predicted = None
for line in open(sys.argv[2]) if os.path.exists(sys.argv[2]) else []:
    r = json.loads(line)
    if r.get("record") == "header":
        m = r["activation_memory"]
        predicted = m["stage_bytes_flash_attention"][m["this_run"]][0] / 2**30
        break
if predicted is None: print(f"no metrics header (allocator: {found})")
elif not found: print(f"no allocator line (planner {predicted:.2f} GiB)")
else: print(f"{max(found):.2f} GiB a rank at most ({len(found)} ranks); planner {predicted:.2f} GiB: {max(found) / predicted:.2f}x")
PY
)"
    row "1.3B t=$t sp=$sp $sel, losses vs t 1" "$(loss_gap "$OUT/$name.jsonl" "$OUT/activations-t1.jsonl" 3)"
  done; done; done
  pack_logs
  ;;
fp8-memory)
  for arm in bf16 fp8 fp8-delayed; do
    precision=()
    [ "$arm" != bf16 ] && precision+=(--set 'precision.fp8="hybrid"')
    [ "$arm" = fp8-delayed ] && precision+=(--set 'precision.fp8_recipe="delayed"')
    with_peak_memory "$OUT/memory-$arm.peak" "$HOST" run examples/gpt-1gpu.toml "${precision[@]}" --set run.steps=6 \
      --set run.log_every=6 --metrics "$OUT/memory-$arm.jsonl" > "$OUT/memory-$arm.log" 2>&1
    row "1.3B b=4 $arm" "exit $?, $(steady "$OUT/memory-$arm.jsonl" tflops_per_gpu 2) TFLOP/s, peak $(cat "$OUT/memory-$arm.peak") GiB"
  done
  shapes=("32 4096 32" "34 4096 32" "36 4096 32")
  [ -n "${LARGEST_SHAPES:-}" ] && IFS=',' read -ra shapes <<< "$LARGEST_SHAPES"
  fp8=(--set 'precision.fp8="hybrid"' --set 'precision.fp8_recipe="delayed"')
  largest=()
  for shape in "${shapes[@]}"; do
    read -r l h a <<< "$shape"
    shape_set=(--set model.layers=$l --set model.hidden=$h --set model.heads=$a --set parallel.micro_batch=1 --set parallel.global_batch=1)
    name="fp8-largest-l$l-h$h"
    with_peak_memory "$OUT/$name.peak" "$HOST" run examples/gpt-1gpu.toml "${shape_set[@]}" "${fp8[@]}" \
      --set run.steps=5 --set run.log_every=5 --metrics "$OUT/$name.jsonl" > "$OUT/$name.log" 2>&1
    if [ $? -ne 0 ]; then row "FP8 l=$l h=$h" "does not train: $(grep -m1 -iE 'error|out of memory' "$OUT/$name.log" | cut -c1-120)"; break; fi
    row "FP8 l=$l h=$h trains" "$(steady "$OUT/$name.jsonl" tflops_per_gpu 2) TFLOP/s per GPU, peak $(cat "$OUT/$name.peak") GiB"
    largest=("${shape_set[@]}")
  done
  pack_logs
  if [ ${#largest[@]} -gt 0 ]; then
    "$HOST" ab examples/gpt-1gpu.toml "${largest[@]}" --rounds "${AB_ROUNDS:-2}" --steps 6 --warmup 2 --out "$OUT/ab-fp8-largest" \
      --arm bf16 --arm fp8-delayed "${fp8[@]}" > "$OUT/ab-fp8-largest.log" 2>&1
    row "ab: bf16 against FP8, largest in FP8" "exit $?"
    ab_report ab-fp8-largest
  fi
  ;;
parity|fp8-parity)
  # PARITY_ARMS picks the runs set beside bf16: fp16 (dynamic loss scaling), fp8 (tensorwise),
  # fp8-delayed, and either FP8 one with "-edges" (the first and last blocks kept in bf16).
  steps=${PARITY_STEPS:-1000}
  sp=(--set model.vocab=2000 --set 'data.path="data/corpus-sp2k.bin"' --set 'data.tokenizer="data/corpus-sp2k.model"'
      --set run.steps=$steps --set run.log_every=100 --set optimizer.warmup_steps=100 --set optimizer.decay_steps=$steps)
  RUN_LIMIT_S=400 timed_run parity-bf16 examples/gpt-1gpu.toml "${sp[@]}"
  files=(parity-bf16.jsonl)
  for arm in ${PARITY_ARMS:-fp8 fp8-delayed}; do
    recipe=(--set 'precision.fp8="hybrid"')
    [ "$arm" = fp16 ] && recipe=(--set 'precision.params="fp16"')
    [[ $arm == fp8-delayed* ]] && recipe+=(--set 'precision.fp8_recipe="delayed"')
    [[ $arm == *-edges ]] && recipe+=(--set precision.fp8_bf16_first_blocks=1 --set precision.fp8_bf16_last_blocks=1)
    RUN_LIMIT_S=400 timed_run "parity-$arm" examples/gpt-1gpu.toml "${sp[@]}" "${recipe[@]}"
    files+=("parity-$arm.jsonl")
  done
  (cd "$OUT" && python3 "$OLDPWD/bench/loss_parity.py" "${files[@]}") | tee -a "$table"
  (cd "$OUT" && "$HOST" plot "${files[@]}" --title "1.3B GPT, bf16 against ${PARITY_ARMS:-fp8 fp8-delayed}" --svg "$RESULTS/parity.svg")
  cp "$OUT"/parity-*.jsonl "$RESULTS/" 2>/dev/null
  ;;
conformance)
  for comm in comm-ucx:cuda comm-nccl; do
    log="conformance-${comm%%:*}.log"
    plugin=$B/lib/ptdp/libptdp-${comm%%:*}.so${comm#${comm%%:*}}
    PTDP_CONFORMANCE_COMM=$plugin timeout 300 "$B/bin/test-conformance-comm" > "$OUT/$log" 2>&1
    rc=$?
    row "conformance suite, $comm" "$(grep -oE '\[  PASSED  \] [0-9]+' "$OUT/$log" | grep -oE '[0-9]+$' || echo 0) pass, $(grep -cE '^\[  FAILED  \] .* ms\)$' "$OUT/$log") fail, $(grep -cE '^\[  SKIPPED \] .* ms\)$' "$OUT/$log") not run (they need more GPUs) (exit $rc)"
    grep -E '^\[  (FAILED|SKIPPED) \] .* ms\)$' "$OUT/$log" | head -20
  done
  ;;
smoke)
  # Three steps on one rank and on two ranks sharing the GPU; a run still going after 60 s gets
  # every thread's stack printed (cuda-gdb), so a hang says where it is.
  for spec in "smoke-1 1 1" "smoke-t2 2 2"; do
    read -r name n t <<< "$spec"
    "$HOST" run examples/gpt-small-1gpu-layouts.toml --nproc $n --set parallel.tensor=$t --set run.steps=3 \
      --set run.log_every=1 --metrics "$OUT/$name.jsonl" > "$OUT/$name.log" 2>&1 &
    job=$!
    for _ in $(seq 60); do kill -0 $job 2>/dev/null || break; sleep 1; done
    if kill -0 $job 2>/dev/null; then
      for pid in $(pgrep -f "ptdp-host run examples/gpt-small"); do
        echo "== stacks of $pid"; timeout 60 cuda-gdb -p $pid -batch -ex "thread apply all bt" 2>&1 | grep -E "^#|^Thread" | head -60
      done
      kill -9 $(pgrep -f "ptdp-host run examples/gpt-small") 2>/dev/null
    fi
    wait $job; rc=$?
    row "smoke: $name" "exit $rc, $(grep -sc '"step"' "$OUT/$name.jsonl") of 3 steps"
    tail -4 "$OUT/$name.log"
  done
  ;;
layouts)
  # Every layout of the small model on the one GPU against its single-rank run, same seed, data
  # and dropout masks (layout-independent): losses within 2e-3 relative (the layouts sum the same
  # bf16 products in other orders, and 20 steps carry the rounding forward: at most 2.5e-4
  # measured, BENCHMARKS.md; a defect that moves the loss by 0.5% fails), and within the same
  # tolerance of kernels-ref on the CPU.
  M=examples/gpt-small-1gpu-layouts.toml
  # name: t p d v scatter_gather recompute
  specs=("single 1 1 1 1 false none" "t2 2 1 1 1 false none" "p2 1 2 1 1 false none" "p2v2sg 1 2 1 2 true none"
         "p4v2sg 1 4 1 2 true none" "d2 1 1 2 1 false none" "t2p2d2v2sg 2 2 2 2 true none" "t4p2sg-full 4 2 1 1 true full")
  for spec in "${specs[@]}"; do
    read -r name t p d v sg rc <<< "$spec"
    sched=sched-1f1b; [ "$v" -gt 1 ] && sched=sched-interleaved
    timed_run layout-$name $M --nproc $((t * p * d)) --set parallel.tensor=$t --set parallel.pipeline=$p \
      --set parallel.data=$d --set parallel.virtual_stages=$v --set parallel.scatter_gather=$sg \
      --set "parallel.recompute=\"$rc\"" --set "plugins.scheduler=\"$sched\""
  done
  # kernels-ref takes minutes a step here; LAYOUT_CPU_REFERENCE names its metrics from elsewhere.
  if [ -n "${LAYOUT_CPU_REFERENCE:-}" ]; then cp "$LAYOUT_CPU_REFERENCE" "$OUT/layout-cpu.jsonl"
  else RUN_LIMIT_S=1800 timed_run layout-cpu $M --set 'plugins.kernels="kernels-ref"' --set 'precision.params="fp32"'; fi
  python3 - "$OUT" "${specs[@]}" <<'PY' | tee -a "$table"
import json, sys
out, specs = sys.argv[1], sys.argv[2:]
def losses(name):
    try:
        return [r["loss"] for r in (json.loads(l) for l in open(f"{out}/layout-{name}.jsonl") if l.strip()) if "step" in r]
    except OSError:
        return []
def worst(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b)) if len(a) == len(b) == 20 else None
base, cpu = losses("single"), losses("cpu")
print(f"{'layout (t p d v sg recompute)':44} {'vs 1 rank':>10} {'vs CPU':>10}  verdict")
for spec in specs:
    name, t, p, d, v, sg, rc = spec.split()
    run = losses(name)
    a, c = worst(run, base), worst(run, cpu)
    ok = a is not None and c is not None and a < 2e-3 and c < 2e-3
    fmt = lambda x: f"{x:10.2e}" if x is not None else f"{'no run':>10}"
    print(f"{name + ' (' + ' '.join([t, p, d, v, 'sg' if sg == 'true' else '-', rc]) + ')':44} {fmt(a)} {fmt(c)}  "
          f"{'PASS' if ok else 'FAIL'} ({len(run)} steps)")
PY
  # A rank killed mid-step: every other rank must stop with an error naming it, within the timeout.
  timeout 150 "$HOST" run $M --nproc 4 --set parallel.tensor=2 --set parallel.pipeline=2 --set run.steps=100000 \
    --set launch.timeout_s=30 --metrics "$OUT/kill.jsonl" > "$OUT/kill.log" 2>&1 &
  job=$!
  for _ in $(seq 600); do steps=$(grep -sc '"step"' "$OUT/kill.jsonl"); [ "${steps:-0}" -ge 2 ] && break; sleep 0.1; done
  victim=""
  launcher=$(pgrep -P $job -x ptdp-host)  # the launcher, under timeout; its children are the ranks
  for pid in $(pgrep -P "$launcher"); do tr '\0' '\n' < /proc/$pid/environ | grep -qx PTDP_RANK=1 && victim=$pid; done
  killed=$(date +%s.%N)
  [ -n "$victim" ] && kill -9 "$victim"
  wait $job; rc=$?
  took=$(awk "BEGIN { print $(date +%s.%N) - $killed }")
  named=$(grep -cE "rank 1|peer 1|world rank 1" "$OUT/kill.log")
  verdict=FAIL; [ -n "$victim" ] && [ $rc -ne 0 ] && [ "$named" -ge 1 ] && awk "BEGIN { exit !($took < 40) }" && verdict=PASS
  row "rank 1 of t2 p2 killed mid-step" "$verdict: job exit $rc after ${took%.*} s (timeout 30 s), $named lines name rank 1"
  grep -E "error|killed" "$OUT/kill.log" | head -6
  ;;
layouts-1.3b)
  # The 1.3B model, 10 steps, split over two ranks on the one GPU, against its single-rank run.
  big=(--set run.steps=10 --set run.log_every=5 --set 'plugins.communicator="comm-ucx"' --set launch.ranks_per_gpu=2)
  timed_run big-single examples/gpt-1gpu.toml "${big[@]}"
  timed_run big-t2 examples/gpt-1gpu.toml "${big[@]}" --nproc 2 --set parallel.tensor=2
  timed_run big-single8 examples/gpt-1gpu.toml "${big[@]}" --set parallel.global_batch=8
  timed_run big-p2 examples/gpt-1gpu.toml "${big[@]}" --nproc 2 --set parallel.pipeline=2 --set parallel.global_batch=8
  python3 - "$OUT" <<'PY' | tee -a "$table"
import json, sys
out = sys.argv[1]
def losses(name):
    try:
        return [r["loss"] for r in (json.loads(l) for l in open(f"{out}/big-{name}.jsonl") if l.strip()) if "step" in r]
    except OSError:
        return []
for run, base, what in (("t2", "single", "1.3B t 2 (2 ranks, 1 GPU), B 4"), ("p2", "single8", "1.3B p 2 (2 ranks, 1 GPU), B 8")):
    a, b = losses(run), losses(base)
    w = max(abs(x - y) / abs(y) for x, y in zip(a, b)) if len(a) == len(b) == 10 else None
    # 4e-3: the 1.3B t 2 run was 9.2e-4 from one rank (BENCHMARKS.md), below a 0.5% defect.
    print(f"{what:44} {'no run' if w is None else f'{w:10.2e}'}  {'PASS' if w is not None and w < 4e-3 else 'FAIL'} "
          f"(10 steps, loss {b[0] if b else float('nan'):.4f} -> {b[-1] if b else float('nan'):.4f})")
PY
  ;;
dopt)
  # The small GPT, 20 steps: d 2 with and without the distributed optimizer against d 1 (same
  # global batch, so the same model trained).
  M=examples/gpt-small-1gpu-layouts.toml
  timed_run dopt-d1 $M
  timed_run dopt-d2 $M --nproc 2 --set parallel.data=2
  timed_run dopt-d2-distopt $M --nproc 2 --set parallel.data=2 --set parallel.distributed_optimizer=true
  row "small d 2 vs d 1" "$(loss_gap "$OUT/dopt-d2.jsonl" "$OUT/dopt-d1.jsonl" 20)"
  row "small d 2 distributed optimizer vs d 1" "$(loss_gap "$OUT/dopt-d2-distopt.jsonl" "$OUT/dopt-d1.jsonl" 20)"
  # The 1.3B model, 10 steps at B 8: two ranks on the one GPU over comm-ucx, each rank's peak
  # device memory (nvidia-smi, per process) with and without the distributed optimizer.
  big=(--set run.steps=10 --set run.log_every=5 --set 'plugins.communicator="comm-ucx"' --set launch.ranks_per_gpu=2
       --set parallel.global_batch=8)
  timed_run dopt-big-d1 examples/gpt-1gpu.toml "${big[@]}"
  # The distributed optimizer's weight all-gathers beside the next forward (the default) and right
  # after Adam: the step time of each, steps 4-10.
  for arm in "d2 false true" "d2-distopt true true" "d2-distopt-after-adam true false"; do
    read -r name distopt overlap <<< "$arm"
    with_rank_memory "$OUT/dopt-big-$name.peak" timed_run dopt-big-$name examples/gpt-1gpu.toml "${big[@]}" \
      --nproc 2 --set parallel.data=2 --set parallel.distributed_optimizer=$distopt \
      --set parallel.overlap_param_gather=$overlap
    row "1.3B $name vs d 1" "$(loss_gap "$OUT/dopt-big-$name.jsonl" "$OUT/dopt-big-d1.jsonl" 10)"
    row "1.3B $name: peak GiB per rank (nvidia-smi)" "$(cat "$OUT/dopt-big-$name.peak")"
    row "1.3B $name: rank 0 allocated" "$(grep -oE 'fp32 master weights .*' "$OUT/dopt-big-$name.log" | head -1)"
    row "1.3B $name: step ms (steps 4-10)" "$(steady "$OUT/dopt-big-$name.jsonl" step_time_s 3 1000)"
  done
  # Whether the bucket reductions ran beside the backward: a profiled trace of one step at d 2,
  # the lane's reduction spans against each rank's compute-stream kernels.
  RUN_LIMIT_S=300 timed_run dopt-big-d2-trace examples/gpt-1gpu.toml "${big[@]}" --nproc 2 --set parallel.data=2 \
    --set run.steps=3 --profile --trace "$OUT/dopt-trace.json" --trace-steps 1
  python3 scripts/gpu/reduction_overlap.py "$OUT/dopt-trace.json" > "$OUT/dopt-overlap.txt" 2>&1
  row "1.3B d2: reductions beside compute" "$(tail -1 "$OUT/dopt-overlap.txt")"
  sed 's/^/    /' "$OUT/dopt-overlap.txt" | tee -a "$table"
  [ -f "$OUT/dopt-trace.json" ] && gzip -c "$OUT/dopt-trace.json" > "$RESULTS/dopt-trace.json.gz"
  ;;
bench)
  for b in 4 8; do
    with_peak_memory "$OUT/bench-b$b.peak" "$HOST" run examples/gpt-1gpu.toml --set parallel.micro_batch=$b \
      --set parallel.global_batch=$b --set run.steps=13 --set run.log_every=13 \
      --metrics "$OUT/bench-b$b.jsonl" > "$OUT/bench-b$b.log" 2>&1 || tail -5 "$OUT/bench-b$b.log"
    row "ptdp 1.3B b=$b: TFLOP/s per GPU (72-formula)" "$(steady "$OUT/bench-b$b.jsonl" tflops_per_gpu 3), peak $(cat "$OUT/bench-b$b.peak") GiB (nvidia-smi)"
    python3 "$B/bench/torch_gpt.py" --layers 24 --hidden 2048 --heads 16 --seq 2048 --vocab 51200 \
      --micro-batch $b --steps 10 > "$OUT/torch-b$b.json" 2> "$OUT/torch-b$b.log" || tail -5 "$OUT/torch-b$b.log"
    row "pytorch eager 1.3B b=$b: TFLOP/s per GPU" "$(torch_result "$OUT/torch-b$b.json")"
  done
  python3 "$B/bench/torch_gpt.py" --layers 24 --hidden 2048 --heads 16 --seq 2048 --vocab 51200 \
    --micro-batch 4 --steps 10 --compile > "$OUT/torch-compile-b4.json" 2> "$OUT/torch-compile-b4.log" || tail -5 "$OUT/torch-compile-b4.log"
  row "pytorch torch.compile 1.3B b=4: TFLOP/s per GPU" "$(torch_result "$OUT/torch-compile-b4.json")"
  ;;
accumulation)
  # Micro-batch 4 as the 1.3B's other runs; 8 and 16 as ptdp-host plan ranks them at this batch.
  for b in 4 8 16; do
    with_peak_memory "$OUT/accumulation-b$b.peak" timed_run accumulation-b$b examples/gpt-1gpu.toml \
      --set parallel.micro_batch=$b --set parallel.global_batch=32 --set run.steps=8 --set run.log_every=8
    row "ptdp 1.3B b=$b B=32: TFLOP/s per GPU (72-formula)" \
      "$(steady "$OUT/accumulation-b$b.jsonl" tflops_per_gpu 3), peak $(cat "$OUT/accumulation-b$b.peak") GiB (nvidia-smi)"
  done
  ;;
gemm-workspace)
  # Which GEMMs cuBLASLt's workspace is offered to: ptdp-host ab at global batch 4 and 32, then the
  # 1.3B step profiled with each scope in mirrored order (the kernels' times beside clock and power).
  k=plugins.options.kernels
  scopes=(--arm all --set "$k.gemm_workspace_scope=\"all\"" --arm gradient_epilogues --set "$k.gemm_workspace_scope=\"gradient_epilogues\"")
  "$HOST" ab examples/gpt-1gpu.toml --rounds 3 --steps 10 --warmup 3 --out "$OUT/ab-scope-b4" "${scopes[@]}" > "$OUT/ab-scope-b4.log" 2>&1
  row "ab: GEMM workspace scope, 1.3B b=4" "exit $?"
  "$HOST" ab examples/gpt-1gpu.toml --set parallel.global_batch=32 --rounds 2 --steps 6 --warmup 2 --out "$OUT/ab-scope-b32" \
    "${scopes[@]}" > "$OUT/ab-scope-b32.log" 2>&1
  row "ab: GEMM workspace scope, 1.3B b=4 B=32" "exit $?"
  for r in ab-scope-b4 ab-scope-b32; do ab_report $r; done
  round=0
  for scope in all gradient_epilogues gradient_epilogues all; do
    round=$((round + 1))
    RUN_LIMIT_S=300 timed_run "scope-profile-$round-$scope" examples/gpt-1gpu.toml --set run.steps=8 --set run.log_every=8 \
      --profile --trace-steps 5 --set "$k.gemm_workspace_scope=\"$scope\"" > /dev/null
    log=$OUT/scope-profile-$round-$scope.log
    row "profile $round $scope" "$(grep -o '[0-9.]* ms a step' "$log" | head -1); $(grep -E '^  (GEMM|copies and memsets|idle) ' "$log" |
      awk '{v=$0; sub(/^  /, "", v); split(v, f, /  +/); printf "%s %s ms (%s); ", f[1], f[2], f[3]}')$(grep -o 'SM clock [0-9]* MHz mean' "$log" | head -1)"
  done
  ;;
graph-replay)
  # What a CUDA graph saves on 4 layers of the 1.3B's forward and backward, in PyTorch.
  python3 bench/graph_replay.py --layers 4 > "$OUT/graph-replay.json" 2> "$OUT/graph-replay.log" || tail -5 "$OUT/graph-replay.log"
  row "CUDA graph replay vs eager, 4 layers (PyTorch)" "$(cat "$OUT/graph-replay.json")"
  ;;
stream-overlap)
  python3 "$B/bench/stream_overlap.py" > "$OUT/stream-overlap.json" 2> "$OUT/stream-overlap.log" || tail -5 "$OUT/stream-overlap.log"
  row "AdamW beside GEMMs on another stream (ms; hidden share)" "$(cat "$OUT/stream-overlap.json")"
  ;;
ab)
  # Each comparison in one ptdp-host ab: arms interleaved A B B A …, so the GPU's clock and
  # temperature drift falls on both arms alike. AB_ROUNDS sets the jobs per arm.
  rounds=${AB_ROUNDS:-4}
  "$HOST" ab examples/gpt-1gpu.toml --rounds $rounds --steps 10 --warmup 3 --out "$OUT/ab-attention" \
    --arm flash --set 'plugins.options.kernels.attention="flash"' \
    --arm unfused --set 'plugins.options.kernels.attention="unfused"' > "$OUT/ab-attention.log" 2>&1
  row "ab: flash vs unfused attention, 1.3B b=4" "exit $?"
  "$HOST" ab examples/gpt-1gpu.toml --set parallel.global_batch=8 --rounds $rounds --steps 10 --warmup 3 \
    --out "$OUT/ab-microbatch" --arm b4 --set parallel.micro_batch=4 --arm b8 --set parallel.micro_batch=8 \
    > "$OUT/ab-microbatch.log" 2>&1
  row "ab: micro-batch 4 vs 8, 1.3B B=8" "exit $?"
  for r in ab-attention ab-microbatch; do ab_report $r; done
  ;;
baseline)
  # This tree's kernels-fused against the one scripts/gpu/build.sh built from BASELINE=COMMIT (the
  # bundle's baseline/ folder, first on the arm's plugin search path), same host, in one ptdp-host
  # ab: the 1.3B model at micro-batch 4, and at global batch 32 (8 microbatches a step).
  if [ -f "$B/baseline/libptdp-kernels-fused.so" ]; then
    base=$(cut -c1-7 "$B/baseline/commit")
    for global in 4 32; do
      "$HOST" ab examples/gpt-1gpu.toml --set parallel.global_batch=$global --rounds "${AB_ROUNDS:-3}" --steps 10 \
        --warmup 3 --out "$OUT/ab-baseline-B$global" --arm "baseline_$base" --set "plugins.search_path=[\"$B/baseline\"]" \
        --arm this_tree > "$OUT/ab-baseline-B$global.log" 2>&1
      row "ab: kernels-fused of $base vs this tree, B=$global" "exit $?"
      ab_report ab-baseline-B$global
    done
  else
    row "baseline" "no baseline/ in the bundle: build it with BASELINE=COMMIT scripts/gpu/build.sh"
  fi
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
fusions)
  # kernels-fused's fusion options all on against all off, in one ptdp-host ab:
  # arms interleaved, so the GPU's clock drift falls on both alike. AB_ROUNDS sets jobs per arm.
  "$HOST" ab examples/gpt-1gpu.toml --rounds "${AB_ROUNDS:-4}" --steps 10 --warmup 3 --out "$OUT/ab-fusions" \
    --arm fused --arm unfused "${FUSIONS_OFF[@]}" > "$OUT/ab-fusions.log" 2>&1
  row "ab: fusions on vs off, 1.3B b=4" "exit $?"
  ab_report ab-fusions
  ;;
fusions-each)
  # Each fusion alone against none, in one ptdp-host ab: which of them pays.
  k=plugins.options.kernels
  "$HOST" ab examples/gpt-1gpu.toml --rounds "${AB_ROUNDS:-2}" --steps 10 --warmup 3 --out "$OUT/ab-fusions-each" \
    --set $k.gelu_epilogue=false --set $k.bias_grad_epilogue=false --set $k.fused_layer_norm_backward=false \
    --set $k.fused_residual_layer_norm=false --set $k.layer_norm_bias_grads=false --set $k.one_pass_cross_entropy=false --set $k.first_backward_writes_gradients=false \
    --arm none --arm gelu_epilogue --set $k.gelu_epilogue=true --arm bias_grad_epilogue --set $k.bias_grad_epilogue=true \
    --arm fused_layer_norm_backward --set $k.fused_layer_norm_backward=true \
    --arm fused_residual_layer_norm --set $k.fused_residual_layer_norm=true \
    --arm layer_norm_bias_grads --set $k.layer_norm_bias_grads=true \
    --arm one_pass_cross_entropy --set $k.one_pass_cross_entropy=true \
    --arm first_backward_writes_gradients --set $k.first_backward_writes_gradients=true > "$OUT/ab-fusions-each.log" 2>&1
  row "ab: each fusion alone vs none, 1.3B b=4" "exit $?"
  ab_report ab-fusions-each
  ;;
option|first-gradient)
  # One kernels-fused option off against on, in one ptdp-host ab, at global batch 4 and 32.
  option=${OPTION:-}
  [ "$part" = first-gradient ] && option=first_backward_writes_gradients
  if [ -z "$option" ]; then row "option" "OPTION=NAME names the kernels-fused option"; continue; fi
  for global in 4 32; do
    "$HOST" ab examples/gpt-1gpu.toml --set parallel.global_batch=$global --rounds "${AB_ROUNDS:-4}" --steps 10 --warmup 3 \
      --out "$OUT/ab-$option-B$global" --arm off --set "plugins.options.kernels.$option=false" \
      --arm on --set "plugins.options.kernels.$option=true" > "$OUT/ab-$option-B$global.log" 2>&1
    row "ab: $option off vs on, B=$global" "exit $?"
    ab_report "ab-$option-B$global"
  done
  ;;
gemm)
  # The GEMMs' algorithm choice and the GeLU epilogues, each alone and together, against neither,
  # in one ptdp-host ab.
  k=plugins.options.kernels
  "$HOST" ab examples/gpt-1gpu.toml --rounds "${AB_ROUNDS:-2}" --steps 10 --warmup 3 --out "$OUT/ab-gemm" \
    --arm heuristic --set $k.gemm_autotune=false --set $k.gelu_epilogue=false \
    --arm autotune --set $k.gemm_autotune=true --set $k.gelu_epilogue=false \
    --arm gelu_epilogue --set $k.gemm_autotune=false --set $k.gelu_epilogue=true \
    --arm autotune_gelu_epilogue --set $k.gemm_autotune=true --set $k.gelu_epilogue=true > "$OUT/ab-gemm.log" 2>&1
  row "ab: GEMM autotuning and GeLU epilogues, 1.3B b=4" "exit $?"
  ab_report ab-gemm
  for arm in autotune autotune_gelu_epilogue; do
    echo "$arm, first job: the GEMMs whose autotuned algorithm is not the heuristic's first" | tee -a "$table"
    grep -hE "autotuned to|does not run" "$OUT/ab-gemm/runs/$arm-r1.log" 2>/dev/null | sed 's/.*kernels-fused: /  /' | tee -a "$table"
  done
  ;;
gemm-profile)
  # The same four settings as `gemm`, each profiled (2 steps of 5) twice in mirrored order: the
  # kernels' own times, which vary less from run to run than step times do.
  k=plugins.options.kernels
  declare -A arm_set=([heuristic]="--set $k.gemm_autotune=false --set $k.gelu_epilogue=false"
    [autotune]="--set $k.gemm_autotune=true --set $k.gelu_epilogue=false"
    [gelu_epilogue]="--set $k.gemm_autotune=false --set $k.gelu_epilogue=true"
    [autotune_gelu_epilogue]="--set $k.gemm_autotune=true --set $k.gelu_epilogue=true")
  round=0
  for arm in heuristic autotune gelu_epilogue autotune_gelu_epilogue autotune_gelu_epilogue gelu_epilogue autotune heuristic; do
    round=$((round + 1))
    # shellcheck disable=SC2086
    RUN_LIMIT_S=300 timed_run "gemm-profile-$round-$arm" examples/gpt-1gpu.toml --set run.steps=5 --set run.log_every=5 \
      --profile ${arm_set[$arm]} > /dev/null
    log=$OUT/gemm-profile-$round-$arm.log
    row "profile $round $arm" "$(grep -o '[0-9.]* ms a step' "$log" | head -1); $(grep -E '^  (GEMM|bias \+ GeLU|bias gradients|idle) ' "$log" |
      awk '{v=$0; sub(/^  /, "", v); split(v, f, /  +/); printf "%s %s ms; ", f[1], f[2]}')$(grep -o 'SM clock [0-9]* MHz mean' "$log" | head -1)"
  done
  ;;
fp8-cast-probe)
  # The FP8 cast kernels of a 1.3B step (delayed scaling) under ncu: time, DRAM bytes and
  # throughput against the device's peak, per kernel: how far the casts are from the memory
  # ceiling that adam-bandwidth measures.
  timeout 300 ncu --target-processes all --kernel-name regex:fp8_ --launch-skip 400 --launch-count 40 --csv --print-units base \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
    "$HOST" run examples/gpt-1gpu.toml --set run.steps=3 --set 'precision.fp8="hybrid"' --set 'precision.fp8_recipe="delayed"' \
    > "$OUT/fp8-cast-ncu.csv" 2> "$OUT/fp8-cast-ncu.log"
  row "ncu: FP8 cast kernels, 1.3B delayed" "exit $?"
  python3 - "$OUT/fp8-cast-ncu.csv" <<'PY' | tee -a "$table"
import csv, sys, collections
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head, rows = rows[0], rows[1:]
col = {name: i for i, name in enumerate(head)}
per = collections.defaultdict(lambda: collections.defaultdict(list))
for r in rows:
    key = (r[col["Kernel Name"]][:60], r[col["Grid Size"]] if "Grid Size" in col else "")
    per[key][r[col["Metric Name"]]].append(float(r[col["Metric Value"]].replace(",", "")))
print(f"{'kernel (grid)':70} {'n':>3} {'us':>8} {'MB':>8} {'GB/s':>7} {'%DRAM':>6} {'%warps':>6}")
for (name, grid), m in per.items():
    n = len(m["gpu__time_duration.sum"])
    us = sum(m["gpu__time_duration.sum"]) / n / 1e3
    mb = (sum(m["dram__bytes_read.sum"]) + sum(m["dram__bytes_write.sum"])) / n / 1e6
    print(f"{name + ' ' + grid:70} {n:3} {us:8.1f} {mb:8.1f} {mb / us * 1e3:7.0f} "
          f"{sum(m['dram__throughput.avg.pct_of_peak_sustained_elapsed']) / n:6.1f} "
          f"{sum(m['sm__warps_active.avg.pct_of_peak_sustained_active']) / n:6.1f}")
PY
  ;;
zb-costs)
  # sched-zb on the 1.3B at p 2 (two ranks sharing the GPU over comm-ucx, m 4): the split backward
  # on the GPU, its losses beside 1F1B's, and T_F, T_B and T_W from the trace put into the
  # simulator at p 4, m 8 (docs/schedules.md, "Measured costs").
  zb=(--nproc 2 --set parallel.pipeline=2 --set launch.ranks_per_gpu=2 --set 'plugins.communicator="comm-ucx"'
      --set parallel.global_batch=16 --set run.steps=4 --set run.log_every=1)
  RUN_LIMIT_S=200 timed_run zb-1f1b examples/gpt-1gpu.toml "${zb[@]}"
  RUN_LIMIT_S=200 timed_run zb-zb examples/gpt-1gpu.toml "${zb[@]}" --set 'plugins.scheduler="sched-zb"' --trace "$OUT/zb-trace.json"
  row "1.3B p 2 sched-zb vs sched-1f1b losses" "$(loss_gap "$OUT/zb-zb.jsonl" "$OUT/zb-1f1b.jsonl" 4)"
  "$HOST" schedule --scheduler sched-zb -p 4 -m 8 --posted-ahead --costs-from-trace "$OUT/zb-trace.json" 2>&1 | tee "$OUT/zb-schedule.txt" | tail -15 | tee -a "$table"
  pack_logs
  ;;
adam-bandwidth)
  "$B/bin/kernels-fused-adam-bandwidth" > "$OUT/adam-bandwidth.log" 2>&1
  row "adam-bandwidth" "exit $?"
  tee -a "$table" < "$OUT/adam-bandwidth.log"
  ;;
fp8-cast-bandwidth)
  "$B/bin/kernels-fused-fp8-cast-bandwidth" > "$OUT/fp8-cast-bandwidth.log" 2>&1
  row "fp8-cast-bandwidth" "exit $?"
  tee -a "$table" < "$OUT/fp8-cast-bandwidth.log"
  ;;
profile)
  # The table from 3 profiled steps; the trace (host ops beside the GPU streams) from one more run.
  sets=()
  for kv in ${PROFILE_SET:-}; do sets+=(--set "$kv"); done
  RUN_LIMIT_S=300 timed_run profile examples/gpt-1gpu.toml --set run.steps=5 --set run.log_every=5 --profile --trace-steps 3 \
    "${sets[@]}"
  row "profile: 1.3B b=4, steps 2-4 ${PROFILE_SET:-}" "exit $?, table below"
  sed -n '/profile of rank/,/summed over streams/p' "$OUT/profile.log" | tee -a "$table"
  RUN_LIMIT_S=300 timed_run profile-trace examples/gpt-1gpu.toml --set run.steps=3 --profile --trace "$OUT/profile-trace.json" \
    --trace-steps 1 "${sets[@]}"
  row "profile: trace with GPU stream tracks" "exit $?"
  [ -f "$OUT/profile-trace.json" ] && gzip -c "$OUT/profile-trace.json" > "$RESULTS/profile-trace.json.gz"
  ;;
*) echo "unknown part: $part"; exit 2 ;;
esac
pack_logs
done
echo; cat "$table"
