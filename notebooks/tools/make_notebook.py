"""Writes notebooks/investigation.ipynb (kept as code so diffs stay readable)."""
import json
cells = []
def md(s): cells.append({"cell_type":"markdown","metadata":{},"source":s.strip("\n")})
def code(s): cells.append({"cell_type":"code","metadata":{},"execution_count":None,"outputs":[],"source":s.strip("\n")})

md("""
# Investigating an MCP incident with mcp-trace

This notebook reads only what `mcp-trace analyze` writes (the exchanges and sessions tables as
Parquet, the run summary as JSON) and walks through the questions a person asks after an
incident: what failed, where, when, which tools, how slow, who retried, and what one session
looked like. No analysis logic lives here: every column comes from `mcp-trace`
(see `report-schema.md` for their meaning).

The input is a set of bundled real recordings (`samples/`), merged by `mcp-trace` into one
timeline as if they were rotated captures of one incident.
""")
code("""
import json
import os
import subprocess
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl

%matplotlib inline
pl.Config.set_tbl_width_chars(180)
pl.Config.set_fmt_str_lengths(60)
pl.Config.set_tbl_rows(25)
pl.Config.set_tbl_cols(12)

ROOT = Path.cwd() if (Path.cwd() / "Cargo.toml").exists() else Path.cwd().parent
MCP_TRACE = os.environ.get("MCP_TRACE", str(ROOT / "target" / "debug" / "mcp-trace"))
INPUTS = [
    "samples/fault-503-app-retry.pcap",
    "samples/sse-resume.pcap",
    "samples/curl-replay.pcap",
    "samples/raw-shapes.pcap",
    "samples/mrtr.pcap",
    "samples/ts-streamable-sse.pcap",
]
OUT = Path(tempfile.mkdtemp(prefix="mcp-trace-nb-"))
cmd = [
    MCP_TRACE, "analyze", *[str(ROOT / p) for p in INPUTS],
    "-o", str(OUT / "exchanges.parquet"),
    "--sessions", str(OUT / "sessions.parquet"),
    "--summary", str(OUT / "run.json"),
]
subprocess.run(cmd, check=True)
sorted(p.name for p in OUT.iterdir())
""")
md("## The tables\nTimestamps are typed (microsecond UTC), integers are integers, missing values are nulls.")
code("""
ex = pl.read_parquet(OUT / "exchanges.parquet")
sessions = pl.read_parquet(OUT / "sessions.parquet")
run = json.loads((OUT / "run.json").read_text())
assert ex.schema["ts_request"] == pl.Datetime("us", "UTC"), ex.schema["ts_request"]
assert ex.height == sum(run["mcp_exchanges"].values())
print(ex.shape, sessions.shape)
ex.select("exchange_id", "ts_request", "kind", "rpc_method", "tool_name", "http_status", "outcome", "layer").head(10)
""")
md("## What could not be analyzed\nThe run summary accounts for every packet; damage is counted, not hidden.")
code("""
print("packets:", run["packets_total"], "decoded:", run["packets_decoded"], "skipped:", run["packets_skipped"])
print("gap bytes:", run["gap_bytes"], " anomalies:", run["anomalies"])
assert run["packets_total"] == run["packets_decoded"] + sum(run["packets_skipped"].values())
""")
md("## Outcomes and the layer where calls failed")
code("""
by_outcome = (
    ex.group_by("layer", "outcome").len().sort(["layer", "len"], descending=[False, True])
)
by_outcome
""")
code("""
timeline = (
    ex.sort("ts_request")
    .with_columns(pl.col("ts_request").dt.truncate("1s").alias("second"))
    .group_by("second", "outcome").len()
    .pivot(on="outcome", index="second", values="len")
    .fill_null(0)
    .sort("second")
)
fig, ax = plt.subplots(figsize=(10, 4))
bottom = [0] * timeline.height
labels = [str(t)[11:19] for t in timeline["second"]]
for i, outcome in enumerate(c for c in timeline.columns if c != "second"):
    values = timeline[outcome].to_list()
    ax.bar(labels, values, bottom=bottom, label=outcome, color=plt.cm.tab20(i))
    bottom = [b + v for b, v in zip(bottom, values)]
ax.set_title("Outcomes over time (per second of capture)")
ax.set_ylabel("exchanges")
ax.tick_params(axis="x", rotation=90)
ax.legend(fontsize=7, ncol=2)
fig.tight_layout()
plt.show()
""")
md("## Failing tools\nA tool can fail at any layer: transport (HTTP status), protocol (JSON-RPC error, broken stream) or in the tool itself (`isError`).")
code("""
failures = ~pl.col("outcome").is_in(["TOOL_SUCCESS", "RPC_SUCCESS", "ACCEPTED", "STREAM_OPEN"])
tools = (
    ex.filter(pl.col("rpc_method") == "tools/call")
    .group_by("tool_name")
    .agg(
        pl.len().alias("calls"),
        failures.sum().alias("failed"),
        pl.col("outcome").filter(failures).unique().sort().alias("how"),
    )
    .sort("failed", descending=True)
)
tools
""")
md("## Latency per method")
code("""
lat = ex.filter(pl.col("latency_ms").is_not_null() & pl.col("rpc_method").is_not_null())
per_method = (
    lat.group_by("rpc_method")
    .agg(
        pl.len().alias("n"),
        pl.col("latency_ms").quantile(0.5).alias("p50_ms"),
        pl.col("latency_ms").quantile(0.9).alias("p90_ms"),
        pl.col("latency_ms").max().alias("max_ms"),
    )
    .sort("n", descending=True)
)
methods = [m for m in per_method["rpc_method"].to_list() if m is not None]
fig, ax = plt.subplots(figsize=(9, 4))
ax.boxplot([lat.filter(pl.col("rpc_method") == m)["latency_ms"].to_list() for m in methods], tick_labels=methods)
ax.set_yscale("log")
ax.set_ylabel("latency (ms, log)")
ax.set_title("Latency distribution per JSON-RPC method")
ax.tick_params(axis="x", rotation=30)
fig.tight_layout()
plt.show()
per_method
""")
md("""
## Retry chains: who resent what?
`retry_of` links each repeat to the attempt it repeats, `retry_origin` says who decided
(`sdk`, `application`, `manual`) and `retry_evidence` says why, in words that can be checked
against the capture.
""")
code("""
repeats = ex.filter(pl.col("retry_of").is_not_null())
earlier = ex.select(
    pl.col("exchange_id").alias("retry_of"),
    pl.col("outcome").alias("earlier_outcome"),
    pl.col("http_status").alias("earlier_status"),
)
chains = repeats.join(earlier, on="retry_of", how="left").select(
    "exchange_id", "retry_of", "attempt", "rpc_method", "tool_name", "earlier_outcome",
    "earlier_status", "outcome", "retry_origin", "retry_evidence",
)
assert chains.height > 0
with pl.Config(fmt_str_lengths=120, tbl_width_chars=200):
    print(chains)
print(ex.group_by("retry_origin").len().sort("retry_origin"))
""")
md("MRTR follow-ups are continuations of an `input_required` result, never retries:")
code("""
ex.filter(pl.col("continuation_of").is_not_null()).select(
    "exchange_id", "continuation_of", "rpc_method", "tool_name", "outcome", "retry_origin"
)
""")
md("## Sessions\nOne row per session, with counts per outcome and how the session ended.")
code("""
sessions.select(
    "session_key", "transport", "protocol_version", "client_name", "user_agent", "requests",
    "retries_sdk", "retries_application", "retries_manual", "ended_by",
)
""")
md("## One session as a story\nThe session of the 503: every message in order, with status, outcome, latency and retry links.")
code("""
key = ex.filter(pl.col("http_status") == 503)["session_key"][0]
story = ex.filter(pl.col("session_key") == key).sort("ts_request").select(
    pl.col("ts_request").dt.strftime("%H:%M:%S%.3f").alias("time"),
    "exchange_id", "http_method", "kind", "rpc_method", "jsonrpc_id", "tool_name",
    "http_status", "outcome", "latency_ms", "retry_of", "retry_origin",
)
with pl.Config(tbl_rows=50, tbl_width_chars=200):
    print(story)
""")
nb = {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
      "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
for i, c in enumerate(cells):
    c["id"] = f"cell-{i:02d}"
from pathlib import Path

TARGET = Path(__file__).resolve().parent.parent / "investigation.ipynb"
json.dump(nb, open(TARGET, "w"), indent=1)
print("cells", len(cells))
