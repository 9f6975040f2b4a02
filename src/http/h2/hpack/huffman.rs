//! Huffman-coded string literals (RFC 7541 5.2), decoded four bits at a time.
//!
//! The code of Appendix B is a complete prefix code over 257 symbols, so its tree has 256
//! internal nodes. Each (internal node, nibble) pair is precomputed once: the node the four
//! bits lead to, the symbol completed on the way (at most one: the shortest code has five
//! bits), and whether the walk met EOS. A string may end only on a node reached from the root
//! by fewer than eight 1 bits: the padding is a proper prefix of EOS, shorter than an octet.

use std::sync::LazyLock;

use super::huffman_codes::CODES;

/// Why a Huffman-coded literal is malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HuffmanError {
    /// The EOS symbol appeared in the string (RFC 7541 5.2: a decoding error).
    Eos,
    /// The string ended inside a code: padding longer than 7 bits or not all 1 bits.
    Padding,
}

/// One (node, nibble) transition.
#[derive(Debug, Clone, Copy, Default)]
struct Step {
    /// The internal node after the four bits (0 is the root).
    next: u8,
    /// The symbol completed, valid when `flags & EMIT`.
    symbol: u8,
    flags: u8,
}

const EMIT: u8 = 1;
/// The four bits complete EOS.
const FAIL: u8 = 2;
/// A string may end at `next`.
const END_OK: u8 = 4;

const NODES: usize = 256;
type Steps = [Step; NODES * 16];

static STEPS: LazyLock<Box<Steps>> = LazyLock::new(build_steps);

/// A branch of the code tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Child {
    Missing,
    Node(u8),
    Leaf(u16),
}

/// The code tree: `tree[node] = [child on 0, child on 1]`, node 0 the root.
fn build_tree() -> Vec<[Child; 2]> {
    let mut tree = vec![[Child::Missing; 2]];
    for (symbol, &(code, bits)) in (0u16..).zip(CODES.iter()) {
        let mut node = 0usize;
        for depth in (0..bits).rev() {
            let bit = usize::from((code >> depth) & 1 == 1);
            let fresh = u8::try_from(tree.len()).unwrap_or(u8::MAX);
            let Some(slot) = tree.get_mut(node).and_then(|c| c.get_mut(bit)) else {
                return tree;
            };
            if depth == 0 {
                *slot = Child::Leaf(symbol);
            } else if let Child::Node(next) = *slot {
                node = usize::from(next);
            } else {
                *slot = Child::Node(fresh);
                node = usize::from(fresh);
                tree.push([Child::Missing; 2]);
            }
        }
    }
    tree
}

/// Whether a string may end at each node: reached by 0 to 7 one bits from the root.
fn end_ok_nodes(tree: &[[Child; 2]]) -> [bool; NODES] {
    let mut ok = [false; NODES];
    let mut node = 0usize;
    for _ in 0..8 {
        if let Some(flag) = ok.get_mut(node) {
            *flag = true;
        }
        match tree.get(node).map(|c| c[1]) {
            Some(Child::Node(next)) => node = usize::from(next),
            _ => break,
        }
    }
    ok
}

fn build_steps() -> Box<Steps> {
    let tree = build_tree();
    let end_ok = end_ok_nodes(&tree);
    let mut steps = Box::new([Step::default(); NODES * 16]);
    for (index, step) in steps.iter_mut().enumerate() {
        let (mut node, nibble) = (index >> 4, index & 15);
        let mut out = Step::default();
        for shift in (0..4).rev() {
            let bit = (nibble >> shift) & 1;
            match tree.get(node).and_then(|c| c.get(bit)) {
                Some(Child::Node(next)) => node = usize::from(*next),
                Some(Child::Leaf(symbol)) => match u8::try_from(*symbol) {
                    Ok(byte) => {
                        out.symbol = byte;
                        out.flags |= EMIT;
                        node = 0;
                    }
                    Err(_) => {
                        out.flags |= FAIL;
                        break;
                    }
                },
                // A complete code has no missing branch; a typo in the table would show here.
                Some(Child::Missing) | None => {
                    out.flags |= FAIL;
                    break;
                }
            }
        }
        out.next = u8::try_from(node).unwrap_or(0);
        if end_ok.get(node).copied().unwrap_or(false) {
            out.flags |= END_OK;
        }
        *step = out;
    }
    steps
}

/// Appends the decoding of `src` to `out`.
pub(super) fn decode(src: &[u8], out: &mut Vec<u8>) -> Result<(), HuffmanError> {
    let steps: &Steps = &STEPS;
    out.reserve(src.len() + src.len() / 2 + 1);
    let mut node = 0u8;
    let mut end_ok = true;
    for &byte in src {
        for nibble in [byte >> 4, byte & 15] {
            let index = usize::from(node) << 4 | usize::from(nibble);
            let Some(step) = steps.get(index) else {
                return Err(HuffmanError::Padding);
            };
            if step.flags & FAIL != 0 {
                return Err(HuffmanError::Eos);
            }
            if step.flags & EMIT != 0 {
                out.push(step.symbol);
            }
            node = step.next;
            end_ok = step.flags & END_OK != 0;
        }
    }
    if end_ok {
        Ok(())
    } else {
        Err(HuffmanError::Padding)
    }
}

/// Huffman-codes `src` (for tests: the corpus generators and round trips).
#[cfg(test)]
pub(super) fn encode(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u64, 0u32);
    for &byte in src {
        let (code, len) = CODES[usize::from(byte)];
        acc = acc << len | u64::from(code);
        bits += u32::from(len);
        while bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    if bits > 0 {
        out.push(((acc << (8 - bits)) | (0xff >> bits)) as u8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_is_a_complete_prefix_code() {
        // Kraft's sum of a complete code is exactly 1: 2^-bits summed, scaled by 2^30.
        let sum: u64 = CODES.iter().map(|&(_, bits)| 1u64 << (30 - bits)).sum();
        assert_eq!(sum, 1 << 30);
        let tree = build_tree();
        assert_eq!(tree.len(), NODES);
        assert!(tree.iter().flatten().all(|c| *c != Child::Missing));
        // Every code fits its length; EOS is thirty 1 bits.
        assert!(
            CODES
                .iter()
                .all(|&(code, bits)| u64::from(code) < 1u64 << bits)
        );
        assert_eq!(CODES[256], (0x3fff_ffff, 30));
    }

    #[test]
    fn every_octet_round_trips() {
        let all: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        decode(&encode(&all), &mut out).unwrap();
        assert_eq!(out, all);
        for byte in 0..=255u8 {
            let mut out = Vec::new();
            decode(&encode(&[byte]), &mut out).unwrap();
            assert_eq!(out, [byte]);
        }
    }

    #[test]
    fn rfc_examples_decode() {
        // RFC 7541 C.4.1: "www.example.com".
        let wire = [
            0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
        ];
        let mut out = Vec::new();
        decode(&wire, &mut out).unwrap();
        assert_eq!(out, b"www.example.com");
        assert_eq!(encode(b"www.example.com"), wire);
    }

    #[test]
    fn padding_and_eos_rules() {
        let mut out = Vec::new();
        // Empty string: no padding at all.
        assert_eq!(decode(&[], &mut out), Ok(()));
        // '0' is 00000, then 3 one bits of padding: fine.
        assert_eq!(decode(&[0x07], &mut out), Ok(()));
        // Padding with a 0 bit in it.
        assert_eq!(decode(&[0x06], &mut out), Err(HuffmanError::Padding));
        // A whole octet of padding after a complete symbol: 8 bits is too many.
        assert_eq!(decode(&[0x07, 0xff], &mut out), Err(HuffmanError::Padding));
        // A lone 0xff: 8 one bits, too many for padding, not yet EOS.
        assert_eq!(decode(&[0xff], &mut out), Err(HuffmanError::Padding));
        // 32 one bits contain EOS (30 bits).
        assert_eq!(
            decode(&[0xff, 0xff, 0xff, 0xff], &mut out),
            Err(HuffmanError::Eos)
        );
        // EOS after a symbol, byte aligned at its end: '0' (00000) + EOS (30 ones) + 5 ones.
        assert_eq!(
            decode(&[0x07, 0xff, 0xff, 0xff, 0xff], &mut out),
            Err(HuffmanError::Eos)
        );
    }
}
