//! A live interface as a [`FrameSource`] (feature `live`): libpcap in immediate mode with
//! nanosecond timestamps, a kernel buffer of `--buffer-size` and a BPF filter.
//!
//! - Frames are numbered as they arrive. While the interface is quiet, and at least every
//!   [`LiveOptions::tick`] while it is busy, the source hands [`Next::Quiet`] with the wall
//!   clock (capture time on a live interface), so rows waiting for time to pass leave and idle
//!   flows time out without a packet to carry the time.
//! - Key log files are followed as they grow (a client appends its `SSLKEYLOGFILE` lines as it
//!   connects, often after its first packets were captured): each batch of complete new
//!   lines becomes a secrets block of the capture, stamped with the next frame, and is
//!   written to the raw capture before that frame.
//! - It stops at [`LiveControl::stop`] (Ctrl-C, `q`), the deadline or the packet count; its
//!   [`InputInfo`] then carries libpcap's drop counters.
//! - `-w`: every frame, as captured, goes to a pcapng file ([`PcapngWriter`]).

use super::keylog_follow::KeylogFollower;
use super::{
    CaptureCounters, CaptureDrops, CaptureSecrets, FrameRef, FrameSource, InputFormat, InputInfo,
    InterfaceStats, Next, PcapngWriter, SECRETS_TLS_KEY_LOG, SecretsBlock,
};
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How a live capture is opened and when it stops.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    pub interface: String,
    /// BPF filter (tcpdump's syntax).
    pub filter: String,
    pub snaplen: u32,
    pub buffer_bytes: usize,
    /// Stop this long after the start.
    pub duration: Option<Duration>,
    /// Stop after this many packets.
    pub count: Option<u64>,
    /// Key log files followed as they grow.
    pub keylogs: Vec<PathBuf>,
    /// Keep the raw capture here (pcapng).
    pub raw: Option<PathBuf>,
    /// Longest time between two [`Next::Quiet`] hand-overs.
    pub tick: Duration,
}

/// Most time between two clock hand-overs of a live source, and libpcap's read timeout.
pub const LIVE_TICK: Duration = Duration::from_millis(100);

/// How long a live source sleeps when libpcap has no packet waiting.
const IDLE_SLEEP: Duration = Duration::from_millis(2);

/// What another thread sees of a running capture and how it stops it.
#[derive(Debug)]
pub struct LiveControl {
    /// Set by anyone (Ctrl-C, the screen's `q`): the source ends at its next read.
    pub stop: Arc<AtomicBool>,
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    /// libpcap's counters at the last tick; `u64::MAX` until known.
    pub kernel_drops: AtomicU64,
    pub interface_drops: AtomicU64,
}

impl Default for LiveControl {
    fn default() -> Self {
        LiveControl {
            stop: Arc::new(AtomicBool::new(false)),
            packets: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            kernel_drops: AtomicU64::new(u64::MAX),
            interface_drops: AtomicU64::new(u64::MAX),
        }
    }
}

impl LiveControl {
    /// The drops libpcap reported at the last tick.
    pub fn drops(&self) -> CaptureDrops {
        let known = |n: u64| (n != u64::MAX).then_some(n);
        CaptureDrops {
            kernel: known(self.kernel_drops.load(Ordering::Relaxed)),
            interface: known(self.interface_drops.load(Ordering::Relaxed)),
        }
    }
}

/// Why a live capture could not start: one line each, for exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(
        "cannot capture on {interface}: permission denied (run as root, or give the binary CAP_NET_RAW and CAP_NET_ADMIN: sudo setcap cap_net_raw,cap_net_admin=eip $(command -v mcp-trace))"
    )]
    Permission { interface: String },
    #[error("no interface named `{interface}` (interfaces: {known})")]
    UnknownInterface { interface: String, known: String },
    #[error("-f: bad capture filter `{filter}`: {reason}")]
    BadFilter { filter: String, reason: String },
    #[error("cannot capture on {interface}: {reason}")]
    Open { interface: String, reason: String },
    #[error("-w {path}: {error}")]
    Raw { path: String, error: std::io::Error },
}

type RawWriter = PcapngWriter<BufWriter<std::fs::File>>;

/// A live interface, read through libpcap.
pub struct LiveSource {
    capture: pcap::Capture<pcap::Active>,
    options: LiveOptions,
    link_type: u32,
    control: Arc<LiveControl>,
    started: Instant,
    last_tick: Instant,
    next_index: u64,
    bytes: u64,
    secrets: CaptureSecrets,
    keylogs: Vec<KeylogFollower>,
    raw: Option<RawWriter>,
    /// The capture's last statistics (unknown until libpcap gave them).
    stats: InterfaceStats,
    /// Damage that ended the capture (a read error), for the run summary.
    error: Option<String>,
    ended: bool,
    /// The bytes of the frame handed out last.
    frame: Vec<u8>,
}

impl LiveSource {
    /// Opens the interface and applies the filter; everything that can fail does so here.
    pub fn open(options: LiveOptions, control: Arc<LiveControl>) -> Result<LiveSource, LiveError> {
        let interface = options.interface.clone();
        let known = pcap::Device::list().map_err(|e| LiveError::Open {
            interface: interface.clone(),
            reason: e.to_string(),
        })?;
        if !known.iter().any(|d| d.name == interface) {
            let names: Vec<String> = known.into_iter().map(|d| d.name).collect();
            return Err(LiveError::UnknownInterface {
                interface,
                known: names.join(", "),
            });
        }
        let open_error = |e: pcap::Error| classify_open_error(&interface, e);
        let inactive = pcap::Capture::from_device(interface.as_str())
            .map_err(open_error)?
            .immediate_mode(true)
            .precision(pcap::Precision::Nano)
            .snaplen(i32::try_from(options.snaplen).unwrap_or(i32::MAX))
            .buffer_size(i32::try_from(options.buffer_bytes).unwrap_or(i32::MAX))
            .timeout(
                i32::try_from(options.tick.as_millis())
                    .unwrap_or(100)
                    .max(1),
            );
        // Non-blocking reads: libpcap's read timeout does not bound a read in immediate mode,
        // and the source must tell the time while nothing comes.
        let mut capture = inactive
            .open()
            .and_then(pcap::Capture::setnonblock)
            .map_err(open_error)?;
        capture
            .filter(&options.filter, true)
            .map_err(|e| LiveError::BadFilter {
                filter: options.filter.clone(),
                reason: pcap_message(&e),
            })?;
        let link_type = u32::try_from(capture.get_datalink().0).unwrap_or(0);
        let raw = match &options.raw {
            Some(path) => {
                let file = std::fs::File::create(path).map_err(|error| LiveError::Raw {
                    path: path.display().to_string(),
                    error,
                })?;
                let writer = PcapngWriter::new(
                    BufWriter::with_capacity(1 << 20, file),
                    link_type,
                    options.snaplen,
                    &interface,
                    &options.filter,
                )
                .map_err(|error| LiveError::Raw {
                    path: path.display().to_string(),
                    error,
                })?;
                Some(writer)
            }
            None => None,
        };
        let keylogs = options
            .keylogs
            .iter()
            .map(|p| KeylogFollower::new(p.clone()))
            .collect();
        let now = Instant::now();
        let mut source = LiveSource {
            capture,
            options,
            link_type,
            control,
            started: now,
            last_tick: now,
            next_index: 1,
            bytes: 0,
            secrets: CaptureSecrets::default(),
            keylogs,
            raw,
            stats: InterfaceStats::default(),
            error: None,
            ended: false,
            frame: Vec::with_capacity(65536),
        };
        if source.keylogs.is_empty() {
            // Nothing can bring secrets: no TLS connection waits for them.
            source.secrets.none_to_come();
        }
        // Secrets already logged apply from the first frame.
        source.follow_keylogs();
        Ok(source)
    }

    /// The link type of the interface (LINKTYPE_*).
    pub fn link_type(&self) -> u32 {
        self.link_type
    }

    /// New complete key log lines become a secrets block for the frames from the next one on.
    fn follow_keylogs(&mut self) {
        let mut lines = Vec::new();
        for follower in &mut self.keylogs {
            follower.read_new_lines(&mut lines);
        }
        if lines.is_empty() {
            return;
        }
        if let Some(raw) = self.raw.as_mut()
            && let Err(e) = raw.secrets(&lines)
        {
            self.error.get_or_insert_with(|| format!("-w: {e}"));
        }
        self.secrets.append(SecretsBlock {
            from_frame: self.next_index,
            secrets_type: SECRETS_TLS_KEY_LOG,
            data: lines,
        });
    }

    fn refresh_stats(&mut self) {
        if let Ok(stat) = self.capture.stats() {
            self.control
                .kernel_drops
                .store(u64::from(stat.dropped), Ordering::Relaxed);
            self.control
                .interface_drops
                .store(u64::from(stat.if_dropped), Ordering::Relaxed);
            self.stats = InterfaceStats {
                received: Some(u64::from(stat.received)),
                kernel_drops: Some(u64::from(stat.dropped)),
                interface_drops: Some(u64::from(stat.if_dropped)),
            };
        }
    }

    /// Sleeps a little while nothing is waiting: [`IDLE_SLEEP`], or less when the next
    /// tick is due sooner. (The crate has no unsafe code, so no poll(2) on libpcap's
    /// descriptor; a busy interface never sleeps, and the kernel buffer holds what arrives
    /// meanwhile.)
    fn wait_for_packets(&self) {
        let remaining = self.options.tick.saturating_sub(self.last_tick.elapsed());
        std::thread::sleep(remaining.min(IDLE_SLEEP));
    }

    fn should_stop(&self) -> bool {
        self.control.stop.load(Ordering::Relaxed)
            || self
                .options
                .duration
                .is_some_and(|d| self.started.elapsed() >= d)
            || self.options.count.is_some_and(|n| self.next_index > n)
    }

    /// The end: final statistics, the raw capture closed with them.
    fn end(&mut self) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.follow_keylogs();
        self.refresh_stats();
        if let Some(raw) = self.raw.take()
            && let Err(e) = raw.finish(wall_clock_ns(), self.stats)
        {
            self.error.get_or_insert_with(|| format!("-w: {e}"));
        }
    }
}

impl FrameSource for LiveSource {
    fn next(&mut self, stats: &mut CaptureCounters) -> Next<'_> {
        let (ts_ns, orig_len) = loop {
            if self.ended || self.should_stop() {
                self.end();
                return Next::End;
            }
            if self.last_tick.elapsed() >= self.options.tick {
                self.last_tick = Instant::now();
                self.follow_keylogs();
                self.refresh_stats();
                if let Some(raw) = self.raw.as_mut() {
                    let _ = raw.flush();
                }
                return Next::Quiet {
                    now_ns: wall_clock_ns(),
                };
            }
            match self.capture.next_packet() {
                Ok(packet) => {
                    let header = *packet.header;
                    // Copied out: a frame borrowed from libpcap's ring could not outlive this
                    // loop (the borrow checker's view), and the copy is small beside the work
                    // the frame goes on to.
                    self.frame.clear();
                    self.frame.extend_from_slice(packet.data);
                    // Nanosecond precision: `tv_usec` holds nanoseconds.
                    let ts_ns = header
                        .ts
                        .tv_sec
                        .saturating_mul(1_000_000_000)
                        .saturating_add(header.ts.tv_usec);
                    break (ts_ns, header.len);
                }
                Err(pcap::Error::TimeoutExpired) => self.wait_for_packets(),
                Err(pcap::Error::NoMorePackets) => {
                    self.end();
                    return Next::End;
                }
                Err(e) => {
                    self.error = Some(pcap_message(&e));
                    self.end();
                    return Next::End;
                }
            }
        };
        let index = self.next_index;
        self.next_index += 1;
        self.bytes = self.bytes.saturating_add(u64::from(orig_len));
        stats.packets_total += 1;
        self.control.packets.store(index, Ordering::Relaxed);
        self.control.bytes.store(self.bytes, Ordering::Relaxed);
        if let Some(raw) = self.raw.as_mut()
            && let Err(e) = raw.packet(ts_ns, &self.frame, orig_len)
        {
            self.error.get_or_insert_with(|| format!("-w: {e}"));
            self.raw = None;
        }
        Next::Frame(FrameRef {
            index,
            input: 0,
            ts_ns,
            link_type: self.link_type,
            data: &self.frame,
            orig_len,
        })
    }

    fn secrets(&self) -> CaptureSecrets {
        self.secrets.clone()
    }

    fn bytes_read(&self) -> u64 {
        self.bytes
    }

    fn infos(&self) -> Vec<InputInfo> {
        let drops = CaptureDrops {
            kernel: self.stats.kernel_drops,
            interface: self.stats.interface_drops,
        };
        vec![InputInfo {
            name: self.options.interface.clone(),
            bytes: self.bytes,
            format: InputFormat::Live,
            link_types: vec![self.link_type],
            gzip: false,
            error: self.error.clone(),
            drops,
        }]
    }
}

/// Wall-clock time, nanoseconds since the Unix epoch (a live interface's capture time).
fn wall_clock_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn pcap_message(e: &pcap::Error) -> String {
    let text = e.to_string();
    text.strip_prefix("libpcap error: ")
        .unwrap_or(&text)
        .trim()
        .to_string()
}

fn classify_open_error(interface: &str, e: pcap::Error) -> LiveError {
    let text = pcap_message(&e);
    let lower = text.to_ascii_lowercase();
    if lower.contains("permission") || lower.contains("not permitted") {
        LiveError::Permission {
            interface: interface.to_string(),
        }
    } else {
        LiveError::Open {
            interface: interface.to_string(),
            reason: text,
        }
    }
}
