//! HPACK header block decoding (RFC 7541), one [`Decoder`] per direction of a connection.
//!
//! Names and values are bytes, as on the wire. Never panics: every malformation is an
//! [`HpackError`], after which the decoder refuses further blocks (its table may no longer
//! match the encoder's, and a wrong table would decode wrong headers silently). A header list
//! larger than the caller's bound stops emitting but keeps the table in step.
//!
//! Memory: the dynamic table holds at most `max_table_size` bytes by the size rule; the scratch
//! buffers for Huffman-coded literals hold at most one literal of the current block. A caller
//! may give a smaller ceiling than the peer advertised (a peer may advertise up to 2^32 - 1):
//! an encoder that uses more then fails with `SizeUpdateTooLarge` or `BadIndex`, never with
//! wrong fields, since the entries kept are the newest ones on both sides.
//!
//! ```text
//! mod.rs            the decoder: representations, integers, string literals, size updates
//! table.rs          static table (Appendix A) and the dynamic table with its eviction
//! huffman.rs        Huffman literals, four bits at a time through a precomputed table
//! huffman_codes.rs  the code of Appendix B
//! tests*.rs         Appendix C, the story corpora, hostile input, round trips against a model
//! ```

mod huffman;
mod huffman_codes;
mod table;
#[cfg(test)]
mod tests;

use crate::anomaly::Anomaly;
use table::{DynamicTable, ENTRY_OVERHEAD};

/// Why a header block could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HpackError {
    /// The decoded header list passed the caller's bound; the block was still decoded to its
    /// end, so the decoder can go on.
    #[error("decoded header list larger than the limit")]
    ListTooLarge,
    /// An earlier block failed: the table state is unknown, nothing more is decoded.
    #[error("an earlier header block failed; this direction's headers cannot be decoded")]
    Broken,
    /// Index 0, or an index past the static and dynamic tables.
    #[error("header index not in the tables")]
    BadIndex,
    /// An integer longer than the decoder accepts (more than 32 bits of value).
    #[error("HPACK integer too large")]
    IntegerOverflow,
    /// The block ends inside a representation (an integer or a string literal).
    #[error("header block ends inside a field")]
    Truncated,
    /// A Huffman-coded literal contains the EOS symbol.
    #[error("Huffman string contains EOS")]
    HuffmanEos,
    /// A Huffman-coded literal's padding is longer than 7 bits or not all 1 bits.
    #[error("Huffman string badly padded")]
    HuffmanPadding,
    /// A dynamic table size update above the decoding side's SETTINGS_HEADER_TABLE_SIZE.
    #[error("dynamic table size update above the advertised maximum")]
    SizeUpdateTooLarge,
    /// A dynamic table size update after a field of the block.
    #[error("dynamic table size update after a header field")]
    SizeUpdateNotAtStart,
    /// The advertised maximum fell below the table's size and the next block did not start
    /// with the size update RFC 7541 4.2 requires.
    #[error("required dynamic table size update missing")]
    SizeUpdateMissing,
}

impl HpackError {
    /// The anomaly name this error is counted under.
    pub fn anomaly(self) -> Anomaly {
        match self {
            HpackError::ListTooLarge => Anomaly::H2HpackListTooLarge,
            HpackError::Broken => Anomaly::H2HpackBroken,
            HpackError::BadIndex => Anomaly::H2HpackBadIndex,
            HpackError::IntegerOverflow => Anomaly::H2HpackIntegerOverflow,
            HpackError::Truncated => Anomaly::H2HpackTruncated,
            HpackError::HuffmanEos => Anomaly::H2HpackHuffmanEos,
            HpackError::HuffmanPadding => Anomaly::H2HpackHuffmanPadding,
            HpackError::SizeUpdateTooLarge => Anomaly::H2HpackSizeUpdateTooLarge,
            HpackError::SizeUpdateNotAtStart => Anomaly::H2HpackSizeUpdateNotAtStart,
            HpackError::SizeUpdateMissing => Anomaly::H2HpackSizeUpdateMissing,
        }
    }
}

impl From<huffman::HuffmanError> for HpackError {
    fn from(e: huffman::HuffmanError) -> HpackError {
        match e {
            huffman::HuffmanError::Eos => HpackError::HuffmanEos,
            huffman::HuffmanError::Padding => HpackError::HuffmanPadding,
        }
    }
}

/// Largest integer value accepted: indices, lengths and sizes all fit in 32 bits.
const INTEGER_MAX: u64 = u32::MAX as u64;

/// One decoder per direction of a connection.
#[derive(Debug)]
pub struct Decoder {
    table: DynamicTable,
    /// The decoding side's SETTINGS_HEADER_TABLE_SIZE: the ceiling for size updates.
    max_table_size: usize,
    max_list_size: usize,
    /// The ceiling fell below the table's capacity: the next block must start with an update.
    update_required: bool,
    broken: bool,
    /// Huffman-decoded literals of the field being decoded.
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

impl Decoder {
    /// `max_table_size`: the SETTINGS_HEADER_TABLE_SIZE the decoding side advertised (4096 until
    /// its SETTINGS say otherwise). `max_list_size`: most decoded header-list bytes (RFC 7541
    /// size rule: name + value + 32 per field) emitted for one block.
    pub fn new(max_table_size: usize, max_list_size: usize) -> Decoder {
        Decoder {
            table: DynamicTable::new(max_table_size),
            max_table_size,
            max_list_size,
            update_required: false,
            broken: false,
            name_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }

    /// The decoding side's SETTINGS_HEADER_TABLE_SIZE changed (acknowledged): the ceiling for
    /// dynamic table size updates.
    pub fn set_max_table_size(&mut self, n: usize) {
        self.max_table_size = n;
        if n < self.table.capacity() {
            // Any update the encoder must now send evicts at least down to `n`.
            self.table.set_capacity(n);
            self.update_required = true;
        }
    }

    /// Decodes one complete header block (HEADERS + CONTINUATION fragments concatenated),
    /// calling `emit(name, value)` for each field in order. Names and values are bytes.
    /// On a list larger than `max_list_size` it stops emitting but still decodes the rest of the
    /// block so the dynamic table stays in step, and returns Err(HpackError::ListTooLarge).
    /// Any other error leaves the decoder's table state unknown: the caller stops decoding that
    /// direction (`is_broken()` is then true and every later call returns Err(Broken)).
    pub fn decode(
        &mut self,
        block: &[u8],
        emit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        if self.broken {
            return Err(HpackError::Broken);
        }
        match self.decode_block(block, emit) {
            Ok(false) => Ok(()),
            Ok(true) => Err(HpackError::ListTooLarge),
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }

    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Dynamic table bytes held now (for tests and limits).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// Decodes `block`; `Ok(true)` when the list passed `max_list_size`.
    fn decode_block(
        &mut self,
        mut block: &[u8],
        emit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<bool, HpackError> {
        let max_list_size = self.max_list_size;
        let mut list_size = 0usize;
        let mut over = false;
        let mut at_start = true;
        while let Some(&first) = block.first() {
            if first & 0xe0 == 0x20 {
                // 001xxxxx: dynamic table size update (RFC 7541 6.3).
                if !at_start {
                    return Err(HpackError::SizeUpdateNotAtStart);
                }
                let size = integer(&mut block, 5)?;
                if size > self.max_table_size {
                    return Err(HpackError::SizeUpdateTooLarge);
                }
                self.table.set_capacity(size);
                self.update_required = false;
                continue;
            }
            if at_start && self.update_required {
                return Err(HpackError::SizeUpdateMissing);
            }
            at_start = false;
            let Decoder {
                table,
                name_buf,
                value_buf,
                ..
            } = self;
            let mut put = |name: &[u8], value: &[u8]| {
                list_size = list_size.saturating_add(name.len() + value.len() + ENTRY_OVERHEAD);
                if list_size > max_list_size {
                    over = true;
                }
                if !over {
                    emit(name, value);
                }
            };
            if first & 0x80 != 0 {
                // 1xxxxxxx: indexed field (6.1).
                let index = integer(&mut block, 7)?;
                let (name, value) = table.field(index).ok_or(HpackError::BadIndex)?;
                put(name, value);
                continue;
            }
            // Literals: 01xxxxxx with indexing (6.2.1), 0000xxxx without (6.2.2),
            // 0001xxxx never indexed (6.2.3).
            let (indexing, prefix) = if first & 0x40 != 0 {
                (true, 6)
            } else {
                (false, 4)
            };
            let index = integer(&mut block, prefix)?;
            if index == 0 {
                let name = string(&mut block, name_buf)?;
                let value = string(&mut block, value_buf)?;
                put(name, value);
                if indexing {
                    table.insert(name, value);
                }
            } else {
                let (name, _) = table.field(index).ok_or(HpackError::BadIndex)?;
                let value = string(&mut block, value_buf)?;
                put(name, value);
                if indexing {
                    // The name may live in an entry the insertion evicts: copy it out first.
                    name_buf.clear();
                    name_buf.extend_from_slice(name);
                    table.insert(name_buf, value);
                }
            }
        }
        Ok(over)
    }
}

/// Reads an integer with an `prefix_bits`-bit prefix (RFC 7541 5.1), advancing `block`.
fn integer(block: &mut &[u8], prefix_bits: u32) -> Result<usize, HpackError> {
    let mask = (1u8 << prefix_bits) - 1;
    let (&first, mut rest) = block.split_first().ok_or(HpackError::Truncated)?;
    let mut value = u64::from(first & mask);
    if value == u64::from(mask) {
        let mut shift = 0u32;
        loop {
            let (&byte, after) = rest.split_first().ok_or(HpackError::Truncated)?;
            rest = after;
            if shift > 28 {
                return Err(HpackError::IntegerOverflow);
            }
            value += u64::from(byte & 0x7f) << shift;
            if value > INTEGER_MAX {
                return Err(HpackError::IntegerOverflow);
            }
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
    }
    *block = rest;
    usize::try_from(value).map_err(|_| HpackError::IntegerOverflow)
}

/// Reads a string literal (RFC 7541 5.2), advancing `block`: a raw one is borrowed from the
/// block, a Huffman-coded one is decoded into `buf`.
fn string<'b: 's, 's>(block: &mut &'b [u8], buf: &'s mut Vec<u8>) -> Result<&'s [u8], HpackError> {
    let huffman = block.first().is_some_and(|b| b & 0x80 != 0);
    let len = integer(block, 7)?;
    if len > block.len() {
        return Err(HpackError::Truncated);
    }
    let (raw, rest) = block.split_at(len);
    *block = rest;
    if !huffman {
        return Ok(raw);
    }
    buf.clear();
    huffman::decode(raw, buf)?;
    Ok(buf)
}
