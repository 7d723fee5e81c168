"""The loss of an exported Hugging Face GPT-2 folder on one sequence, computed the way
transformers' GPT2LMHeadModel computes it, in float64, from config.json and model.safetensors
alone: tensor names and the Conv1D layout ([in, out]) of transformers, nothing of ptdp.

usage: /usr/bin/python3 hf_gpt2_loss.py HF_DIR TOKEN_FILE
TOKEN_FILE holds bytes: the first n-1 are the input ids, the last n-1 the targets.
Prints the mean cross entropy.
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F


def load_safetensors(path):
    """safetensors, read as its specification says (no safetensors package needed)."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    start = 8 + length
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        assert entry["dtype"] == "F32", entry["dtype"]
        begin, end = entry["data_offsets"]
        array = np.frombuffer(data[start + begin:start + end], dtype="<f4").reshape(entry["shape"])
        tensors[name] = torch.tensor(array, dtype=torch.float64)
    return tensors


def gpt2_logits(w, cfg, ids):
    h, heads, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    assert cfg["activation_function"] == "gelu_new"
    s = ids.shape[0]
    hd = h // heads
    x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][:s]
    causal = torch.ones(s, s, dtype=torch.bool).tril()
    for i in range(cfg["n_layer"]):
        p = lambda name: w[f"transformer.h.{i}.{name}"]  # noqa: E731
        conv1d = lambda t, name: t @ p(name + ".weight") + p(name + ".bias")  # noqa: E731
        a = F.layer_norm(x, (h,), p("ln_1.weight"), p("ln_1.bias"), eps)
        q, k, v = conv1d(a, "attn.c_attn").split(h, dim=-1)
        q, k, v = (t.reshape(s, heads, hd).transpose(0, 1) for t in (q, k, v))
        att = ((q @ k.transpose(-1, -2)) / math.sqrt(hd)).masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + conv1d((att @ v).transpose(0, 1).reshape(s, h), "attn.c_proj")
        a = F.layer_norm(x, (h,), p("ln_2.weight"), p("ln_2.bias"), eps)
        x = x + conv1d(F.gelu(conv1d(a, "mlp.c_fc"), approximate="tanh"), "mlp.c_proj")
    x = F.layer_norm(x, (h,), w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], eps)
    return x @ w["transformer.wte.weight"].t()  # the tied lm_head


def main():
    hf_dir, token_file = sys.argv[1], sys.argv[2]
    with open(os.path.join(hf_dir, "config.json")) as f:
        cfg = json.load(f)
    w = load_safetensors(os.path.join(hf_dir, "model.safetensors"))
    assert w["transformer.wte.weight"].shape[0] == cfg["vocab_size"]
    assert w[f"transformer.h.0.mlp.c_fc.weight"].shape[1] == cfg["n_inner"]
    with open(token_file, "rb") as f:
        tokens = torch.tensor(list(f.read()), dtype=torch.long)
    logits = gpt2_logits(w, cfg, tokens[:-1])
    print(f"{F.cross_entropy(logits, tokens[1:]).item():.10f}")


if __name__ == "__main__":
    main()
