//! TCP of one generated connection: frames with valid checksums, a write as
//! MSS-sized segments with the peer's ACKs (a few retransmitted or swapped),
//! and with `--tls` the records and TLS-only bytes in the same sequence space.

use super::*;

pub fn checksum_add(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

pub fn checksum_fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// Ethernet + IPv4 + TCP frame with valid checksums.
pub fn frame(
    src: &Dir,
    dst: &Dir,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
    mss: usize,
) -> Vec<u8> {
    let mss_option = [2, 4, (mss >> 8) as u8, mss as u8];
    let opts: &[u8] = if flags & SYN != 0 { &mss_option } else { &[] };
    let tcp_len = 20 + opts.len() + payload.len();
    let ip_len = 20 + tcp_len;
    let mut f = Vec::with_capacity(14 + ip_len);
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00]);
    let ip_start = f.len();
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&(ip_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src.ip);
    f.extend_from_slice(&dst.ip);
    let ip_sum = checksum_fold(checksum_add(0, &f[ip_start..]));
    f[ip_start + 10..ip_start + 12].copy_from_slice(&ip_sum.to_be_bytes());
    let tcp_start = f.len();
    f.extend_from_slice(&src.port.to_be_bytes());
    f.extend_from_slice(&dst.port.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&ack.to_be_bytes());
    f.push((((20 + opts.len()) / 4) << 4) as u8);
    f.push(flags);
    f.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]); // window, checksum, urgent
    f.extend_from_slice(opts);
    f.extend_from_slice(payload);
    let mut pseudo = [0u8; 12];
    pseudo[..4].copy_from_slice(&src.ip);
    pseudo[4..8].copy_from_slice(&dst.ip);
    pseudo[9] = 6;
    pseudo[10..].copy_from_slice(&(tcp_len as u16).to_be_bytes());
    let sum = checksum_fold(checksum_add(checksum_add(0, &pseudo), &f[tcp_start..]));
    f[tcp_start + 16..tcp_start + 18].copy_from_slice(&sum.to_be_bytes());
    f
}

impl Conn {
    /// Queues a control segment from the client (`from_client`) or the server.
    pub fn control(&mut self, from_client: bool, flags: u8) {
        let (src, dst) = if from_client {
            (&self.client, &self.server)
        } else {
            (&self.server, &self.client)
        };
        let ack = if flags & ACK != 0 { dst.wire_seq() } else { 0 };
        let mss = if self.tls.is_some() { TLS_MSS } else { MSS };
        let f = frame(src, dst, src.wire_seq(), ack, flags, &[], mss);
        let ts_us = self.now_us;
        let plain_len = f.len() as u32;
        self.queue.push_back(Packet {
            ts_us,
            frame: f,
            plain_len,
        });
        let src = if from_client {
            &mut self.client
        } else {
            &mut self.server
        };
        if flags & (SYN | FIN) != 0 {
            src.seq = src.seq.wrapping_add(1);
        }
        self.now_us += 20;
    }

    /// Queues `data` as MSS-sized segments with ACKs from the peer; a few
    /// segments are retransmitted or swapped with their successor.
    /// With TLS the write is sealed and each segment carries its plaintext's
    /// records; the random draws stay those of the plaintext.
    pub fn send(&mut self, rng: &mut Rng, from_client: bool, data: &[u8]) {
        let sealed = self.tls.as_mut().map(|t| t.seal_write(from_client, data));
        let wire_at = |offset: usize| sealed.as_ref().map_or(offset, |s| s.offset(offset));
        let mut segs: Vec<(u32, &[u8])> = Vec::new();
        let base = if from_client {
            &self.client
        } else {
            &self.server
        };
        let (plain_base, wire_base) = (base.seq, base.wire_seq());
        // Wire sequence number of a plaintext one inside this write.
        let wire_seq = |plain: u32| {
            wire_base.wrapping_add(wire_at(plain.wrapping_sub(plain_base) as usize) as u32)
        };
        let mut seq = plain_base;
        for chunk in data.chunks(MSS) {
            segs.push((seq, chunk));
            seq = seq.wrapping_add(chunk.len() as u32);
        }
        let mut order: Vec<usize> = (0..segs.len()).collect();
        let mut i = 0;
        while i + 1 < order.len() {
            if rng.per_mille(REORDER_PER_MILLE) {
                order.swap(i, i + 1);
                i += 2;
            } else {
                i += 1;
            }
        }
        let (src, dst) = if from_client {
            (&self.client, &self.server)
        } else {
            (&self.server, &self.client)
        };
        let mut since_ack = 0;
        let mut arrived = vec![false; segs.len()];
        let mut contiguous = 0; // segments received in order so far
        for (n, &k) in order.iter().enumerate() {
            let (s, chunk) = segs[k];
            let last = n + 1 == order.len();
            let flags = if last { ACK | PSH } else { ACK };
            let payload = match &sealed {
                Some(w) => {
                    let at = s.wrapping_sub(plain_base) as usize;
                    &w.wire[wire_at(at)..wire_at(at + chunk.len())]
                }
                None => chunk,
            };
            let f = frame(src, dst, wire_seq(s), dst.wire_seq(), flags, payload, MSS);
            let plain_len = (14 + 20 + 20 + chunk.len()) as u32;
            if rng.per_mille(RETRANSMIT_PER_MILLE) {
                let dup = f.clone();
                self.queue.push_back(Packet {
                    ts_us: self.now_us,
                    frame: f,
                    plain_len,
                });
                self.now_us += rng.range(200, 3000);
                self.queue.push_back(Packet {
                    ts_us: self.now_us,
                    frame: dup,
                    plain_len,
                });
            } else {
                self.queue.push_back(Packet {
                    ts_us: self.now_us,
                    frame: f,
                    plain_len,
                });
            }
            self.now_us += rng.range(5, 40);
            arrived[k] = true;
            while contiguous < segs.len() && arrived[contiguous] {
                contiguous += 1;
            }
            since_ack += 1;
            if since_ack == 2 || last {
                // The peer ACKs every second segment and the end of each write.
                since_ack = 0;
                let acked = match contiguous.checked_sub(1).map(|i| segs[i]) {
                    Some((s, c)) => s.wrapping_add(c.len() as u32),
                    None => segs[0].0,
                };
                let a = frame(dst, src, dst.wire_seq(), wire_seq(acked), ACK, &[], MSS);
                let plain_len = a.len() as u32;
                self.queue.push_back(Packet {
                    ts_us: self.now_us,
                    frame: a,
                    plain_len,
                });
                self.now_us += rng.range(5, 30);
            }
        }
        let overhead = sealed.map_or(0, |s| s.wire.len() - data.len()) as u32;
        let src = if from_client {
            &mut self.client
        } else {
            &mut self.server
        };
        src.seq = seq;
        src.shift = src.shift.wrapping_add(overhead);
    }

    /// Queues TLS-only bytes at `ts_us`, in order and without loss, and the peer's ACK.
    /// They take no random draw and leave the connection's clock alone, so the
    /// plaintext traffic around them is unchanged.
    fn send_tls_only(&mut self, from_client: bool, ts_us: u64, bytes: &[u8]) {
        let (src, dst) = if from_client {
            (&mut self.client, &self.server)
        } else {
            (&mut self.server, &self.client)
        };
        let chunks = bytes.chunks(MSS).count();
        for (n, chunk) in bytes.chunks(MSS).enumerate() {
            let flags = if n + 1 == chunks { ACK | PSH } else { ACK };
            let f = frame(src, dst, src.wire_seq(), dst.wire_seq(), flags, chunk, MSS);
            self.queue.push_back(Packet {
                ts_us,
                frame: f,
                plain_len: 0,
            });
            src.shift = src.shift.wrapping_add(chunk.len() as u32);
        }
        let ack = frame(dst, src, dst.wire_seq(), src.wire_seq(), ACK, &[], MSS);
        self.queue.push_back(Packet {
            ts_us,
            frame: ack,
            plain_len: 0,
        });
    }

    /// The TLS handshake, between `from_us` and the first request 200 µs or more later.
    pub fn tls_handshake(&mut self, from_us: u64) {
        let Some(hs) = self.tls.as_mut().and_then(|t| t.handshake.take()) else {
            return;
        };
        self.send_tls_only(true, from_us, &hs.client_hello);
        self.send_tls_only(false, from_us + 40, &hs.server_flight);
        self.send_tls_only(true, from_us + 90, &hs.client_finished);
    }

    /// close_notify before a side's FIN, once the handshake is done.
    pub fn tls_close_notify(&mut self, from_client: bool) {
        let alert = match self.tls.as_mut() {
            Some(t) if t.handshake.is_none() => t.close_notify(from_client),
            _ => return,
        };
        self.send_tls_only(from_client, self.now_us, &alert);
    }
}
