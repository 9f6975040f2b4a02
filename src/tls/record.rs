//! TLS record layer: one incremental reader per direction.
//!
//! In: the direction's in-order bytes, in deliveries of any size, and gaps.
//! Out: whole records (5-byte header and fragment), or an error for a header
//! no TLS peer would send. After a gap the reader looks for the next plausible
//! header within [`RESYNC_SCAN_LIMIT`] bytes and reports what it skipped.
//! Holds at most one partial record plus the undelivered rest of the last
//! delivery. Never panics.

/// Largest fragment a record may carry: 2^14 plaintext plus 2048 of expansion
/// (RFC 5246 section 6.2.3; TLS 1.3 allows only 256, so this bound covers both).
pub const MAX_RECORD_FRAGMENT: usize = (1 << 14) + 2048;

/// How many bytes after a gap are searched for the next record header before
/// the rest of the direction is given up.
pub const RESYNC_SCAN_LIMIT: usize = 2 * (MAX_RECORD_FRAGMENT + HEADER_LEN);

/// Size of a record header.
pub const HEADER_LEN: usize = 5;

/// Capacity an emptied reader keeps for the next delivery; a larger buffer is freed, so that
/// connections waiting between records hold no memory for their largest past delivery.
pub const KEPT_BUFFER_CAPACITY: usize = 4096;

/// A record cut at the end of a delivery gets a buffer of its whole size once at least
/// 1/this of it has arrived (the few bytes before are moved into it then); until then
/// the buffer holds only what arrived, so that a header alone never holds a record's
/// worth of memory.
pub const CUT_RECORD_RESERVE_SHARE: usize = 16;

/// The record content types of TLS 1.0 to 1.3.
pub const CONTENT_CHANGE_CIPHER_SPEC: u8 = 20;
/// Alert records.
pub const CONTENT_ALERT: u8 = 21;
/// Handshake records.
pub const CONTENT_HANDSHAKE: u8 = 22;
/// Application data records (and every TLS 1.3 protected record).
pub const CONTENT_APPLICATION_DATA: u8 = 23;

/// One whole record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The header as sent (needed as additional data by TLS 1.3 AEAD).
    pub header: [u8; HEADER_LEN],
    /// The fragment: plaintext or ciphertext as sent.
    pub fragment: Vec<u8>,
}

impl Record {
    /// The outer content type.
    pub fn content_type(&self) -> u8 {
        self.header[0]
    }

    /// The record's protocol version field.
    pub fn version(&self) -> u16 {
        u16::from_be_bytes([self.header[1], self.header[2]])
    }

    /// Bytes the record took on the wire.
    pub fn wire_len(&self) -> usize {
        HEADER_LEN + self.fragment.len()
    }
}

/// What the reader found instead of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordError {
    /// A header announcing more than [`MAX_RECORD_FRAGMENT`] bytes (`tls.record_too_long`).
    TooLong,
    /// A header whose type or version no TLS peer sends (`tls.bad_record_header`).
    BadHeader,
}

impl RecordError {
    /// The anomaly name of the contract.
    pub fn anomaly(self) -> crate::anomaly::Anomaly {
        match self {
            RecordError::TooLong => super::anomaly::RECORD_TOO_LONG,
            RecordError::BadHeader => super::anomaly::BAD_RECORD_HEADER,
        }
    }
}

/// Whether the five bytes could start a TLS record (SSL 3.0 to TLS 1.3 versions).
pub fn plausible_header(header: &[u8]) -> bool {
    check_header(header).is_ok()
}

/// The fragment length a header announces (checked when the header was taken).
fn header_len(header: &[u8; HEADER_LEN]) -> usize {
    usize::from(u16::from_be_bytes([header[3], header[4]]))
}

fn check_header(header: &[u8]) -> Result<usize, RecordError> {
    let [ty, major, minor, hi, lo] = match header {
        [a, b, c, d, e, ..] => [*a, *b, *c, *d, *e],
        _ => return Err(RecordError::BadHeader),
    };
    if !(CONTENT_CHANGE_CIPHER_SPEC..=CONTENT_APPLICATION_DATA).contains(&ty)
        || major != 3
        || minor > 4
    {
        return Err(RecordError::BadHeader);
    }
    let len = usize::from(u16::from_be_bytes([hi, lo]));
    if len > MAX_RECORD_FRAGMENT {
        return Err(RecordError::TooLong);
    }
    Ok(len)
}

/// The record at the front of `bytes`, read where it lies: its fragment length when it
/// is whole, `None` when more bytes are needed.
pub fn split_record(bytes: &[u8]) -> Result<Option<usize>, RecordError> {
    let Some(header) = bytes.get(..HEADER_LEN) else {
        return Ok(None);
    };
    let len = check_header(header)?;
    Ok((bytes.len() >= HEADER_LEN + len).then_some(len))
}

/// Incremental record reader for one direction.
#[derive(Debug, Default)]
pub struct RecordReader {
    buf: Vec<u8>,
    start: usize,
    /// After a gap: the next header must be searched for.
    resync: bool,
    /// Bytes searched since the gap without finding a header.
    scanned: usize,
    /// The reader gave up on this direction (bad header, or resync failed).
    dead: bool,
    /// The first record may be an SSL 2.0-compatible ClientHello.
    sslv2_hello: bool,
    /// A record cut at the end of a delivery that began at a record boundary: its
    /// header, while `buf` holds only its fragment, so that the whole fragment is
    /// handed on without a copy.
    cut: Option<[u8; HEADER_LEN]>,
}

/// One step of the reader.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// A whole record.
    Record(Record),
    /// Bytes skipped while looking for a header after a gap.
    Skipped(usize),
    /// An SSL 2.0-compatible ClientHello (its body, after the 2-byte length).
    Sslv2Hello(Vec<u8>),
    /// The reader stopped: the rest of the direction is not records.
    /// Carries the error and how many buffered bytes it dropped.
    Failed(RecordError, usize),
}

impl RecordReader {
    /// Appends a delivery of in-order bytes; a dead reader refuses them (returns false).
    pub fn push(&mut self, bytes: &[u8]) -> bool {
        if self.dead {
            return false;
        }
        if self.start > 0 && self.start == self.buf.len() {
            self.empty();
        }
        if let Some(header) = self.cut {
            let len = header_len(&header);
            self.extend_cut(len, bytes);
            if self.buf.len() > len {
                // More than the record: back to one buffer of header and bytes.
                let mut all = Vec::with_capacity(HEADER_LEN + self.buf.len());
                all.extend_from_slice(&header);
                all.extend_from_slice(&self.buf);
                self.buf = all;
                self.cut = None;
            }
            return true;
        }
        if self.at_boundary()
            && let Some(header) = bytes.first_chunk::<HEADER_LEN>()
            && let Ok(len) = check_header(header)
            && bytes.len() < HEADER_LEN + len
        {
            self.empty();
            self.cut = Some(*header);
            self.extend_cut(len, bytes.get(HEADER_LEN..).unwrap_or_default());
            return true;
        }
        self.buf.extend_from_slice(bytes);
        true
    }

    /// Adds `bytes` to the fragment of the cut record (`len` bytes in all), sizing the
    /// buffer to the whole record once [`CUT_RECORD_RESERVE_SHARE`] allows it.
    fn extend_cut(&mut self, len: usize, bytes: &[u8]) {
        let have = self.buf.len().saturating_add(bytes.len());
        if self.buf.capacity() < len && have.saturating_mul(CUT_RECORD_RESERVE_SHARE) >= len {
            self.buf.reserve_exact(len.saturating_sub(self.buf.len()));
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Whether the reader holds nothing and expects a record header next: the caller
    /// may then read the records of a delivery where they lie, with [`split_record`].
    pub fn at_boundary(&self) -> bool {
        !self.dead && !self.resync && !self.sslv2_hello && self.held() == 0
    }

    /// How many bytes from the front of `bytes` complete the partial record held: all
    /// of `bytes` when they do not, or when that is not yet known (a header still cut,
    /// a search after a gap, an SSL 2.0-compatible ClientHello).
    pub fn wanted(&self, bytes: &[u8]) -> usize {
        if let Some(header) = &self.cut {
            return header_len(header)
                .saturating_sub(self.buf.len())
                .min(bytes.len());
        }
        let rest = self.buf.get(self.start..).unwrap_or_default();
        if self.dead || self.resync || self.sslv2_hello || rest.is_empty() {
            return bytes.len();
        }
        let mut header = [0u8; HEADER_LEN];
        let have = rest.len().min(HEADER_LEN);
        let from_bytes = HEADER_LEN - have;
        let (Some(held), Some(more)) = (rest.get(..have), bytes.get(..from_bytes)) else {
            return bytes.len();
        };
        for (h, b) in header.iter_mut().zip(held.iter().chain(more)) {
            *h = *b;
        }
        match check_header(&header) {
            Ok(len) => (HEADER_LEN + len)
                .saturating_sub(rest.len())
                .min(bytes.len()),
            Err(_) => bytes.len(),
        }
    }

    /// The caller found a header no TLS peer sends at a boundary: the rest of the
    /// direction is not records.
    pub fn fail(&mut self) {
        self.dead = true;
        self.empty();
    }

    /// Lets the first record be an SSL 2.0-compatible ClientHello (RFC 5246 appendix E.2).
    pub fn allow_sslv2_hello(&mut self) {
        self.sslv2_hello = self.start == 0 && !self.dead;
    }

    /// Whether the reader stopped reading records.
    pub fn is_dead(&self) -> bool {
        self.dead
    }

    /// Marks lost bytes: the partial record held is dropped and its size returned,
    /// and the next header will be searched for.
    pub fn gap(&mut self) -> usize {
        let dropped = self.held();
        self.empty();
        if !self.dead {
            self.resync = true;
            self.scanned = 0;
        }
        dropped
    }

    /// Bytes held (a partial record, or not yet read).
    pub fn held(&self) -> usize {
        let header = if self.cut.is_some() { HEADER_LEN } else { 0 };
        header + self.buf.len().saturating_sub(self.start)
    }

    /// Takes away the held bytes (at the end of the stream); returns how many.
    pub fn drain(&mut self) -> usize {
        let n = self.held();
        self.empty();
        n
    }

    /// Bytes of buffer the reader holds (held bytes and spare capacity).
    pub fn buffer_capacity(&self) -> usize {
        self.buf.capacity()
    }

    fn empty(&mut self) {
        if self.buf.capacity() > KEPT_BUFFER_CAPACITY {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        self.start = 0;
        self.cut = None;
    }

    /// The next record, skip or failure, or `None` when more bytes are needed.
    pub fn next_step(&mut self) -> Option<Step> {
        if self.dead {
            return None;
        }
        if let Some(header) = self.cut {
            if self.buf.len() < header_len(&header) {
                return None;
            }
            self.cut = None;
            let fragment = std::mem::take(&mut self.buf);
            return Some(Step::Record(Record { header, fragment }));
        }
        if self.resync {
            return self.resync_step();
        }
        let rest = self.buf.get(self.start..)?;
        if self.sslv2_hello {
            match rest {
                [hi, lo, ..] if hi & 0x80 != 0 => {
                    let len = usize::from(hi & 0x7F) << 8 | usize::from(*lo);
                    let body = rest.get(2..2 + len)?.to_vec();
                    self.sslv2_hello = false;
                    self.start += 2 + len;
                    return Some(Step::Sslv2Hello(body));
                }
                [_, _, ..] => self.sslv2_hello = false,
                _ => return None,
            }
        }
        let header = rest.get(..HEADER_LEN)?;
        let len = match check_header(header) {
            Ok(len) => len,
            Err(e) => {
                self.dead = true;
                let dropped = self.drain();
                return Some(Step::Failed(e, dropped));
            }
        };
        let whole = rest.get(..HEADER_LEN + len)?;
        let mut header_bytes = [0u8; HEADER_LEN];
        header_bytes.copy_from_slice(header);
        let record = Record {
            header: header_bytes,
            fragment: whole.get(HEADER_LEN..).unwrap_or_default().to_vec(),
        };
        self.start += HEADER_LEN + len;
        if self.start == self.buf.len() {
            self.empty();
        } else if self.start > MAX_RECORD_FRAGMENT {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        Some(Step::Record(record))
    }

    fn resync_step(&mut self) -> Option<Step> {
        let rest = self.buf.get(self.start..)?;
        let found = rest.windows(HEADER_LEN).position(|w| {
            check_header(w).is_ok() && w.first() != Some(&CONTENT_CHANGE_CIPHER_SPEC)
        });
        match found {
            Some(at) if self.scanned + at <= RESYNC_SCAN_LIMIT => {
                self.resync = false;
                self.start += at;
                if at == 0 {
                    self.next_step()
                } else {
                    Some(Step::Skipped(at))
                }
            }
            _ => {
                // Keep the last few bytes: a header may straddle the next delivery.
                let keep = rest.len().min(HEADER_LEN - 1);
                let skipped = rest.len() - keep;
                self.scanned += skipped;
                if self.scanned > RESYNC_SCAN_LIMIT {
                    self.dead = true;
                    let dropped = self.drain();
                    return Some(Step::Failed(RecordError::BadHeader, dropped));
                }
                if skipped == 0 {
                    return None;
                }
                self.start += skipped;
                Some(Step::Skipped(skipped))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(ty: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![ty, 3, 3];
        v.extend_from_slice(&(body.len() as u16).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    fn drain_steps(r: &mut RecordReader) -> Vec<Step> {
        let mut out = Vec::new();
        while let Some(s) = r.next_step() {
            out.push(s);
        }
        out
    }

    #[test]
    fn emptied_reader_frees_a_large_buffer() {
        // 200 connections idle between records must not each keep their largest delivery.
        let big = record(23, &[7u8; 16_000]);
        let mut r = RecordReader::default();
        r.push(&big[..100]);
        r.push(&big[100..]);
        assert!(matches!(drain_steps(&mut r).as_slice(), [Step::Record(_)]));
        assert_eq!((r.held(), r.buffer_capacity()), (0, 0));
        // A small one is kept for the next delivery.
        r.push(&record(23, b"small")[..3]);
        let kept = r.buffer_capacity();
        r.push(&record(23, b"small")[3..]);
        assert_eq!(drain_steps(&mut r).len(), 1);
        assert!(r.buffer_capacity() >= kept && r.buffer_capacity() <= KEPT_BUFFER_CAPACITY);
        // Held bytes cut by a gap and drained at the end free it too.
        r.push(&big[..9000]);
        assert_eq!(r.gap(), 9000);
        assert_eq!(r.buffer_capacity(), 0);
        r.push(&big[..9000]);
        assert_eq!(r.drain(), 9000);
        assert_eq!(r.buffer_capacity(), 0);
    }

    #[test]
    fn two_records_in_one_delivery() {
        let mut wire = record(22, b"hello");
        wire.extend(record(23, b"world!"));
        let mut r = RecordReader::default();
        r.push(&wire);
        let steps = drain_steps(&mut r);
        assert_eq!(steps.len(), 2);
        let Step::Record(a) = &steps[0] else {
            panic!("{steps:?}")
        };
        assert_eq!(
            (a.content_type(), a.version(), &a.fragment[..]),
            (22, 0x0303, &b"hello"[..])
        );
        let Step::Record(b) = &steps[1] else {
            panic!("{steps:?}")
        };
        assert_eq!((b.content_type(), b.wire_len()), (23, 11));
        assert_eq!(r.held(), 0);
    }

    #[test]
    fn split_at_every_byte() {
        let mut wire = record(22, &[7u8; 40]);
        wire.extend(record(23, &[9u8; 3]));
        wire.extend(record(21, &[1, 0]));
        for cut1 in 0..wire.len() {
            for cut2 in cut1..wire.len() {
                let mut r = RecordReader::default();
                let mut got = Vec::new();
                for part in [&wire[..cut1], &wire[cut1..cut2], &wire[cut2..]] {
                    r.push(part);
                    got.extend(drain_steps(&mut r));
                }
                let types: Vec<u8> = got
                    .iter()
                    .map(|s| match s {
                        Step::Record(rec) => rec.content_type(),
                        other => panic!("cut {cut1}/{cut2}: {other:?}"),
                    })
                    .collect();
                assert_eq!(types, vec![22, 23, 21], "cut {cut1}/{cut2}");
            }
        }
    }

    #[test]
    fn too_long_is_an_error_and_stops() {
        let mut wire = vec![23, 3, 3];
        wire.extend_from_slice(&((MAX_RECORD_FRAGMENT + 1) as u16).to_be_bytes());
        wire.extend_from_slice(&[0; 10]);
        let mut r = RecordReader::default();
        r.push(&wire);
        assert_eq!(r.next_step(), Some(Step::Failed(RecordError::TooLong, 15)));
        assert!(r.is_dead());
        assert_eq!(RecordError::TooLong.anomaly(), "tls.record_too_long");
        // The largest allowed fragment is a record.
        let mut r = RecordReader::default();
        r.push(&record(23, &vec![0u8; MAX_RECORD_FRAGMENT]));
        assert!(
            matches!(r.next_step(), Some(Step::Record(rec)) if rec.fragment.len() == MAX_RECORD_FRAGMENT)
        );
    }

    #[test]
    fn not_tls_fails_on_first_header() {
        let mut r = RecordReader::default();
        r.push(b"GET / HTTP/1.1\r\n");
        assert_eq!(
            r.next_step(),
            Some(Step::Failed(RecordError::BadHeader, 16))
        );
        r.push(b"more");
        assert_eq!(r.next_step(), None);
    }

    #[test]
    fn resync_after_gap_skips_to_next_header() {
        let mut r = RecordReader::default();
        let first = record(23, &[1u8; 30]);
        r.push(&first[..12]);
        assert_eq!(r.next_step(), None);
        assert_eq!(r.gap(), 12);
        // The rest of a record whose start was lost, then a whole record.
        let mut after = vec![0xAAu8; 17];
        after.extend(record(23, b"next"));
        r.push(&after);
        assert_eq!(r.next_step(), Some(Step::Skipped(17)));
        let Some(Step::Record(rec)) = r.next_step() else {
            panic!()
        };
        assert_eq!(rec.fragment, b"next");
    }

    #[test]
    fn resync_gives_up_past_the_bound() {
        let mut r = RecordReader::default();
        r.gap();
        let junk = vec![0xAAu8; RESYNC_SCAN_LIMIT / 2];
        let mut skipped = 0;
        let mut failed = None;
        let mut pushed = 0;
        for _ in 0..3 {
            if !r.is_dead() {
                pushed += junk.len();
            }
            r.push(&junk);
            for s in drain_steps(&mut r) {
                match s {
                    Step::Skipped(n) => skipped += n,
                    Step::Failed(e, n) => failed = Some((e, n)),
                    Step::Record(_) | Step::Sslv2Hello(_) => panic!("no record in junk"),
                }
            }
        }
        let (e, dropped) = failed.expect("gave up");
        assert_eq!(e, RecordError::BadHeader);
        assert_eq!(skipped + dropped, pushed, "every byte accounted");
        assert!(r.is_dead());
    }

    #[test]
    fn sslv2_hello_then_records() {
        let mut wire = vec![0x80, 3, 1, 3, 0];
        wire.extend(record(22, b"x"));
        for cut in 0..wire.len() {
            let mut r = RecordReader::default();
            r.allow_sslv2_hello();
            r.push(&wire[..cut]);
            let mut steps = drain_steps(&mut r);
            r.push(&wire[cut..]);
            steps.extend(drain_steps(&mut r));
            assert_eq!(steps.len(), 2, "cut {cut}");
            assert_eq!(steps[0], Step::Sslv2Hello(vec![1, 3, 0]), "cut {cut}");
        }
        // Not one: read as records.
        let mut r = RecordReader::default();
        r.allow_sslv2_hello();
        r.push(&record(22, b"y"));
        assert!(matches!(r.next_step(), Some(Step::Record(_))));
    }

    #[test]
    fn header_straddling_deliveries_after_gap() {
        let rec = record(23, b"abc");
        for cut in 0..rec.len() {
            let mut r = RecordReader::default();
            r.gap();
            let mut first = vec![0x00u8; 9];
            first.extend_from_slice(&rec[..cut]);
            r.push(&first);
            let mut steps = drain_steps(&mut r);
            r.push(&rec[cut..]);
            steps.extend(drain_steps(&mut r));
            let skipped: usize = steps
                .iter()
                .map(|s| if let Step::Skipped(n) = s { *n } else { 0 })
                .sum();
            assert_eq!(skipped, 9, "cut {cut}: {steps:?}");
            assert!(
                matches!(steps.last(), Some(Step::Record(r)) if r.fragment == b"abc"),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn wanted_completes_the_held_record_and_no_more() {
        let first = record(23, &[7u8; 300]);
        let second = record(23, b"next");
        let mut both = first.clone();
        both.extend_from_slice(&second);
        // Cut inside the header and inside the fragment: the rest of the first record is wanted.
        for cut in 1..first.len() {
            let mut r = RecordReader::default();
            assert!(r.at_boundary());
            r.push(&both[..cut]);
            assert_eq!(r.next_step(), None, "cut {cut}");
            assert!(!r.at_boundary());
            let rest = &both[cut..];
            let want = r.wanted(rest);
            assert_eq!(want, first.len() - cut, "cut {cut}");
            r.push(&rest[..want]);
            assert!(matches!(r.next_step(), Some(Step::Record(rec)) if rec.fragment.len() == 300));
            assert!(r.at_boundary(), "cut {cut}");
            assert_eq!(split_record(&rest[want..]), Ok(Some(4)));
        }
        // A delivery too short to finish even the header: all of it.
        let mut r = RecordReader::default();
        r.push(&first[..2]);
        assert_eq!(r.wanted(&first[2..4]), 2);
    }

    #[test]
    fn wanted_takes_everything_while_searching_or_dead() {
        let mut r = RecordReader::default();
        r.push(&[23, 3]);
        r.gap();
        assert!(!r.at_boundary(), "a gap means a search for the next header");
        assert_eq!(r.wanted(&[1, 2, 3]), 3);
        let mut dead = RecordReader::default();
        dead.fail();
        assert!(!dead.at_boundary() && dead.is_dead());
        assert!(!dead.push(b"x"));
    }

    #[test]
    fn split_record_reads_where_the_bytes_lie() {
        let rec = record(22, b"hello");
        assert_eq!(split_record(&rec), Ok(Some(5)));
        for cut in 0..rec.len() {
            assert_eq!(split_record(&rec[..cut]), Ok(None), "cut {cut}");
        }
        assert_eq!(split_record(b"GET / HTTP/1.1"), Err(RecordError::BadHeader));
        assert_eq!(
            split_record(&[23, 3, 3, 0xFF, 0xFF]),
            Err(RecordError::TooLong)
        );
    }

    #[test]
    fn record_cut_at_a_boundary_is_handed_on_in_the_buffer_it_was_gathered_in() {
        let rec = record(23, &[9u8; 1000]);
        for cut in HEADER_LEN..rec.len() {
            let mut r = RecordReader::default();
            r.push(&rec[..cut]);
            assert_eq!(r.held(), cut);
            assert_eq!(r.next_step(), None);
            let ptr = r.buf.as_ptr();
            assert_eq!(r.wanted(&rec[cut..]), rec.len() - cut);
            r.push(&rec[cut..]);
            let Some(Step::Record(got)) = r.next_step() else {
                panic!("cut {cut}: a record");
            };
            if (cut - HEADER_LEN) * CUT_RECORD_RESERVE_SHARE >= 1000 {
                assert_eq!(got.fragment.as_ptr(), ptr, "cut {cut}: no copy");
            }
            assert_eq!((got.header, got.fragment.len()), ([23, 3, 3, 3, 232], 1000));
            assert!(r.at_boundary() && r.held() == 0);
        }
    }

    #[test]
    fn record_cut_at_a_boundary_then_more_than_it_still_reads_both() {
        let first = record(23, &[1u8; 40]);
        let second = record(22, b"next");
        let mut r = RecordReader::default();
        r.push(&first[..10]);
        let mut rest = first[10..].to_vec();
        rest.extend_from_slice(&second);
        r.push(&rest);
        let steps = drain_steps(&mut r);
        assert!(
            matches!(steps.as_slice(), [Step::Record(a), Step::Record(b)]
                if a.fragment == [1u8; 40] && b.fragment == b"next"),
            "{steps:?}"
        );
        let mut r = RecordReader::default();
        r.push(&first[..10]);
        assert_eq!(r.gap(), 10, "a gap drops the cut record, header and all");
    }

    #[test]
    fn a_header_alone_does_not_reserve_a_records_worth_of_memory() {
        // Hostile: every connection sends only the header of a longest record.
        let mut header = vec![23, 3, 3];
        header.extend_from_slice(&(MAX_RECORD_FRAGMENT as u16).to_be_bytes());
        let mut r = RecordReader::default();
        r.push(&header);
        r.push(&[0u8; 16]);
        assert_eq!(r.held(), HEADER_LEN + 16);
        assert!(
            r.buffer_capacity() < MAX_RECORD_FRAGMENT / 4,
            "capacity {}",
            r.buffer_capacity()
        );
        // A sizeable share of the record: its buffer is sized to it at once.
        let share = MAX_RECORD_FRAGMENT / CUT_RECORD_RESERVE_SHARE + 1;
        let mut first = header.clone();
        first.extend(vec![0u8; share]);
        let mut r = RecordReader::default();
        r.push(&first);
        assert!(r.buffer_capacity() >= MAX_RECORD_FRAGMENT);
        r.push(&vec![0u8; MAX_RECORD_FRAGMENT - share]);
        assert!(
            matches!(r.next_step(), Some(Step::Record(rec)) if rec.fragment.len() == MAX_RECORD_FRAGMENT)
        );
    }
}
