//! Raw capture bytes -> exchanges: `pipeline::analyze` on a temporary file,
//! then the summary and the table rows, as `mcp-trace analyze` does.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::pipeline::{Config, analyze};
use mcp_trace::report::{RunInfo, Table, run_summary, sessions};

fuzz_target!(|data: &[u8]| {
    let path = mcp_trace_fuzz::temp_path("e2e.cap");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let Some(p) = path.to_str() else { return };
    let res = analyze(&[p.to_string()], &Config::default());
    let _ = std::fs::remove_file(&path);
    let Ok(a) = res else { return };
    let s = &a.stats;
    assert_eq!(
        s.packets_total,
        s.packets_decoded + s.packets_skipped_total()
    );
    // Every captured TCP payload byte and every HTTP head begun is accounted for.
    let unused: u64 = s.tcp_bytes_unused.values().sum();
    assert_eq!(
        s.tcp_payload_bytes_seen,
        s.tcp_payload_bytes + s.duplicate_bytes + unused
    );
    let skipped: u64 = s.http_messages_skipped.values().sum();
    assert_eq!(s.http_messages, s.http_messages_parsed + skipped);
    let summary = run_summary(&RunInfo {
        inputs: &a.inputs,
        stats: s,
        rows: &a.rows,
        elapsed_s: a.elapsed_s,
        bytes_read: a.bytes_read,
    });
    assert!(summary.is_object());
    for row in &a.rows {
        let _ = row.cells();
    }
    let _ = sessions(&a.rows);
});
