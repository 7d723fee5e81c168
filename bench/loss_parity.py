#!/usr/bin/env python3
"""Loss parity of runs trained alike but for their precision: the relative gap of each run's
smoothed loss to the first (the baseline) from a step on, and whether any diverged.

    python3 bench/loss_parity.py BASELINE.jsonl RUN.jsonl [RUN.jsonl ...] [--from 200] [--window 50]

Each file is a `ptdp-host run --metrics` log. The smoothed loss at step k is the mean of the losses
of the `window` steps ending at k; the gap is |run - baseline| / baseline. A run diverged when a
loss is not finite or its smoothed loss ends above where it was at --from.
"""
import argparse
import json
import math
import sys


def losses(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    return {r["step"]: r["loss"] for r in rows if "step" in r}


def smoothed(series, window):
    steps = sorted(series)
    out = {}
    for i, step in enumerate(steps):
        part = [series[s] for s in steps[max(0, i - window + 1):i + 1]]
        out[step] = sum(part) / len(part)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("baseline")
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--from", dest="start", type=int, default=200, help="first step whose gap counts")
    parser.add_argument("--window", type=int, default=50, help="steps the smoothed loss averages")
    args = parser.parse_args()
    base = losses(args.baseline)
    base_smooth = smoothed(base, args.window)
    print(f"| run | steps | final smoothed loss | largest gap from step {args.start} (at step) | mean gap | diverged |")
    print("|---|---:|---:|---|---:|---|")
    last = max(base)
    print(f"| {args.baseline} (baseline) | {len(base)} | {base_smooth[last]:.4f} | - | - | "
          f"{'yes' if any(not math.isfinite(v) for v in base.values()) else 'no'} |")
    for path in args.runs:
        run = losses(path)
        run_smooth = smoothed(run, args.window)
        common = [s for s in sorted(run_smooth) if s >= args.start and s in base_smooth]
        if not common:
            print(f"| {path} | {len(run)} | - | no steps from {args.start} in common | - | - |")
            continue
        gaps = {s: abs(run_smooth[s] - base_smooth[s]) / base_smooth[s] for s in common}
        worst = max(gaps, key=gaps.get)
        diverged = any(not math.isfinite(v) for v in run.values()) or run_smooth[common[-1]] > run_smooth[common[0]]
        print(f"| {path} | {len(run)} | {run_smooth[common[-1]]:.4f} | {100 * gaps[worst]:.2f}% ({worst}) | "
              f"{100 * sum(gaps.values()) / len(gaps):.2f}% | {'yes' if diverged else 'no'} |")


if __name__ == "__main__":
    sys.exit(main())
