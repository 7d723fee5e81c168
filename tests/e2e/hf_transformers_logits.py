"""The logits of an exported folder, loaded by the real transformers library.

usage: /usr/bin/python3 hf_transformers_logits.py HF_DIR ID,ID,...
Prints the logits at the last position as a JSON list (float32 model, eval mode: no dropout).
Exits 3 when transformers cannot be imported, so the caller can say why it skipped.
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder only, nothing downloaded
try:
    import torch
    from transformers import GPT2LMHeadModel
except ImportError as e:
    print(f"cannot import transformers: {e}")
    sys.exit(3)

model = GPT2LMHeadModel.from_pretrained(sys.argv[1], local_files_only=True).float().eval()
ids = torch.tensor([[int(i) for i in sys.argv[2].split(",")]])
with torch.no_grad():
    logits = model(ids).logits[0, -1]
print(json.dumps(logits.tolist()))
