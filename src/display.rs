//! Capture-supplied text shown on one line (terminal tables, retry evidence): control
//! characters escaped, so they are shown and never interpreted (escape sequences, newlines),
//! and long text cut with `…`.

/// How a control character is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// Rust's escapes: `\n`, `\t`, `\u{1b}`.
    Rust,
    /// `\xHH`.
    Hex,
}

/// Where long text is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// After this many characters of the text, `…` after them.
    Text(usize),
    /// At this many characters shown (escapes counted), `…` included.
    Shown(usize),
}

/// `text` made safe for one line: control characters escaped by `escape`, cut by `cut`.
pub fn clip(text: &str, escape: Escape, cut: Cut) -> String {
    let mut out = String::new();
    let mut shown = 0usize;
    for (n, c) in text.chars().enumerate() {
        if let Cut::Text(max) = cut
            && n >= max
        {
            out.push('…');
            break;
        }
        let before = out.len();
        match (c.is_control(), escape) {
            (false, _) => out.push(c),
            (true, Escape::Rust) => out.extend(c.escape_default()),
            (true, Escape::Hex) => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
        }
        if let Cut::Shown(max) = cut {
            shown = shown.saturating_add(out.get(before..).map_or(0, |s| s.chars().count()));
            if shown > max {
                let end = out
                    .char_indices()
                    .nth(max.saturating_sub(1))
                    .map_or(out.len(), |(i, _)| i);
                out.truncate(end);
                out.push('…');
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cut_keeps_that_many_characters_of_the_text() {
        assert_eq!(clip("abcdef", Escape::Rust, Cut::Text(3)), "abc…");
        assert_eq!(clip("abc", Escape::Rust, Cut::Text(3)), "abc");
        assert_eq!(
            clip("a\nb\u{7}", Escape::Rust, Cut::Text(80)),
            "a\\nb\\u{7}"
        );
        assert_eq!(clip("\n\nx", Escape::Rust, Cut::Text(2)), "\\n\\n…");
    }

    #[test]
    fn shown_cut_counts_escapes_and_the_ellipsis() {
        assert_eq!(clip("\u{1b}[31m", Escape::Hex, Cut::Shown(50)), "\\x1b[31m");
        assert_eq!(clip("abcdef", Escape::Hex, Cut::Shown(6)), "abcdef");
        assert_eq!(clip("abcdefg", Escape::Hex, Cut::Shown(6)), "abcde…");
        assert_eq!(clip("ab\u{1b}", Escape::Hex, Cut::Shown(4)), "ab\\…");
        assert_eq!(clip("ab", Escape::Hex, Cut::Shown(0)), "…");
        assert_eq!(clip("", Escape::Hex, Cut::Shown(0)), "");
    }
}
