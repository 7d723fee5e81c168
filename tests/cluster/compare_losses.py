#!/usr/bin/env python3
"""Exit 0 when two --metrics logs hold the same number of steps and every loss agrees within a
relative tolerance (the layout tests' 1e-5); otherwise print each step that differs and exit 1."""
import json
import sys


def losses(path):
    out = []
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if "step" in record:  # not the header
                out.append(record["loss"])
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: compare_losses.py BASELINE.jsonl OTHER.jsonl RELATIVE_TOLERANCE")
    base, other, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
    if not base or len(base) != len(other):
        print(f"{sys.argv[2]}: {len(other)} steps, the baseline {len(base)}")
        return 1
    bad = 0
    for step, (a, b) in enumerate(zip(base, other), start=1):
        ok = abs(a - b) <= tol * abs(a)
        bad += not ok
        print(f"step {step}: baseline {a:.9f} cluster {b:.9f} {'ok' if ok else 'DIFFERS'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
