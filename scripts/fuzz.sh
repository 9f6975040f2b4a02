#!/usr/bin/env bash
# Fuzz every parser entry point, then run the robustness tests at full size.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 600 s, every target)
#
# Env: JOBS=N        targets fuzzed at once (default 1)
#      MUTATIONS=N   mutated variants per sample/corpus file (default 50)
#      SKIP_TESTS=1  fuzz only
#
# cargo-fuzz needs a nightly compiler for `-Zsanitizer`; on a stable toolchain
# RUSTC_BOOTSTRAP=1 unlocks it (that is how this script runs). Seeds come from
# samples/, tests/fixtures/ and ../shared/corpus (tests/fuzz/seeds.py). A crash
# is copied to tests/fixtures/robustness/ as fuzz-<target>-<artifact>.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
all=(capture_pcap decode_frame flow_segments http_conversation http2_frames sse jsonrpc_body mcp_events har_reader end_to_end tls_stage tls_keylog)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")
jobs=${JOBS:-1}
export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

corpus=tests/fuzz/corpus
python3 tests/fuzz/seeds.py . "$corpus"
cargo fuzz build --fuzz-dir tests/fuzz

logs=tests/fuzz/artifacts/logs
mkdir -p "$logs" tests/fixtures/robustness
stamp=$(mktemp)
run_one() {
    local t=$1 max_len=65536
    [ "$t" = har_reader ] && max_len=262144
    # Fork mode keeps fuzzing after a crash, OOM or timeout (each is saved as
    # an artifact); a single allocation over 1 GiB counts as an OOM.
    cargo fuzz run --fuzz-dir tests/fuzz "$t" "$corpus/$t" -- \
        -max_total_time="$secs" -max_len="$max_len" -timeout=20 \
        -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 >"$logs/$t.log" 2>&1 ||
        echo "$t: libFuzzer exited non-zero (see $logs/$t.log)"
    local last execs cov
    last=$(grep -E '^#[0-9]+' "$logs/$t.log" | tail -1 || true)
    execs=$(echo "$last" | grep -oE '^#[0-9]+' | tr -d '#' || true)
    cov=$(echo "$last" | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
    echo "$t: ${secs}s, ${execs:-?} executions, ${cov:-no coverage line}"
    # Only artifacts of this run: older ones were already triaged.
    for a in tests/fuzz/artifacts/"$t"/*; do
        [ -f "$a" ] && [ "$a" -nt "$stamp" ] &&
            cp "$a" "tests/fixtures/robustness/fuzz-$t-$(basename "$a")"
    done
    return 0
}
running=0
for t in "${targets[@]}"; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n || true
        running=$((running - 1))
    fi
done
wait

if [ "${SKIP_TESTS:-0}" != 1 ]; then
    MCP_TRACE_MUTATIONS=${MUTATIONS:-50} MCP_TRACE_ROBUST_FULL=1 \
        cargo test --no-default-features --test tests robustness -- --include-ignored --nocapture
fi
