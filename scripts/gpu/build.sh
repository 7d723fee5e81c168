#!/usr/bin/env bash
# Builds, on this machine, the folder that travels to the GPU machine (.gpu-bundle/): ptdp-host,
# every plugin (CUDA ones for sm_90), the device test programs, the shared libraries the GPU
# machine lacks (OpenBLAS and UCX, for the CPU reference runs there) and the PyTorch baseline.
# Then run scripts/gpu/run.sh there with .gpu-bundle carried.
set -euo pipefail
cd "$(dirname "$0")/../.."
./scripts/setup.sh --deps-only   # packages and cudnn-frontend headers
cmake --preset gpu >/dev/null
cmake --build build-gpu -j2 --target ptdp-host kernels-fused-device-checks comm-nccl-device-test \
  ptdp-plugin-kernels-fused ptdp-plugin-comm-nccl ptdp-plugin-kernels-ref ptdp-plugin-comm-ucx \
  ptdp-plugin-sched-1f1b ptdp-plugin-sched-interleaved ptdp-plugin-ckpt-fs

bundle=.gpu-bundle
rm -rf "$bundle" && mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/bench"
cp build-gpu/bin/ptdp-host build-gpu/bin/kernels-fused-device-checks build-gpu/bin/comm-nccl-device-test "$bundle/bin/"
cp -r build-gpu/lib/ptdp "$bundle/lib/"
deps=$bundle/deps
mkdir -p "$deps/ucx"
# Libraries of the plugins that the GPU machine does not have: copy what ldd resolves from the
# Debian system, nothing of CUDA (the GPU machine has its own driver, CUDA, NCCL and cuDNN).
for so in build-gpu/lib/ptdp/libptdp-kernels-ref.so build-gpu/lib/ptdp/libptdp-comm-ucx.so; do
  ldd "$so" | awk '/=> \//{print $3}' | grep -vE 'libc\.so|libm\.so|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl|librt|cuda|nccl|cudnn|cublas' |
    while read -r lib; do cp -L "$lib" "$deps/"; done
done
cp -L /usr/lib/x86_64-linux-gnu/ucx/libuct_*.so* "$deps/ucx/" 2>/dev/null || true
for so in "$deps"/ucx/*.so*; do
  ldd "$so" | awk '/=> \//{print $3}' | grep -vE 'libc\.so|libm\.so|libstdc\+\+|libgcc_s|ld-linux|libpthread|libdl|librt' |
    while read -r lib; do [ -f "$deps/$(basename "$lib")" ] || cp -L "$lib" "$deps/"; done
done
cp ../shared/bench/torch_gpt.py "$bundle/bench/"
du -sh "$bundle"
