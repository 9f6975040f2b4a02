#!/usr/bin/env bash
# `mcp-trace live` against tcpreplay at increasing rates, in a network namespace of its own
# (run as root: `unshare -n` and a veth pair; nothing leaves the namespace). See bench/README.md.
#
#   bench/live.sh CAPTURE.pcap [RATE_MBPS ...]      (default rates: 250 500 1000 2000)
#
# For each rate: `mcp-trace live -i veth1 -o rows.parquet --summary s.json` starts, tcpreplay
# sends CAPTURE onto veth0 at RATE Mbit/s (`--mbps`), the capture stops 2 s after the replay
# with SIGINT. Prints per rate: the rate tcpreplay achieved, packets sent and captured, kernel
# and interface drops (pcap_stats), MCP exchanges, the CPU seconds and peak RSS of mcp-trace.
# $MCP_TRACE is the binary (built with --features live; default target/release/mcp-trace);
# NO_OFFLOAD=1 turns the veth pair's segmentation offloads off (ethtool); LIVE_ARGS adds
# options to `mcp-trace live`; SETTLE_S is the wait after the replay (default 2).
set -euo pipefail
capture="${1:?usage: bench/live.sh CAPTURE.pcap [RATE_MBPS ...]}"
shift
rates=("$@")
[[ ${#rates[@]} -gt 0 ]] || rates=(250 500 1000 2000)
target="${CARGO_TARGET_DIR:-$(dirname "$0")/../target}"
MCP_TRACE="$(realpath "${MCP_TRACE:-$target/release/mcp-trace}")"
capture="$(realpath "$capture")"
work="$(mktemp -d /tmp/mcp-bench-live.XXXXXX)"
trap 'rm -rf "$work"' EXIT

if [[ "${1:-}" != "--inside" && -z "${MCP_BENCH_LIVE_INSIDE:-}" ]]; then
  MCP_BENCH_LIVE_INSIDE=1 MCP_TRACE="$MCP_TRACE" exec unshare -n "$0" "$capture" "${rates[@]}"
fi

ip link add veth0 type veth peer name veth1
# Ethernet frames of at most 1514 bytes (the benchmark captures), as on a real NIC.
ip link set veth0 up
ip link set veth1 up
if [[ -n "${NO_OFFLOAD:-}" ]]; then
  # Without segmentation offloads libpcap sizes its immediate-mode ring slots by the MTU
  # instead of 64 KiB, so the same buffer holds ~40 times more packets.
  for dev in veth0 veth1; do ethtool -K "$dev" gro off gso off tso off >/dev/null 2>&1 || true; done
fi
printf 'rate_asked_mbps\trate_sent_mbps\tpackets_sent\tpackets_captured\tkernel_drops\tinterface_drops\tmcp_exchanges\tcpu_s\tpeak_rss_mb\n'
for rate in "${rates[@]}"; do
  /usr/bin/time -f '%U %S %M' -o "$work/time" \
    "$MCP_TRACE" live -i veth1 ${LIVE_ARGS:-} -o "$work/rows.parquet" --summary "$work/s.json" \
    >"$work/live.out" 2>"$work/live.err" &
  pid=$!
  for _ in $(seq 50); do grep -q "capturing on" "$work/live.err" 2>/dev/null && break; sleep 0.1; done
  tcpreplay --mbps="$rate" -i veth0 "$capture" >"$work/replay.out" 2>&1
  sleep "${SETTLE_S:-2}"
  kill -INT "$(pgrep -P "$pid")" || true
  wait "$pid" || true
  read -r user sys rss_kb < <(tail -n 1 "$work/time")
  sent_mbps=$(grep -oP 'Rated: [0-9.]+ Bps, \K[0-9.]+(?= Mbps)' "$work/replay.out" | head -1)
  sent=$(grep -oP 'Actual: \K[0-9]+(?= packets)' "$work/replay.out" | head -1)
  python3 - "$work/s.json" "$rate" "$sent_mbps" "$sent" "$user" "$sys" "$rss_kb" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
rate, sent_mbps, sent, user, sysc, rss = sys.argv[2:]
d = s["capture_drops"]
print("\t".join(str(x) for x in [rate, sent_mbps, sent, s["packets_total"], d["kernel"], d["interface"],
      s["mcp_exchanges_total"], f"{float(user) + float(sysc):.2f}", f"{int(rss) / 1024:.0f}"]))
PY
done
