"""Reference training steps of ptdp's GPT-2 in PyTorch, in float64: the oracle for kernels-ref.

usage: /usr/bin/python3 torch_gpt2_reference.py IN_DIR OUT_DIR

IN_DIR is a tensor folder (index.json + data.bin, see tests/support/tensor_folder.hpp) with
  weight.<name>            the global initial weights, by ptdp parameter name and global shape
  tokens.<step>.<mb>       [s, b] int32 input ids, position-major
  targets.<step>.<mb>      [s, b] int32 target ids
  meta: {"model": ModelSpec fields, "adam": {lr, beta1, beta2, eps, weight_decay, grad_scale},
         "steps": n, "microbatches": m}
Each step runs every microbatch forward and backward on loss / m, scales the gradients by
grad_scale and takes one AdamW step. OUT_DIR receives, float64,
  loss [steps, m], grad.<name> (the first step's gradients), weight.<name> (after the last step).
The model is written from the GPT-2 definition with plain torch operations; nothing here is
taken from ptdp except the parameter names and layouts.
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32}


def read_folder(path):
    with open(os.path.join(path, "index.json")) as f:
        index = json.load(f)
    with open(os.path.join(path, "data.bin"), "rb") as f:
        data = f.read()
    tensors = {}
    for name, entry in index["tensors"].items():
        count = int(np.prod(entry["shape"], dtype=np.int64))
        array = np.frombuffer(data, dtype=DTYPES[entry["dtype"]], count=count, offset=entry["offset"])
        tensors[name] = array.reshape(entry["shape"])
    return index["meta"], tensors


def write_folder(path, tensors):
    os.makedirs(path, exist_ok=True)
    index, chunks, offset = {}, [], 0
    for name, tensor in tensors.items():
        array = np.ascontiguousarray(tensor.detach().numpy(), dtype=np.float64)
        index[name] = {"dtype": "f64", "shape": list(array.shape), "offset": offset}
        chunks.append(array.tobytes())
        offset += array.nbytes
    with open(os.path.join(path, "data.bin"), "wb") as f:
        f.write(b"".join(chunks))
    with open(os.path.join(path, "index.json"), "w") as f:
        json.dump({"meta": {}, "tensors": index}, f)


def gpt2_loss(w, tokens, targets, cfg):
    """Mean cross entropy of GPT-2 on tokens [s, b] (position-major) against targets [s, b]."""
    s, b = tokens.shape
    h, heads, vocab, eps = cfg["hidden"], cfg["heads"], cfg["vocab"], cfg["layernorm_eps"]
    hd = h // heads
    x = w["embedding.word"][tokens] + w["embedding.position"][:s].unsqueeze(1)  # [s, b, h]
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    for i in range(cfg["layers"]):
        p = lambda name: w[f"layers.{i}.{name}"]  # noqa: E731
        a = F.layer_norm(x, (h,), p("ln1.weight"), p("ln1.bias"), eps)
        # ptdp keeps the [3h, h] QKV weight as [3, h, h] ([q | k | v]); torch.nn.Linear wants [3h, h].
        qkv = F.linear(a, p("attn.qkv.weight").reshape(3 * h, h), p("attn.qkv.bias").reshape(3 * h))
        q, k, v = (t.reshape(s, b, heads, hd).permute(1, 2, 0, 3) for t in qkv.split(h, dim=-1))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)  # [b, heads, s, s]
        att = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).permute(2, 0, 1, 3).reshape(s, b, h)
        x = x + F.linear(y, p("attn.proj.weight"), p("attn.proj.bias"))
        a = F.layer_norm(x, (h,), p("ln2.weight"), p("ln2.bias"), eps)
        a = F.gelu(F.linear(a, p("mlp.fc1.weight"), p("mlp.fc1.bias")), approximate="tanh")
        x = x + F.linear(a, p("mlp.fc2.weight"), p("mlp.fc2.bias"))
    x = F.layer_norm(x, (h,), w["head.ln.weight"], w["head.ln.bias"], eps)
    logits = x @ w["embedding.word"][:vocab].t()  # rows past the vocabulary are padding
    return F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))


def decays(name):
    """Biases and LayerNorm parameters take no weight decay."""
    parts = name.split(".")
    return parts[-1] != "bias" and not parts[-2].startswith("ln")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: torch_gpt2_reference.py IN_DIR OUT_DIR")
    meta, tensors = read_folder(sys.argv[1])
    cfg, adam = meta["model"], meta["adam"]
    steps, m = meta["steps"], meta["microbatches"]
    weights = {name[len("weight."):]: torch.tensor(t, dtype=torch.float64, requires_grad=True)
               for name, t in tensors.items() if name.startswith("weight.")}
    optimizer = torch.optim.AdamW(
        [{"params": [p for n, p in weights.items() if decays(n)], "weight_decay": adam["weight_decay"]},
         {"params": [p for n, p in weights.items() if not decays(n)], "weight_decay": 0.0}],
        lr=adam["lr"], betas=(adam["beta1"], adam["beta2"]), eps=adam["eps"])

    out = {}
    losses = torch.zeros(steps, m, dtype=torch.float64)
    for step in range(steps):
        optimizer.zero_grad()
        for j in range(m):
            tokens = torch.from_numpy(tensors[f"tokens.{step}.{j}"].astype(np.int64))
            targets = torch.from_numpy(tensors[f"targets.{step}.{j}"].astype(np.int64))
            loss = gpt2_loss(weights, tokens, targets, cfg)
            (loss / m).backward()
            losses[step, j] = loss.detach()
        if step == 0:
            out.update({"grad." + n: p.grad.clone() for n, p in weights.items()})
        with torch.no_grad():
            for p in weights.values():
                p.grad.mul_(adam["grad_scale"])
        optimizer.step()
    out["loss"] = losses
    out.update({"weight." + n: p for n, p in weights.items()})
    write_folder(sys.argv[2], out)


if __name__ == "__main__":
    main()
