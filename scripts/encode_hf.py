#!/usr/bin/env python3
"""Encode text files, JSONL files or folders with a Hugging Face tokenizer.json into ptdp token files.

The `tokenizers` library (PyPI: pip install tokenizers) reads GPT-2's, Llama's and any other
tokenizer.json, and has no C++ API; this script is `ptdp-host data encode` for those tokenizers,
as Megatron's tools/preprocess_data.py and llm.c's dev/data scripts are Python. It writes the same
files (docs/data-format.md): a text file is one document, each line of a .jsonl/.json file one
(its text under --json-key), a folder every file under it in name order; the end-of-document
token follows every document; shards end at document boundaries; every file is written as
NAME.tmp and renamed only once the whole corpus is encoded, so bad input replaces nothing.

  scripts/encode_hf.py corpus.jsonl out.bin --tokenizer tokenizer.json --shard-tokens 100000000 --val-tokens 1000000
"""
import argparse
import hashlib
import json
import os
import struct
import sys
import time
from pathlib import Path

import numpy as np

PTDP_MAGIC = b"PTDPTOK\0"
LLMC_MAGIC, LLMC_VERSION = 20240520, 1
DTYPES = {"u8": (1, np.uint8), "u16": (2, np.uint16), "i32": (3, np.int32)}
# The end-of-document tokens of the common tokenizers: GPT-2's, Llama 3's, Llama 2's and others'.
EOD_CANDIDATES = ["<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"]
BATCH_BYTES = 16 << 20


class BadInput(Exception):
    pass


def padding(n):
    return b"\0" * ((8 - n % 8) % 8)


class TokenFile:
    """One output file, complete only once finish() has written its header and index."""

    def __init__(self, path, layout, dtype, record):
        self.path, self.tmp, self.layout, self.dtype = path, path + ".tmp", layout, dtype
        self.record = json.dumps(record, separators=(",", ":")).encode()
        self.file = open(self.tmp, "wb")
        self.count, self.starts = 0, []
        self.file.write(b"\0" * self.header_bytes())

    def header_bytes(self):
        if self.layout == "llmc":
            return 256 * 4
        return 40 + len(self.record) + len(padding(len(self.record)))

    def add(self, tokens):
        self.starts.append(self.count)
        self.file.write(np.asarray(tokens, dtype=DTYPES[self.dtype][1]).tobytes())
        self.count += len(tokens)

    def finish(self):
        if self.layout == "llmc":
            self.file.seek(0)
            self.file.write(struct.pack("<3i", LLMC_MAGIC, LLMC_VERSION, self.count))
        else:
            self.file.write(padding(self.count * np.dtype(DTYPES[self.dtype][1]).itemsize))
            self.file.write(np.asarray(self.starts + [self.count], dtype="<u8").tobytes())
            self.file.seek(0)
            self.file.write(struct.pack("<8sIIQQQ", PTDP_MAGIC, 2, DTYPES[self.dtype][0], self.count,
                                        len(self.starts), len(self.record)))
            self.file.write(self.record + padding(len(self.record)))
        self.file.close()

    def discard(self):
        if not self.file.closed:
            self.file.close()
        if os.path.exists(self.tmp):
            os.remove(self.tmp)


class Shards:
    """Documents in order: the first ones to the validation file, then training shards."""

    def __init__(self, args, dtype, record):
        self.args, self.dtype, self.record = args, dtype, record
        self.named = args.shard_tokens > 0 or args.val_tokens > 0
        self.in_validation = args.val_tokens > 0
        self.current, self.done, self.shards = None, [], 0

    def name(self, suffix):
        out = Path(self.args.out)
        return str(out.with_name(out.stem + suffix + out.suffix))

    def add(self, tokens):
        if self.in_validation and self.current and self.current.count >= self.args.val_tokens:
            self.close()
            self.in_validation = False
        if (self.current and self.args.shard_tokens > 0 and not self.in_validation and self.current.starts
                and self.current.count + len(tokens) > self.args.shard_tokens):
            self.close()
        if not self.current:
            path = self.args.out
            if self.named:
                path = self.name("_val") if self.in_validation else self.name(f"_train_{self.shards:06d}")
                self.shards += 0 if self.in_validation else 1
            self.current = TokenFile(path, self.args.format, self.dtype, self.record)
        self.current.add(tokens)

    def close(self):
        self.current.finish()
        self.done.append(self.current)
        self.current = None

    def commit(self):
        if self.in_validation:
            docs = len(self.current.starts) if self.current else 0
            raise BadInput(f"{self.args.out}: all {docs} documents went to the validation file (--val-tokens "
                           f"{self.args.val_tokens}), none is left to train on")
        if self.current:
            self.close()
        if not self.done:
            raise BadInput(f"{self.args.out}: no tokens to write")
        for f in self.done:
            os.replace(f.tmp, f.path)
        return self.done

    def discard(self):
        for f in self.done + ([self.current] if self.current else []):
            f.discard()


def list_inputs(paths):
    inputs = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted((f for f in p.rglob("*") if f.is_file()), key=lambda f: f.parts)
            if not files:
                raise BadInput(f"{p}: a folder with no file in it")
            inputs += files
        elif p.exists():
            inputs.append(p)
        else:
            raise BadInput(f"{p}: cannot open: No such file or directory")
    return inputs


def utf8(raw, path, line_of, base=0):
    """raw as text; base: where raw starts in the file, for the offset an error names."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}:{line_of(e.start)}: invalid UTF-8 (byte {raw[e.start]:#04x} at offset {base + e.start})")


def documents(path, json_key):
    """(text, bytes of the input read once it is done) for each document of one input file."""
    raw = path.read_bytes()
    if path.suffix not in (".jsonl", ".json"):
        if raw:
            yield utf8(raw, path, lambda at: raw.count(b"\n", 0, at) + 1), len(raw)
        return
    offset = 0
    for number, line in enumerate(raw.split(b"\n"), start=1):
        start, offset = offset, offset + len(line) + 1
        if not line.strip(b" \t\r"):
            continue
        text = utf8(line, path, lambda at: number, start)
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            raise BadInput(f"{path}:{number}: not JSON (each line of a JSONL file is one JSON object)")
        if not isinstance(obj, dict):
            raise BadInput(f"{path}:{number}: a JSON {type(obj).__name__}, not an object")
        if json_key not in obj:
            keys = ", ".join(f'"{k}"' for k in obj) or "none"
            raise BadInput(f'{path}:{number}: no key "{json_key}" (this line has {keys}); choose one with --json-key')
        if not isinstance(obj[json_key], str):
            raise BadInput(f'{path}:{number}: "{json_key}" is not a string')
        yield obj[json_key], min(offset, len(raw))


def end_of_document(tokenizer, args):
    if args.no_eod:
        return None
    names = [args.eod] if args.eod else EOD_CANDIDATES
    for name in names:
        token = tokenizer.token_to_id(name)
        if token is not None:
            return token
    if args.eod:
        raise BadInput(f"--eod {args.eod}: not a token of {args.tokenizer}")
    raise BadInput(f"{args.tokenizer}: none of {', '.join(EOD_CANDIDATES)} is a token; name the end-of-document "
                   "token with --eod, or pass --no-eod")


def choose_dtype(args, vocab):
    if args.format == "llmc":
        if vocab > 65536:
            raise BadInput(f"--format llmc: llm.c shards store uint16 tokens, and the vocabulary has {vocab} ids")
        return "u16"
    if args.dtype == "auto":
        return "u8" if vocab <= 256 else "u16" if vocab <= 65536 else "i32"
    limit = {"u8": 256, "u16": 65536, "i32": 2 ** 31}[args.dtype]
    if vocab > limit:
        raise BadInput(f"--dtype {args.dtype} holds tokens 0..{limit - 1}, and the vocabulary has {vocab} ids")
    return args.dtype


def encode(args):
    from tokenizers import Tokenizer  # the one dependency beyond numpy

    if not os.path.isfile(args.tokenizer):
        raise BadInput(f"{args.tokenizer}: cannot open: no such tokenizer file")
    try:
        tokenizer = Tokenizer.from_file(args.tokenizer)
    except Exception as e:
        raise BadInput(f"{args.tokenizer}: not a Hugging Face tokenizer.json: {e}")
    if args.workers > 0:
        os.environ["RAYON_NUM_THREADS"] = str(args.workers)  # the threads encode_batch uses
    vocab = tokenizer.get_vocab_size(with_added_tokens=True)
    eod = end_of_document(tokenizer, args)
    record = {"kind": "huggingface", "name": os.path.basename(args.tokenizer),
              "sha256": hashlib.sha256(Path(args.tokenizer).read_bytes()).hexdigest(), "vocab": vocab, "eod": eod}
    inputs = list_inputs(args.inputs)
    total = sum(p.stat().st_size for p in inputs)
    shards = Shards(args, choose_dtype(args, vocab), record)
    shown, start, done_before, last = sys.stderr.isatty(), time.time(), 0, 0.0
    tokens_total = documents_total = 0
    try:
        batch, batch_bytes, position = [], 0, 0

        def flush():
            nonlocal batch, batch_bytes, tokens_total, documents_total, last
            for encoding in tokenizer.encode_batch(batch, add_special_tokens=False):
                ids = encoding.ids + ([eod] if eod is not None else [])
                if ids:
                    shards.add(ids)
                    tokens_total += len(ids)
                    documents_total += 1
            batch, batch_bytes = [], 0
            if shown and time.time() - last > 0.2:
                last = time.time()
                rate = position / max(last - start, 1e-3)
                print(f"\r{100 * position / max(total, 1):3.0f}% {position / 2**20:.1f}/{total / 2**20:.1f} MiB | "
                      f"{tokens_total} tokens | {documents_total} documents | {rate / 2**20:.1f} MiB/s ",
                      end="", file=sys.stderr)

        for path in inputs:
            for text, read in documents(path, args.json_key):
                batch.append(text)
                batch_bytes += len(text)
                position = done_before + read
                if batch_bytes >= BATCH_BYTES:
                    flush()
            done_before += path.stat().st_size
        if batch:
            flush()
        files = shards.commit()
    except BaseException:
        shards.discard()
        raise
    finally:
        if shown:
            print(file=sys.stderr)
    for f in files:
        print(f"{f.path}: {f.count} tokens ({f.dtype}), {len(f.starts)} document{'s' if len(f.starts) != 1 else ''}, "
              f"huggingface {record['name']} (vocab {vocab}, end of document {eod})")
    print(f"{tokens_total} tokens, {documents_total} documents in {len(files)} files from {len(inputs)} inputs "
          f"({total / 2**20:.1f} MiB, {total / max(tokens_total, 1):.2f} bytes per token) in {time.time() - start:.1f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", metavar="INPUT... OUT", help="text files, JSONL files or folders, then OUT")
    parser.add_argument("--tokenizer", required=True, help="a Hugging Face tokenizer.json")
    parser.add_argument("--json-key", default="text", help="where a JSONL line keeps its text (default: text)")
    parser.add_argument("--eod", help="the end-of-document token (default: the first of " + ", ".join(EOD_CANDIDATES) +
                        " the tokenizer has)")
    parser.add_argument("--no-eod", action="store_true", help="do not end documents with a token")
    parser.add_argument("--format", choices=["ptdp", "llmc"], default="ptdp")
    parser.add_argument("--dtype", choices=["auto", "u8", "u16", "i32"], default="auto")
    parser.add_argument("--shard-tokens", type=int, default=0, help="shards OUT_train_000000.bin, … of at most this many tokens")
    parser.add_argument("--val-tokens", type=int, default=0, help="the first documents, this many tokens, go to OUT_val.bin")
    parser.add_argument("--workers", type=int, default=0, help="threads that tokenize (default: every core)")
    args = parser.parse_args()
    if len(args.files) < 2:
        parser.error("give the inputs, then the file to write")
    args.inputs, args.out = args.files[:-1], args.files[-1]
    try:
        encode(args)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except ModuleNotFoundError as e:
        print(f"error: {e.name} is not installed (pip install tokenizers)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
