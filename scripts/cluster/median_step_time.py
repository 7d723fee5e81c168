#!/usr/bin/env python3
"""The median step_time_s of a --metrics log, the first step (start-up) left out."""
import json
import statistics
import sys

times = []
with open(sys.argv[1]) as f:
    for line in f:
        record = json.loads(line)
        if "step" in record:
            times.append(record["step_time_s"])
if len(times) < 2:
    sys.exit(f"{sys.argv[1]}: {len(times)} steps, too few to time")
print(f"{statistics.median(times[1:]):.4f}")
