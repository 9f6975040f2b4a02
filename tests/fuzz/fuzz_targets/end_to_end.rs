//! Raw capture bytes -> exchanges: `pipeline::analyze` on a temporary file,
//! then the summary and the table rows, as `mcp-trace analyze` does. The same file is then
//! analyzed with 2 or 3 threads (by the input's length), which must give the same rows and
//! counts: the threaded pipeline, differentially.
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
    let threaded = Config {
        threads: 2 + data.len() % 2,
        ..Config::default()
    };
    let res_threaded = analyze(&[p.to_string()], &threaded);
    let _ = std::fs::remove_file(&path);
    match (&res, &res_threaded) {
        (Ok(one), Ok(more)) => {
            let rows = |a: &[mcp_trace::mcp::Exchange]| serde_json::to_value(a).ok();
            assert_eq!(rows(&one.rows), rows(&more.rows), "rows differ with threads");
            assert_eq!(
                serde_json::to_value(&one.stats).ok(),
                serde_json::to_value(&more.stats).ok(),
                "counts differ with threads"
            );
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("one thread and {} threads disagree on failing", threaded.threads),
    }
    let Ok(a) = res else { return };
    let s = &a.stats;
    assert_eq!(
        s.capture.packets_total,
        s.capture.packets_decoded + s.packets_skipped_total()
    );
    // Every captured TCP payload byte and every HTTP head begun is accounted for.
    let unused: u64 = s.flow.tcp_bytes_unused.total();
    assert_eq!(
        s.flow.tcp_payload_bytes_seen,
        s.flow.tcp_payload_bytes + s.flow.duplicate_bytes + unused
    );
    let skipped: u64 = s.http.http_messages_skipped.total();
    assert_eq!(s.http.http_messages, s.http.http_messages_parsed + skipped);
    let summary = run_summary(&RunInfo {
        undecrypted: &mcp_trace::report::NO_UNDECRYPTED,
        inputs: &a.inputs,
        stats: s,
        rows: &a.rows.iter().collect::<Vec<_>>(),
        elapsed_s: a.elapsed_s,
        bytes_read: a.bytes_read,
    });
    assert!(summary.is_object());
    for row in &a.rows {
        let _ = row.cells();
    }
    let _ = sessions(&a.rows);
});
