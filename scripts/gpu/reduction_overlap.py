#!/usr/bin/env python3
"""How much of each rank's data-parallel reduction ran while its GPU computed.

Reads a `ptdp-host run --profile --trace FILE` trace of a job with d > 1: per rank (a trace
process), the spans of thread 1 (`data-parallel reduction`, the lane's bucket reductions, host
times) and the kernels of the rank's compute stream (the GPU stream track with the most kernel
time). Prints, per rank, the reductions' total time and the share of it during which a compute
kernel ran, then one line for all ranks. comm-ucx's calls on CUDA memory return when the
transfer is done, so a lane span covers its reduction.
"""
import json
import sys


def union_length(intervals):
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def overlap_with(spans, busy):
    """Length of the parts of `spans` covered by the union of `busy`."""
    merged = []
    for a, b in sorted(busy):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    covered = 0.0
    for a, b in spans:
        for c, d in merged:
            if d <= a:
                continue
            if c >= b:
                break
            covered += min(b, d) - max(a, c)
    return covered


def main(path):
    events = json.load(open(path))["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    all_reduce, all_covered = 0.0, 0.0
    for pid in sorted({e["pid"] for e in spans}):
        mine = [e for e in spans if e["pid"] == pid]
        lane = [(e["ts"], e["ts"] + e["dur"]) for e in mine if names.get((pid, e["tid"])) == "data-parallel reduction"]
        kernel_time = {}
        for e in mine:
            if names.get((pid, e["tid"]), "").startswith("GPU stream") and "kernel" in e.get("args", {}):
                kernel_time[e["tid"]] = kernel_time.get(e["tid"], 0.0) + e["dur"]
        if not lane or not kernel_time:
            print(f"rank {pid}: no reduction spans or no kernels in the trace")
            continue
        compute = max(kernel_time, key=kernel_time.get)
        busy = [(e["ts"], e["ts"] + e["dur"]) for e in mine if e["tid"] == compute and "kernel" in e.get("args", {})]
        reducing = union_length(lane)
        covered = overlap_with(lane, busy)
        all_reduce += reducing
        all_covered += covered
        print(f"rank {pid}: {len(lane)} reductions, {reducing / 1000:.1f} ms, {100 * covered / reducing:.0f}% of it "
              f"beside compute kernels ({names[(pid, compute)]})")
    if all_reduce > 0:
        print(f"all ranks: {100 * all_covered / all_reduce:.0f}% of {all_reduce / 1000:.1f} ms of reduction beside compute")


if __name__ == "__main__":
    main(sys.argv[1])
