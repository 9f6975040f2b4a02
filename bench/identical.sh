#!/usr/bin/env bash
# Byte-for-byte comparison of every output of two builds, for refactors that must not change
# behaviour.
#
#   bench/identical.sh record DIR BINARY INPUT...   write BINARY's outputs for each INPUT to DIR
#   bench/identical.sh check  DIR BINARY INPUT...   the same into a temporary directory, then
#                                                   diff it against DIR (exit 1 on any difference)
#
# Per input and per thread count (1, 2, 3; THREAD_COUNTS overrides): `analyze` to JSON lines,
# CSV and Parquet, the sessions table, the run summary (timing fields removed) and the terminal
# report (its timing line normalised); and `http` to CSV, JSON lines and the terminal.
# Record once with the old binary (outside the repository), check after each step.
set -euo pipefail

mode="${1:?usage: bench/identical.sh record|check DIR BINARY INPUT...}"
dir="${2:?missing DIR}"
bin="${3:?missing BINARY}"
shift 3
[[ $# -gt 0 ]] || { echo "no inputs" >&2; exit 2; }
[[ -x "$bin" ]] || { echo "not executable: $bin" >&2; exit 2; }
threads="${THREAD_COUNTS:-1 2 3}"

# Writes every output of `bin` for one input into `out/`.
outputs() {
  local input="$1" out="$2" t
  mkdir -p "$out"
  for t in $threads; do
    local o="$out/t$t"
    mkdir -p "$o"
    "$bin" analyze "$input" --threads "$t" --no-progress \
      -o "$o/rows.jsonl" --sessions "$o/sessions.csv" --summary "$o/summary.json" \
      > "$o/stdout.txt" 2> "$o/stderr.txt" || echo "exit $?" >> "$o/stderr.txt"
    # The report printed when no table is written.
    "$bin" analyze "$input" --threads "$t" --no-progress --color never \
      > "$o/terminal.txt" 2>> "$o/stderr.txt" || echo "exit $?" >> "$o/stderr.txt"
    "$bin" analyze "$input" --threads "$t" --no-progress -o "$o/rows.csv" >/dev/null 2>>"$o/stderr.txt"
    "$bin" analyze "$input" --threads "$t" --no-progress -o "$o/rows.parquet" >/dev/null 2>>"$o/stderr.txt"
    # Timing is the only thing allowed to differ.
    python3 - "$o/summary.json" <<'EOF'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
for k in ("elapsed_s", "throughput_mb_s", "packets_per_s"):
    d.pop(k, None)
json.dump(d, open(p, "w"), indent=1, sort_keys=False)
EOF
    sed -E -i 's/read in [0-9.]+ s/read in T s/; s/[0-9.]+ MB\/s/R MB\/s/g' "$o/terminal.txt"
  done
  "$bin" http "$input" -o "$out/http.csv" 2> "$out/http.stderr" || echo "exit $?" >> "$out/http.stderr"
  "$bin" http "$input" -o "$out/http.jsonl" 2>> "$out/http.stderr" || true
  "$bin" http "$input" > "$out/http.txt" 2>> "$out/http.stderr" || true
}

record_all() {
  local into="$1" input
  shift
  for input in "$@"; do
    outputs "$input" "$into/$(basename "$input")"
  done
}

case "$mode" in
  record)
    mkdir -p "$dir"
    record_all "$dir" "$@"
    echo "recorded $(find "$dir" -type f | wc -l) files in $dir"
    ;;
  check)
    tmp="$(mktemp -d /tmp/mcp-identical.XXXXXX)"
    trap 'rm -rf "$tmp"' EXIT
    record_all "$tmp" "$@"
    # Only the inputs checked now are compared.
    status=0
    for input in "$@"; do
      name="$(basename "$input")"
      diff -r "$dir/$name" "$tmp/$name" > "$tmp/diff.txt" || { status=1; head -40 "$tmp/diff.txt"; }
    done
    if [[ $status -eq 0 ]]; then
      echo "identical: $# inputs, $(find "$tmp" -type f -not -name diff.txt | wc -l) files"
    fi
    exit $status
    ;;
  *) echo "unknown mode $mode (record or check)" >&2; exit 2 ;;
esac
