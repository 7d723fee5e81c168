#!/usr/bin/env python3
"""Loads an exported folder's tokenizer with transformers' AutoTokenizer.from_pretrained, as a
user would, and prints the ids of TEXT (comma-separated) and then, on a second line, its class.
Exit 3 when transformers (or what its SentencePiece conversion needs) is not installed.

  hf_autotokenizer_ids.py FOLDER TEXT"""
import sys

try:
    import transformers  # noqa: F401
    import sentencepiece  # noqa: F401
    import google.protobuf  # noqa: F401
except ImportError as e:
    print(f"cannot import {e.name}")
    sys.exit(3)

from transformers import AutoTokenizer, logging

# The tiny test model's 16-token context is shorter than the text; that warning is not the answer.
logging.set_verbosity_error()
tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
ids = tokenizer.encode(sys.argv[2])
assert tokenizer.decode(ids) == sys.argv[2], f"decode gave {tokenizer.decode(ids)!r}"
print(",".join(str(i) for i in ids))
print(type(tokenizer).__name__)
