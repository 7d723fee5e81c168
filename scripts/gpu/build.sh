#!/usr/bin/env bash
# Builds, on this machine, what travels to the GPU machine: ptdp-host, every plugin (CUDA ones for
# sm_90), the device test programs, the shared libraries the GPU machine lacks (OpenBLAS for
# kernels-ref, the CUDA-enabled UCX of the libucx-cu13 wheel for comm-ucx) and the PyTorch
# baseline, packed into .gpu-bundle/bundle.tar.gz (what a device call may carry is capped, and
# the libraries compress about 3:1). Then run scripts/gpu/run.sh there with .gpu-bundle carried.
set -euo pipefail
cd "$(dirname "$0")/../.."
./scripts/setup.sh --deps-only   # packages, cudnn-frontend headers, libucx-cu13
# BUILD_DIR=build reuses the default preset's folder when it was configured with CUDA (same sm_90).
build=${BUILD_DIR:-build-gpu}
[ "$build" = build-gpu ] && cmake --preset gpu >/dev/null
cmake --build "$build" -j2 --target ptdp-host kernels-fused-device-checks kernels-fused-adam-bandwidth kernels-fused-fp8-cast-bandwidth comm-nccl-device-test test-conformance-comm test-conformance-kernels \
  ptdp-plugin-kernels-fused ptdp-plugin-comm-nccl ptdp-plugin-kernels-ref ptdp-plugin-comm-ucx \
  ptdp-plugin-sched-1f1b ptdp-plugin-sched-interleaved ptdp-plugin-sched-zb ptdp-plugin-ckpt-fs ptdp-profiler-cupti

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/bench" "$stage/deps/ucx"
cp "$build"/bin/ptdp-host "$build"/bin/kernels-fused-device-checks "$build"/bin/kernels-fused-adam-bandwidth "$build"/bin/kernels-fused-fp8-cast-bandwidth "$build"/bin/comm-nccl-device-test \
  "$build"/bin/test-conformance-comm "$build"/bin/test-conformance-kernels "$stage/bin/"
cp -r "$build"/lib/ptdp "$stage/lib/"
# The wheel's UCX, with its transport modules (cuda_copy and cuda_ipc are in libuct_cuda).
ucx=.deps/ucx/libucx/lib
for lib in libucp libuct libucs libucm libucs_signal; do cp -L "$ucx/$lib.so.0" "$stage/deps/"; done
cp -L "$ucx"/ucx/libuct_cuda.so* "$ucx"/ucx/libucm_cuda.so* "$ucx"/ucx/libuct_cma.so* "$stage/deps/ucx/"
# Libraries of ptdp-host (SentencePiece) and kernels-ref that the GPU machine does not have: what
# ldd resolves from the Debian system, nothing of CUDA (the GPU machine has its own driver, CUDA,
# NCCL and cuDNN) or UCX.
ldd "$build"/bin/ptdp-host "$build"/lib/ptdp/libptdp-kernels-ref.so | awk '/=> \//{print $3}' | sort -u |
  grep -vE 'libc\.so|libm\.so|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl|librt|cuda|nccl|cudnn|cublas|libuc[pstm]' |
  while read -r lib; do cp -L "$lib" "$stage/deps/"; done
# CUPTI for run --profile: part of the CUDA toolkit, which the GPU machine need not have whole.
ldd "$build"/lib/ptdp/profiler/libptdp-profiler-cupti.so | awk '/libcupti/{print $3}' | while read -r lib; do cp -L "$lib" "$stage/deps/"; done
cp bench/torch_gpt.py bench/stream_overlap.py "$stage/bench/"
# BASELINE=COMMIT: that commit's kernels-fused plugin too, in the bundle's baseline/ folder, for
# run.sh's `baseline` part: an A/B of this tree's kernels-fused against it under the same host,
# in one device call (the plugin interface must not have changed in between).
if [ -n "${BASELINE:-}" ]; then
  src=$PWD/.gpu-bundle/baseline-src
  git worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
  git worktree add --detach "$src" "$BASELINE"
  launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DPTDP_CUDA=ON -DPTDP_BUILD_TESTS=OFF \
    -DPTDP_CUDNN_FRONTEND_DIR="$PWD/.deps/cudnn_frontend/include" "${launcher[@]}" >/dev/null
  cmake --build "$src/build" -j2 --target ptdp-plugin-kernels-fused
  mkdir -p "$stage/baseline"
  cp "$src/build/lib/ptdp/libptdp-kernels-fused.so" "$stage/baseline/"
  git -C "$src" rev-parse HEAD > "$stage/baseline/commit"
  git worktree remove --force "$src"
fi
mkdir -p .gpu-bundle
tar czf .gpu-bundle/bundle.tar.gz -C "$stage" .
du -sh .gpu-bundle/bundle.tar.gz
