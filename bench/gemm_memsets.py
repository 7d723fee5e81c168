#!/usr/bin/env python3
"""What the GPU runs for three bf16 GEMMs in PyTorch, as torch.profiler records it.

ptdp's --profile trace shows a 4-byte memset before nearly every cuBLASLt GEMM; this shows whether
cuBLASLt issues it under PyTorch too (it does not come from the caller). Prints each device
activity's name and microseconds for: torch.mm [8192, 2048] x [2048, 8192], F.linear with a bias,
torch.mm [8192, 8192] x [8192, 2048], after three warm-up rounds.
    python3 bench/gemm_memsets.py
"""
import torch
from torch.profiler import ProfilerActivity, profile


def main():
    dev = torch.device("cuda")
    x = torch.randn(8192, 2048, device=dev, dtype=torch.bfloat16)
    w = torch.randn(8192, 2048, device=dev, dtype=torch.bfloat16)
    bias = torch.randn(8192, device=dev, dtype=torch.bfloat16)
    g = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)

    def gemms():
        torch.mm(x, w.t())
        torch.nn.functional.linear(x, w, bias)
        torch.mm(g, w)

    for _ in range(3):
        gemms()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        gemms()
        torch.cuda.synchronize()
    for e in p.events():
        if e.device_type.name == "CUDA":
            print(e.name[:90], round(e.device_time, 1))


if __name__ == "__main__":
    main()
