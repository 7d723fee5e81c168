#!/usr/bin/env python3
"""How much of a training step's launch gaps a CUDA graph removes, measured in PyTorch.

ptdp's --profile finds about 1% of a 1.3B step idle, between kernels. Capturing a microbatch's
forward and backward in a CUDA graph is the usual way to remove launch gaps. Before building that
into a kernels plugin, this measures what it buys on the same work: N transformer layers of the 1.3B's shape (bf16, flash attention,
micro-batch 4, sequence 2048, hidden 2048, 16 heads), forward and backward, run eagerly and as the
replay of one captured graph, in alternating rounds of R iterations (the GPU's power-capped
clock drifts; alternation puts the drift on both). Prints one JSON line: the median ms per
iteration of each, what the graph saves, and the device activities of one eager iteration
(kernels, memsets) from torch.profiler.
    python3 bench/graph_replay.py [--layers 4] [--rounds 6] [--iters 10] [--micro-batch 4]
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile


class Block(torch.nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(hidden)
        self.qkv = torch.nn.Linear(hidden, 3 * hidden)
        self.proj = torch.nn.Linear(hidden, hidden)
        self.ln2 = torch.nn.LayerNorm(hidden)
        self.fc1 = torch.nn.Linear(hidden, 4 * hidden)
        self.fc2 = torch.nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--micro-batch", type=int, default=4)
    args = ap.parse_args()
    dev = torch.device("cuda")
    model = torch.nn.Sequential(*[Block(2048, 16) for _ in range(args.layers)]).to(dev, torch.bfloat16)
    x = torch.randn(args.micro_batch, 2048, 2048, device=dev, dtype=torch.bfloat16, requires_grad=True)
    dy = torch.randn_like(x)

    def step():
        model(x).backward(dy)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    torch.cuda.synchronize()

    def timed(run):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(args.iters):
            run()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / args.iters

    eager, replay = [], []
    for _ in range(args.rounds):
        eager.append(timed(step))
        replay.append(timed(graph.replay))

    with profile(activities=[ProfilerActivity.CUDA]) as p:
        step()
        torch.cuda.synchronize()
    names = [e.name for e in p.events() if e.device_type.name == "CUDA"]
    memsets = sum(1 for n in names if n.startswith("Memset"))
    e, r = statistics.median(eager), statistics.median(replay)
    print(json.dumps({"layers": args.layers, "micro_batch": args.micro_batch, "eager_ms": round(e, 3),
                      "graph_ms": round(r, 3), "saved_pct": round(100 * (e - r) / e, 2),
                      "eager_rounds_ms": [round(v, 3) for v in eager],
                      "graph_rounds_ms": [round(v, 3) for v in replay],
                      "activities": len(names), "memsets": memsets,
                      "saved_us_per_activity": round(1000 * (e - r) / max(len(names), 1), 3)}))


if __name__ == "__main__":
    main()
