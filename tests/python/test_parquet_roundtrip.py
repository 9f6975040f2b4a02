"""Reading the Parquet output back from Python (pyarrow and polars) gives the
same rows and the contract's types as the JSON lines written for the same input."""

import json
import os
import subprocess
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MCP_TRACE", ROOT / "target" / "debug" / "mcp-trace"))
SAMPLES = ["fault-503-app-retry.pcap", "raw-shapes.pcap", "sse-resume.pcap", "mrtr.pcap"]

# report-schema.md section 2: the typed columns.
EXPECTED_TYPES = {
    "exchange_id": pl.UInt64,
    "ts_request": pl.Datetime("us", "UTC"),
    "ts_response": pl.Datetime("us", "UTC"),
    "latency_ms": pl.Float64,
    "tcp_stream": pl.UInt64,
    "http_status": pl.UInt16,
    "error_code": pl.Int64,
    "is_error": pl.Boolean,
    "sse_events": pl.UInt32,
    "final_response": pl.Boolean,
    "request_bytes": pl.UInt64,
    "response_bytes": pl.UInt64,
    "attempt": pl.UInt32,
    "retry_of": pl.UInt64,
    "continuation_of": pl.UInt64,
    "outcome": pl.String,
    "retry_findings": pl.String,
}


def run(tmp_path: Path, out_name: str) -> Path:
    out = tmp_path / out_name
    inputs = [str(ROOT / "samples" / s) for s in SAMPLES]
    subprocess.run([str(BIN), "analyze", *inputs, "-o", str(out)], check=True)
    return out


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    if not BIN.exists():
        pytest.skip(f"{BIN} not built (run cargo build first)")
    tmp = tmp_path_factory.mktemp("rt")
    return run(tmp, "rows.parquet"), run(tmp, "rows.jsonl"), run(tmp, "rows.csv")


def test_parquet_types_follow_the_contract(outputs):
    frame = pl.read_parquet(outputs[0])
    for column, dtype in EXPECTED_TYPES.items():
        assert frame.schema[column] == dtype, (column, frame.schema[column])
    table = pq.read_table(outputs[0])
    assert str(table.schema.field("ts_request").type) == "timestamp[us, tz=UTC]"
    assert table.schema.field("retry_of").nullable


def test_retry_findings_follow_retry_evidence(outputs):
    # report-schema.md section 4b: findings only on repeats, each with its facts in the evidence.
    frame = pl.read_parquet(outputs[0])
    judged = frame.filter(pl.col("retry_findings").is_not_null())
    assert judged.height >= 1
    for row in judged.iter_rows(named=True):
        assert row["retry_of"] is not None
        for name in row["retry_findings"].split(";"):
            assert f"; {name}: " in row["retry_evidence"], (name, row["retry_evidence"])


def test_parquet_rows_equal_jsonl(outputs):
    frame = pl.read_parquet(outputs[0])
    rows = [json.loads(line) for line in outputs[1].read_text().splitlines()]
    assert frame.height == len(rows) > 20
    assert frame.columns == list(rows[0].keys())
    for got, want in zip(frame.iter_rows(named=True), rows):
        for column, value in want.items():
            actual = got[column]
            if column.startswith("ts_") and actual is not None:
                actual = actual.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            if isinstance(value, float):
                assert actual == pytest.approx(value), (column, got["exchange_id"])
            else:
                assert actual == value, (column, got["exchange_id"], actual, value)


def test_csv_rows_equal_jsonl(outputs):
    frame = pl.read_csv(outputs[2], infer_schema=False)
    rows = [json.loads(line) for line in outputs[1].read_text().splitlines()]
    assert frame.height == len(rows)
    for got, want in zip(frame.iter_rows(named=True), rows):
        for column, value in want.items():
            if value is None:
                assert got[column] in (None, ""), (column, got[column])
            elif isinstance(value, bool):
                assert got[column] == str(value).lower(), (column, got[column])
            elif isinstance(value, float):
                assert float(got[column]) == pytest.approx(value)
            else:
                assert got[column] == str(value), (column, got[column], value)
