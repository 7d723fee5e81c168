#!/usr/bin/env python3
"""FP8 against bf16 GEMMs of a GPT's linear layers on the GPU: the ceiling an FP8 recipe can reach.

For each linear layer (QKV, attention projection, FC1, FC2, logits) of a model of hidden size H
at T tokens per microbatch, times the three GEMMs of training as cuBLASLt runs them through
PyTorch (torch.mm for bf16, torch._scaled_mm for FP8, fp32 accumulation, bf16 out):
  forward         Y[T, N]  = X[T, K]  · W[N, K]ᵀ      E4M3 × E4M3
  input gradient  dX[T, K] = dY[T, N] · W[N, K]       E5M2 × E4M3
  weight gradient dW[N, K] = dYᵀ      · X             E5M2 × E4M3
Each GEMM runs back to back for --seconds (sustained, so the clock settles under the power cap),
timed with CUDA events. On Hopper FP8 GEMMs take only the TN layout, so the operands are laid
out as a cast + transpose kernel would leave them; that kernel's cost is not counted here.

    python3 bench/fp8_gemm.py --hidden 2048 --tokens 8192 --vocab 51200
"""
import argparse

import torch


def gemm_shapes(hidden, vocab):
    """(name, N, K) of each linear layer: Y[T, N] = X[T, K] · W[N, K]ᵀ."""
    return [("qkv", 3 * hidden, hidden), ("proj", hidden, hidden), ("fc1", 4 * hidden, hidden),
            ("fc2", hidden, 4 * hidden), ("logits", vocab, hidden)]


def sustained_tflops(fn, flops, seconds):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # Size the timed loop from one short timing, then run it for the whole time.
    start.record()
    for _ in range(10):
        fn()
    end.record()
    end.synchronize()
    reps = max(10, int(seconds * 1000 / (start.elapsed_time(end) / 10)))
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return flops * reps / (start.elapsed_time(end) / 1000) / 1e12


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--tokens", type=int, default=8192, help="tokens per microbatch, b * s")
    parser.add_argument("--vocab", type=int, default=51200)
    parser.add_argument("--seconds", type=float, default=1.5, help="how long each GEMM runs")
    args = parser.parse_args()
    dev = torch.device("cuda")
    e4m3, e5m2 = torch.float8_e4m3fn, torch.float8_e5m2
    one = torch.ones((), device=dev, dtype=torch.float32)
    T = args.tokens
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, T = {T}, sustained {args.seconds} s per GEMM")
    print("| layer | GEMM | bf16 TFLOP/s | FP8 TFLOP/s | FP8 fast accumulation | FP8 / bf16 | fast / bf16 |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, N, K in gemm_shapes(args.hidden, args.vocab):
        x = torch.randn(T, K, device=dev, dtype=torch.bfloat16)
        w = torch.randn(N, K, device=dev, dtype=torch.bfloat16) * 0.02
        dy = torch.randn(T, N, device=dev, dtype=torch.bfloat16) * 1e-3
        flops = 2.0 * T * N * K
        # (what, bf16 call, FP8 operands (a row-major, b column-major), a's format)
        cases = [
            ("forward", lambda: torch.mm(x, w.t()), x.to(e4m3), w.to(e4m3).t()),
            ("input gradient", lambda: torch.mm(dy, w), dy.to(e5m2), w.t().contiguous().to(e4m3).t()),
            ("weight gradient", lambda: torch.mm(dy.t(), x), dy.t().contiguous().to(e5m2), x.t().contiguous().to(e4m3).t()),
        ]
        for what, bf16_call, a, b in cases:
            bf16 = sustained_tflops(bf16_call, flops, args.seconds)
            fp8 = sustained_tflops(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                                   flops, args.seconds)
            fast = sustained_tflops(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                                             use_fast_accum=True), flops, args.seconds)
            print(f"| {name} {N}x{K} | {what} | {bf16:.0f} | {fp8:.0f} | {fast:.0f} | {fp8 / bf16:.2f} | {fast / bf16:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
