#!/usr/bin/env python3
"""ptdp's PyTorch yardstick: the GPT that ptdp trains, in plain PyTorch on one GPU.

The model is ptdp's (sdk/include/ptdp/layer_kernels.hpp):
GPT-2 with pre-LayerNorm blocks, learned positions, a GeLU-tanh MLP of 4h and the word embedding
tied to the output layer. Training is what a careful PyTorch user writes: bf16 autocast over fp32
master weights, scaled_dot_product_attention (flash on the GPU), fused AdamW, no recomputation,
eager by default or torch.compile with --compile.

Each step is timed with CUDA events after --warmup steps; the report gives the median step and
TFLOP/s per GPU from the paper's count without recomputation,
    72 * B * s * l * h^2 * (1 + s/(6h) + V/(12 l h)),
so the figure reads beside ptdp's. One JSON line on stdout:
    python3 bench/torch_gpt.py --layers 24 --hidden 2048 --heads 16 --seq 2048 --vocab 51200 \
        --micro-batch 4 --steps 10 [--compile]
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.fc1, self.fc2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape
        heads = lambda t: t.view(b, s, self.heads, h // self.heads).transpose(1, 2)
        q, k, v = map(heads, self.qkv(self.ln1(x)).split(h, dim=2))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(b, s, h))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers, hidden, heads, vocab, seq):
        super().__init__()
        self.word, self.position = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(layers))
        self.final_ln = nn.LayerNorm(hidden)
        # GPT-2's initialization: N(0, 0.02), the residual projections scaled by 1/sqrt(2l).
        for name, p in self.named_parameters():
            if p.dim() == 2:
                residual = name.endswith(("proj.weight", "fc2.weight"))
                nn.init.normal_(p, 0.0, 0.02 / (2 * layers) ** 0.5 if residual else 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, tokens, targets):
        x = self.word(tokens) + self.position(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.final_ln(x), self.word.weight)
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())


def paper_flops(batch, seq, layers, hidden, vocab):
    return 72 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (12 * layers * hidden))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--vocab", type=int, default=51200)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--steps", type=int, default=10, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    a = ap.parse_args()

    torch.manual_seed(0)
    model = Gpt(a.layers, a.hidden, a.heads, a.vocab, a.seq).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    forward = torch.compile(model) if a.compile else model
    tokens = torch.randint(0, a.vocab, (a.micro_batch, a.seq), device="cuda")
    targets = torch.randint(0, a.vocab, (a.micro_batch, a.seq), device="cuda")

    def train_step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = forward(tokens, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    for _ in range(a.warmup):
        train_step()
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(a.steps + 1)]
    marks[0].record()
    for i in range(a.steps):
        loss = train_step()
        marks[i + 1].record()
    torch.cuda.synchronize()
    step_s = statistics.median(marks[i].elapsed_time(marks[i + 1]) / 1e3 for i in range(a.steps))
    flops = paper_flops(a.micro_batch, a.seq, a.layers, a.hidden, a.vocab)
    print(json.dumps({
        "system": "pytorch-" + ("compile" if a.compile else "eager"), "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(), "layers": a.layers, "hidden": a.hidden, "heads": a.heads,
        "seq": a.seq, "vocab": a.vocab, "micro_batch": a.micro_batch,
        "params": sum(p.numel() for p in model.parameters()),
        "step_ms": round(step_s * 1e3, 2), "tokens_per_s": round(a.micro_batch * a.seq / step_s),
        "tflops_per_gpu": round(flops / step_s / 1e12, 1),
        "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1), "loss": round(loss.item(), 4)}),
        flush=True)


if __name__ == "__main__":
    main()
