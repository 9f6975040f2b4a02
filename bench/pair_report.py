#!/usr/bin/env python3
"""The report of bench/tls.sh and bench/h2.sh: the same requests measured as two captures,
a baseline run A and a variant run B.

    pair_report.py RESULTS WORK A_RUN A_FILE A_LABEL B_RUN B_FILE B_LABEL [HINT]

RESULTS: lines `run  round  wall_s  rss_kb`; WORK/<run>.json: each run's summary; the ground
truth sits beside A_FILE (`.truth.json`). Prints the table, whether each run matches the truth,
then B's throughput (best rounds) and peak RSS against A's with the targets (at least 80%, at
most 10% more memory). Exits 1 when a run does not match the truth (HINT says why it might).
"""
import json
import os
import statistics
import sys

results, work, a_run, a_file, a_label, b_run, b_file, b_label = sys.argv[1:9]
hint = sys.argv[9] if len(sys.argv) > 9 else ""
runs = {}
for line in open(results):
    run, _round, wall, rss = line.split("\t")
    r = runs.setdefault(run, {"walls": [], "rss": 0})
    r["walls"].append(float(wall))
    r["rss"] = max(r["rss"], int(rss))
truth = json.load(open(a_file[:-5] + ".truth.json"))
requests = truth["requests"]
files = {a_run: a_file, b_run: b_file}
print("\n| run | capture | MB | best wall s | median wall s | MB/s | requests/s | peak RSS MB |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
best = {}
for run in (a_run, b_run):
    r = runs[run]
    mb = os.path.getsize(files[run]) / 1e6
    b = max(min(r["walls"]), 1e-3)
    best[run] = b
    print(f"| {run} | {os.path.basename(files[run])} | {mb:.0f} | {b:.3f} | "
          f"{statistics.median(r['walls']):.3f} | {mb / b:.1f} | {requests / b:,.0f} | {r['rss'] / 1024:.0f} |")
def same_counts(want, got):
    if isinstance(want, dict) and isinstance(got, dict):
        return all(want.get(k, 0) == got.get(k, 0) for k in set(want) | set(got))
    return want == got


mismatch = False
want = truth["mcp_exchanges"]
for run in (a_run, b_run):
    got = json.load(open(f"{work}/{run}.json"))
    g = got.get("mcp_exchanges", {})
    diff = {k: (want.get(k, 0), g.get(k, 0)) for k in sorted(set(want) | set(g)) if want.get(k, 0) != g.get(k, 0)}
    for key in ("sessions", "retries"):
        # A count the truth does not name is 0 (`retries.gateway`, say).
        if key in truth and not same_counts(truth[key], got.get(key)):
            diff[key] = (truth[key], got.get(key))
    if diff:
        mismatch = True
        print(f"{run}: MISMATCH (name: truth vs mcp-trace): {diff}")
    else:
        print(f"{run}: outcomes, sessions and retries match the ground truth")
if mismatch:
    sys.exit("no ratio: a run does not match the ground truth" + (f" ({hint})" if hint else ""))
share = best[a_run] / best[b_run]
rss = runs[b_run]["rss"] / runs[a_run]["rss"]
print(f"\n{b_label} throughput (same requests, best rounds): {100 * share:.0f}% of {a_label} "
      f"(target >= 80%: {'met' if share >= 0.8 else 'MISSED'})")
print(f"{b_label} peak RSS: {100 * (rss - 1):+.1f}% against {a_label} "
      f"(target at most +10%: {'met' if rss - 1 <= 0.10 else 'MISSED'})")
