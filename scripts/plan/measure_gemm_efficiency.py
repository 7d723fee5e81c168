#!/usr/bin/env python3
"""Sustained bf16 GEMM throughput by size on this machine's GPU, as rows for a cluster file's
[[gpu.gemm_efficiency]] table (docs/planning.md).

Each GEMM runs back to back for --seconds (default 2) so the GPU reaches the clock it holds under
sustained load at its power cap, which is what training sees, not a short burst's boost clock.
The shapes are those of a GPT layer's GEMMs (tokens x hidden by hidden x n), from small to large.
Prints one TOML row per size, ascending in FLOPs, with the shape and TFLOP/s in a comment.

    python3 scripts/plan/measure_gemm_efficiency.py --peak-tflops 989
"""
import argparse
import time

import torch


def sustained_tflops(m: int, n: int, k: int, seconds: float) -> float:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    # Long enough a batch of launches that the host never starves the GPU, short enough to time.
    flops = 2.0 * m * n * k
    per_batch = max(1, int(2e12 / flops))
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(per_batch):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        done += per_batch
    # Time the last second again now that the clock has settled.
    start = time.perf_counter()
    timed = 0
    while time.perf_counter() - start < 1.0:
        for _ in range(per_batch):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        timed += per_batch
    return flops * timed / (time.perf_counter() - start) / 1e12


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peak-tflops", type=float, required=True, help="the GPU's dense bf16 peak")
    parser.add_argument("--seconds", type=float, default=2.0, help="warm-up per size before the timed second")
    args = parser.parse_args()
    # (tokens, n, k): tokens = b*s, k = h, n = the GEMM's output width on one tensor rank.
    shapes = [(512, 512, 512), (1024, 1024, 1024), (2048, 1024, 1024), (2048, 2048, 2048), (2048, 4096, 2048),
              (4096, 4096, 4096), (2048, 6144, 4096), (8192, 2048, 2048), (8192, 8192, 2048), (8192, 6144, 4096),
              (8192, 8192, 8192), (16384, 8192, 8192)]
    rows = []
    for m, n, k in shapes:
        tflops = sustained_tflops(m, n, k, args.seconds)
        rows.append((2.0 * m * n * k, tflops, (m, n, k)))
    rows.sort()
    print(f"# measured on {torch.cuda.get_device_name(0)}, torch {torch.__version__}, bf16, sustained")
    for flops, tflops, (m, n, k) in rows:
        print("[[gpu.gemm_efficiency]]")
        print(f"flops = {flops:.3e}  # {m}x{k} by {k}x{n}: {tflops:.1f} TFLOP/s")
        print(f"efficiency = {tflops / args.peak_tflops:.3f}")


if __name__ == "__main__":
    main()
