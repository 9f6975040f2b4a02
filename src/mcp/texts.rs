//! [`Texts`]: the strings that repeat from row to row (addresses, paths, session keys, user
//! agents, methods), each kept once and shared by the rows that carry it. A row then takes a
//! reference count instead of its own allocation, which the writer thread would free.

use crate::hashing::HashSet;
use arcstr::ArcStr;

/// Distinct strings kept; past it the set starts over (rows keep theirs), so memory follows
/// the live sessions, not the capture.
pub const MAX_TEXTS: usize = 4096;

#[derive(Debug, Default)]
pub struct Texts {
    known: HashSet<ArcStr>,
    /// Where [`Texts::concat`] joins its parts before the lookup.
    scratch: String,
}

impl Texts {
    /// The shared copy of `s`.
    pub fn get(&mut self, s: &str) -> ArcStr {
        if let Some(known) = self.known.get(s) {
            return known.clone();
        }
        if self.known.len() >= MAX_TEXTS {
            self.known.clear();
        }
        let text = ArcStr::from(s);
        self.known.insert(text.clone());
        text
    }

    /// The shared copy of `a` followed by `b`.
    pub fn concat(&mut self, a: &str, b: &str) -> ArcStr {
        let mut joined = std::mem::take(&mut self.scratch);
        joined.clear();
        joined.push_str(a);
        joined.push_str(b);
        let text = self.get(&joined);
        self.scratch = joined;
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_strings_share_one_copy_and_the_set_stays_bounded() {
        let mut texts = Texts::default();
        let a = texts.get("/mcp");
        let b = texts.get(&String::from("/mcp"));
        assert_eq!(a, "/mcp");
        assert!(ArcStr::ptr_eq(&a, &b));
        assert!(!ArcStr::ptr_eq(&a, &texts.get("/other")));
        for i in 0..MAX_TEXTS + 10 {
            let s = format!("ua-{i}");
            assert_eq!(texts.get(&s), s.as_str());
            assert!(texts.known.len() <= MAX_TEXTS);
        }
        // Started over: a fresh copy, equal in value.
        let c = texts.get("/mcp");
        assert_eq!(c, a);
        let joined = texts.concat("sid:", "abc");
        assert_eq!(joined, "sid:abc");
        assert!(ArcStr::ptr_eq(&joined, &texts.get("sid:abc")));
    }
}
