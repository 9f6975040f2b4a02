#!/usr/bin/env bash
# Side-by-side benchmark of `mcp-trace analyze` (Parquet out), the baseline loop
# (examples/baseline.rs, also with `--json`: every JSON-RPC message checked) and
# tshark's HTTP pass, on captures from
# examples/gen_capture.rs. See bench/README.md.
#
#   bench/run.sh [-r ROUNDS] [--stdin] [--no-tshark] [--tshark-file SMALL.pcap] CAPTURE.pcap
#
# Tools run alternately, ROUNDS times each (default 3); the table shows the best
# wall time and the highest peak RSS over the rounds. The capture's ground truth
# (CAPTURE.truth.json, written by the generator) gives the packet count and the
# expected requests per outcome, checked against `mcp-trace --summary`.
# Binaries: $MCP_TRACE and $BASELINE, default to the release build in
# ${CARGO_TARGET_DIR:-target}. THREADS=N adds `--threads N` to every mcp-trace run;
# MCP_TRACE_ARGS adds any other arguments (word-split).
set -euo pipefail

rounds=3
stdin=0
tshark=1
tshark_file=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    -r) rounds="$2"; shift 2 ;;
    --stdin) stdin=1; shift ;;
    --no-tshark) tshark=0; shift ;;
    --tshark-file) tshark_file="$2"; shift 2 ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) break ;;
  esac
done
cap="${1:?usage: bench/run.sh [-r ROUNDS] [--stdin] [--no-tshark] [--tshark-file F] CAPTURE.pcap}"
tshark_file="${tshark_file:-$cap}"

target="${CARGO_TARGET_DIR:-$(dirname "$0")/../target}"
MCP_TRACE="${MCP_TRACE:-$target/release/mcp-trace}"
BASELINE="${BASELINE:-$target/release/examples/baseline}"
OUT_EXT="${OUT_EXT:-parquet}"  # jsonl for builds without the parquet feature
extra=()
[[ -n "${THREADS:-}" ]] && extra+=(--threads "$THREADS")
# shellcheck disable=SC2206  # word splitting wanted
[[ -n "${MCP_TRACE_ARGS:-}" ]] && extra+=($MCP_TRACE_ARGS)
for b in "$MCP_TRACE" "$BASELINE"; do
  [[ -x "$b" ]] || { echo "missing $b (cargo build --release --bin mcp-trace --example baseline)" >&2; exit 2; }
done
truth_of() { echo "${1%.pcap}.truth.json"; }
[[ -f "$(truth_of "$cap")" ]] || { echo "missing $(truth_of "$cap") (generate the capture with examples/gen_capture.rs)" >&2; exit 2; }

work="$(mktemp -d /tmp/mcp-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
results="$work/results.tsv"   # tool  file  round  wall_s  rss_kb

MEASURE="$(dirname "$0")/measure.py"  # wall time (perf_counter) and peak RSS (wait4)

# Appends one result line; prints the round. Arguments: tool file round wall rss_kb.
record() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >> "$results"
  printf '  round %s  %-16s %8.3f s  %7.1f MB RSS\n' "$3" "$1" "$4" "$(echo "$5/1024" | bc -l)" >&2
}

# Runs "$@" under bench/measure.py, stdout discarded; appends one result line.
measure() {
  local tool="$1" file="$2" round="$3"; shift 3
  local out="$work/$tool.out" res wall rss
  [[ $tool == tshark ]] && out=/dev/null  # its field dump is as large as the capture
  if ! res=$(python3 "$MEASURE" --out "$out" --err "$work/$tool.err" -- "$@"); then
    echo "$tool failed:" >&2; cat "$work/$tool.err" >&2; exit 1
  fi
  read -r wall rss <<< "$res"
  record "$tool" "$file" "$round" "$wall" "$rss"
}

# `cat FILE | mcp-trace analyze -`: the pipeline's time, mcp-trace's RSS.
measure_stdin() {
  local round="$1" res wall rss
  if ! res=$(python3 "$MEASURE" --stdin "$cap" --err "$work/stdin.err" -- \
    "$MCP_TRACE" analyze - -o "$work/stdin.$OUT_EXT" --summary "$work/stdin.json" ${extra[@]+"${extra[@]}"}); then
    echo "mcp-trace (stdin) failed:" >&2; cat "$work/stdin.err" >&2; exit 1
  fi
  read -r wall rss <<< "$res"
  record "mcp-trace-stdin" "$cap" "$round" "$wall" "$rss"
}

echo "capture: $cap ($(stat -c %s "$cap") bytes); tshark on: $tshark_file; rounds: $rounds; mcp-trace args: ${extra[*]:-none}" >&2
for round in $(seq 1 "$rounds"); do
  measure mcp-trace "$cap" "$round" "$MCP_TRACE" analyze "$cap" -o "$work/out.$OUT_EXT" --summary "$work/run.json" \
    ${extra[@]+"${extra[@]}"}
  measure baseline "$cap" "$round" "$BASELINE" "$cap"
  measure baseline-json "$cap" "$round" "$BASELINE" "$cap" --json
  if [[ $stdin == 1 ]]; then measure_stdin "$round"; fi
  if [[ $tshark == 1 ]]; then
    measure tshark "$tshark_file" "$round" tshark -r "$tshark_file" -o tcp.desegment_tcp_streams:TRUE \
      -Y 'http.request or http.response' -T fields -e http.request.method -e http.response.code -e http.file_data
  fi
done

python3 - "$results" "$cap" "$work/run.json" "$(truth_of "$cap")" "$work/baseline.out" "$work/stdin.json" "$work/baseline-json.out" <<'EOF'
import json, os, sys
results, cap, run_json, truth_json, baseline_out, stdin_json, baseline_json_out = sys.argv[1:8]
rows = [l.rstrip("\n").split("\t") for l in open(results)]
best = {}
for tool, f, _round, wall, rss in rows:
    b = best.setdefault(tool, {"file": f, "wall": float("inf"), "rss": 0, "n": 0, "walls": []})
    b["wall"] = min(b["wall"], float(wall))
    b["walls"].append(float(wall))
    b["rss"] = max(b["rss"], int(rss))
    b["n"] += 1

def truth(f):
    return json.load(open(f[:-5] + ".truth.json" if f.endswith(".pcap") else f + ".truth.json"))

# Best of the rounds for the rates; the median shows how noisy the machine was.
print(f"\n| tool | capture | MB | best wall s | median wall s | MB/s | packets/s | peak RSS MB |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
speed = {}
for tool in ["mcp-trace", "mcp-trace-stdin", "baseline", "baseline-json", "tshark"]:
    if tool not in best:
        continue
    b = best[tool]
    mb = os.path.getsize(b["file"]) / 1e6
    pk = truth(b["file"])["packets"]
    wall = max(b["wall"], 1e-3)
    speed[tool] = mb / wall
    walls = sorted(b["walls"])
    mid = len(walls) // 2
    median = walls[mid] if len(walls) % 2 else (walls[mid - 1] + walls[mid]) / 2
    print(f"| {tool} | {os.path.basename(b['file'])} | {mb:.0f} | {wall:.3f} | {median:.3f} | "
          f"{mb / wall:.1f} | {pk / wall:,.0f} | {b['rss'] / 1024:.0f} |")
print()
if "tshark" in speed:
    print(f"mcp-trace vs tshark (MB/s ratio): {speed['mcp-trace'] / speed['tshark']:.1f}x faster")
print(f"mcp-trace vs baseline: {speed['baseline'] / speed['mcp-trace']:.2f}x the baseline's time")
print(f"baseline with every JSON-RPC message checked (--json): "
      f"{speed['baseline'] / speed['baseline-json']:.2f}x the baseline's time")

# Every request the generator wrote must be found, with its outcome.
want = json.load(open(truth_json))
w = want["mcp_exchanges"]
print(f"\nground truth: {want['requests']} requests, {want['packets']} packets, "
      f"{want['http_exchanges']} HTTP exchanges")
def same_counts(want, got):
    if isinstance(want, dict) and isinstance(got, dict):
        return all(want.get(k, 0) == got.get(k, 0) for k in set(want) | set(got))
    return want == got


mismatch = False
for label, path in [("file", run_json), ("stdin", stdin_json)]:
    if not os.path.exists(path):
        continue
    got = json.load(open(path))
    g = got.get("mcp_exchanges", {})
    diff = {k: (w.get(k, 0), g.get(k, 0)) for k in sorted(set(w) | set(g)) if w.get(k, 0) != g.get(k, 0)}
    print(f"mcp-trace ({label}): {sum(g.values())} rows, {got.get('packets_total')} packets, "
          f"http_exchanges {got.get('http_exchanges')}, gap_bytes {got.get('gap_bytes')}")
    for key in ("sessions", "retries"):
        # A count the truth does not name is 0 (`retries.gateway`, say).
        if key in want and not same_counts(want[key], got.get(key)):
            diff[key] = (want[key], got.get(key))
    if diff:
        mismatch = True
        print("  MISMATCH (name: truth vs mcp-trace):")
        for k, (a, b) in diff.items():
            print(f"    {k}: {a} vs {b}")
    else:
        print("  outcomes, sessions and retries: all match the ground truth")
    if got.get("anomalies"):
        print("  anomalies:", json.dumps(got["anomalies"]))
print("baseline:", open(baseline_out).read().strip())
print("baseline --json:", " ".join(open(baseline_json_out).read().split()))
if mismatch:
    sys.exit(1)
EOF
