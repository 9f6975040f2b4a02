//! pcap / pcapng / gzip reading: any bytes as a capture file, every frame read.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::capture::CaptureCounters;
use mcp_trace::capture::{MAX_RECORD_BYTES, Merger, Source, open_reader};

fuzz_target!(|data: &[u8]| {
    let reader = Box::new(std::io::Cursor::new(data.to_vec()));
    let Ok(source) = open_reader("fuzz", 0, reader) else {
        return;
    };
    let Source::Packets(reader) = source else {
        return;
    };
    let mut merger = Merger::new(vec![reader]);
    let mut stats = CaptureCounters::default();
    let mut last = 0u64;
    while let Some(frame) = merger.next_frame(&mut stats) {
        // Frames are numbered 1, 2, 3... and never exceed the record limit.
        assert_eq!(frame.index, last + 1);
        last = frame.index;
        assert!(frame.data.len() <= MAX_RECORD_BYTES);
    }
    assert_eq!(stats.packets_total, last + stats.packets_skipped.total());
});
