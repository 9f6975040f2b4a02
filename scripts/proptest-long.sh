#!/usr/bin/env bash
# The long search for property-test failures, run by a person (CI keeps its own case counts
# and the fixed seed of .cargo/config.toml): every property test of the crate, with
# PROPTEST_CASES cases, once per seed. A failure leaves its shrunk case in
# proptest-regressions/ (commit it) and makes this script exit 1.
#
#   scripts/proptest-long.sh [CASES] [SEED...]     default: 5000 cases, seeds 1 2 3
set -uo pipefail
cd "$(dirname "$0")/.."
cases=${1:-5000}
shift || true
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)

# The property tests: every `fn` inside a `proptest! { ... }` block, as a path filter.
mapfile -t filters < <(python3 - <<'PY'
import pathlib, re
for path in sorted(pathlib.Path("src").rglob("*.rs")) + sorted(pathlib.Path("tests").rglob("*.rs")):
    text = path.read_text()
    for block in re.finditer(r"proptest!\s*\{", text):
        depth, i = 1, block.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        for name in re.findall(r"\bfn\s+(\w+)\s*\(", text[block.end():i]):
            print(name)
PY
)
echo "property tests: ${#filters[@]}; cases: $cases; seeds: ${seeds[*]}"
cargo test --no-run -q 2>&1 | tail -n 3

failed=0
for seed in "${seeds[@]}"; do
    start=$(date +%s)
    PROPTEST_CASES=$cases PROPTEST_RNG_SEED=$seed \
        cargo test -q -- "${filters[@]}" 2>&1 | tee "/tmp/proptest-long-$seed.log" \
        | grep -E "^test result|FAILED|panicked|minimal failing" 
    status=${PIPESTATUS[0]}
    echo "seed $seed: exit $status in $(( $(date +%s) - start )) s"
    [ "$status" -eq 0 ] || failed=1
done
exit $failed
