#!/usr/bin/env python3
"""scripts/encode_hf.py against this build: a Hugging Face BPE tokenizer trained here on the shipped
corpus (nothing is downloaded) encodes JSONL, text and a folder into the files `ptdp-host data
encode` writes; every token is what the tokenizer gives; a run on them carries the tokenizer.json
into its checkpoint and `export hf` writes it; bad input writes nothing.

Usage: encode_hf_test.py SCRIPT PTDP_HOST CORPUS. Exits 77 (skipped) when `tokenizers` is missing."""
import json
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

try:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
except ModuleNotFoundError:
    print("tokenizers is not installed (scripts/setup.sh puts it in .deps/python)")
    sys.exit(77)

script, host, corpus = sys.argv[1:4]
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAILED:", what)


def read_ptdp(path):
    """tokens, document starts and tokenizer record of a version 2 ptdp file, parsed here from the spec."""
    raw = Path(path).read_bytes()
    magic, version, dtype, count, documents, record_bytes = struct.unpack_from("<8sIIQQQ", raw)
    assert magic == b"PTDPTOK\0" and version == 2, path
    record = json.loads(raw[40:40 + record_bytes])
    at = 40 + (record_bytes + 7) // 8 * 8
    width = {1: 1, 2: 2, 3: 4}[dtype]
    tokens = np.frombuffer(raw, dtype={1: "<u1", 2: "<u2", 3: "<i4"}[dtype], count=count, offset=at)
    at += (count * width + 7) // 8 * 8
    starts = np.frombuffer(raw, dtype="<u8", count=documents + 1, offset=at)
    assert at + (documents + 1) * 8 == len(raw), path
    return tokens.tolist(), starts.tolist(), record


def run(*args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as d:
    d = Path(d)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train([corpus], trainers.BpeTrainer(vocab_size=1000, special_tokens=["<|endoftext|>"],
                                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                  show_progress=False))
    tokenizer_json = d / "tokenizer.json"
    tokenizer.save(str(tokenizer_json))
    eod = tokenizer.token_to_id("<|endoftext|>")

    texts = [f"And God said, Let there be light {i}: and there was light. café ½" for i in range(300)]
    (d / "books").mkdir()
    (d / "books" / "a.jsonl").write_text("".join(json.dumps({"text": t, "id": i}) + "\n" for i, t in enumerate(texts)))
    (d / "books" / "b.txt").write_text("In the beginning God created the heaven and the earth.\n")
    texts.append("In the beginning God created the heaven and the earth.\n")

    r = run(str(d / "books"), str(d / "light.bin"), "--tokenizer", str(tokenizer_json), "--shard-tokens", "2000",
            "--val-tokens", "500")
    check(r.returncode == 0, f"encode exits 0: {r.stderr}")
    files = [d / "light_val.bin"] + sorted(d.glob("light_train_*.bin"))
    check(len(files) >= 3, f"a validation file and shards: {files}")
    tokens, starts = [], [0]
    for f in files:
        t, s, record = read_ptdp(f)
        check(record["kind"] == "huggingface" and record["eod"] == eod and record["vocab"] == 1000, f"record {record}")
        check(t[-1] == eod, f"{f} ends at a document boundary")
        check(f == files[0] or len(t) <= 2000, f"{f} holds at most 2000 tokens")
        starts += [len(tokens) + x for x in s[1:]]
        tokens += t
    expected = []
    for text in texts:
        expected += tokenizer.encode(text, add_special_tokens=False).ids + [eod]
    check(tokens == expected, "the tokens are the tokenizer's, each document followed by <|endoftext|>")
    check(len(starts) - 1 == len(texts), "one document per JSONL line and per text file")
    check(tokenizer.decode(tokens[starts[0]:starts[1] - 1]) == texts[0], "the first document decodes back")

    info = subprocess.run([host, "data", "info", str(files[1])], capture_output=True, text=True)
    check("made by  huggingface tokenizer.json (vocab 1000, end of document 0" in info.stdout, f"data info: {info.stdout}")

    # A run on those shards with data.tokenizer = tokenizer.json carries it into its checkpoint, and
    # export hf writes it beside the weights.
    plugins = Path(host).resolve().parent.parent / "lib" / "ptdp"
    (d / "run.toml").write_text(f"""
[run]
steps = 1
[model]
layers = 2
hidden = 16
heads = 2
seq_len = 16
vocab = 1000
[data]
path = "light_train_*.bin"
val_path = "light_val.bin"
tokenizer = "tokenizer.json"
val_every = 1
[checkpoint]
dir = "ckpt"
every = 1
[plugins]
search_path = ["{plugins}"]
""")
    trained = subprocess.run([host, "run", str(d / "run.toml")], capture_output=True, text=True)
    check(trained.returncode == 0, f"a run on the shards: {trained.stdout}{trained.stderr}")
    exported = subprocess.run([host, "export", "hf", str(d / "ckpt"), str(d / "hf")], capture_output=True, text=True)
    check(exported.returncode == 0, f"export hf: {exported.stdout}{exported.stderr}")
    check((d / "hf" / "tokenizer.json").exists() and
          (d / "hf" / "tokenizer.json").read_bytes() == tokenizer_json.read_bytes(), "export hf writes tokenizer.json")
    small = subprocess.run([host, "run", str(d / "run.toml"), "--set", "model.vocab=999", "--set", 'checkpoint.dir=""',
                            "--set", "checkpoint.every=0"], capture_output=True, text=True)
    check(small.returncode != 0 and "larger than the model's vocabulary of 999" in small.stdout + small.stderr,
          f"a vocabulary larger than model.vocab is refused: {small.stdout}{small.stderr}")

    (d / "bad.jsonl").write_text('{"text": "fine"}\n{"body": "no text"}\n')
    r = run(str(d / "books"), str(d / "bad.jsonl"), str(d / "bad.bin"), "--tokenizer", str(tokenizer_json),
            "--shard-tokens", "2000")
    check(r.returncode == 1, "bad input exits 1")
    check(r.stderr == f'error: {d / "bad.jsonl"}:2: no key "text" (this line has "body"); choose one with --json-key\n',
          f"one line naming the file, the line and the key: {r.stderr!r}")
    check(not list(d.glob("bad*.bin*")), "bad input leaves no file behind")

print("FAILED" if failures else "passed")
sys.exit(1 if failures else 0)
