#!/usr/bin/env python3
"""How much of a bandwidth-bound optimizer step hides behind GEMMs that run on another stream.

The question before moving Adam beside the next step's forward: on one GPU, does a memory-bound
kernel on a second stream run in the gaps of compute-bound GEMMs, or do the two simply take
turns? The probe times, each --rounds times (medians reported):
  gemm    --gemms FC1-shaped bf16 GEMMs ([tokens, h] x [h, 4h]) on one stream,
  adam    one fused AdamW step (PyTorch's multi-tensor kernel) over --layers fp32 tensors of
          --params / --layers elements each, on one stream,
  serial  both, one after the other on one stream,
  overlap both at once, the GEMMs on one stream and Adam on another (equal priority),
  low     the same with the GEMMs' stream at a higher priority than Adam's.
hidden = (serial - overlap) / adam: the share of Adam's time that the overlap saved. One JSON line
on stdout:
    python3 bench/stream_overlap.py [--gemms 72] [--params 1300000000] [--rounds 5]
"""
import argparse
import json
import statistics

import torch


def timed(fn):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gemms", type=int, default=72)
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--params", type=int, default=1_300_000_000)
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()

    dev = torch.device("cuda")
    x = torch.randn(args.tokens, args.hidden, device=dev, dtype=torch.bfloat16)
    w = torch.randn(args.hidden, 4 * args.hidden, device=dev, dtype=torch.bfloat16)
    y = torch.empty(args.tokens, 4 * args.hidden, device=dev, dtype=torch.bfloat16)
    params = [torch.zeros(args.params // args.layers, device=dev, requires_grad=True) for _ in range(args.layers)]
    for p in params:
        p.grad = torch.randn_like(p) * 1e-3
    opt = torch.optim.AdamW(params, lr=1e-4, fused=True)

    def gemms():
        for _ in range(args.gemms):
            torch.mm(x, w, out=y)

    main_stream = torch.cuda.current_stream()
    equal = torch.cuda.Stream()
    low = torch.cuda.Stream(priority=0)  # the default, and the lowest
    high = torch.cuda.Stream(priority=-1)  # a lower number runs first

    def side_by_side(gemm_stream, adam_stream):
        def run():
            gemm_stream.wait_stream(main_stream)
            adam_stream.wait_stream(main_stream)
            with torch.cuda.stream(adam_stream):
                opt.step()
            with torch.cuda.stream(gemm_stream):
                gemms()
            main_stream.wait_stream(gemm_stream)
            main_stream.wait_stream(adam_stream)
        return run

    cases = {
        "gemm": gemms,
        "adam": opt.step,
        "serial": lambda: (opt.step(), gemms()),
        "overlap": side_by_side(torch.cuda.Stream(), equal),
        "low": side_by_side(high, low),
    }
    for fn in cases.values():  # warm-up: cuBLAS heuristics, the optimizer's state
        timed(fn)
    ms = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, fn in cases.items():
            ms[name].append(timed(fn))
    med = {name: statistics.median(v) for name, v in ms.items()}
    flops = 2.0 * args.tokens * args.hidden * 4 * args.hidden * args.gemms
    report = {name: round(v, 3) for name, v in med.items()}
    report["gemm_tflops"] = round(flops / med["gemm"] / 1e9, 1)
    report["hidden"] = round((med["serial"] - med["overlap"]) / med["adam"], 3)
    report["hidden_low_priority"] = round((med["serial"] - med["low"]) / med["adam"], 3)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
