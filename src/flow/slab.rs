//! Storage for the flow table: a slab of entries threaded on two intrusive
//! doubly-linked lists (open flows by recency, closed flows by closing
//! order). Moving an entry to the back of a list, removing it, and finding
//! the oldest are O(1), with no hashing and no stale entries to compact.
//!
//! Indices are only handed out by [`Slab::insert`]; a removed index may be
//! reused. Nothing here panics: unknown indices are ignored.

/// Which list an entry is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum List {
    Open,
    Closed,
}

#[derive(Debug)]
struct Node<T> {
    value: T,
    list: List,
    prev: Option<usize>,
    next: Option<usize>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Ends {
    head: Option<usize>,
    tail: Option<usize>,
    len: usize,
}

/// Invariant: every occupied node is on exactly the list named by its
/// `list`, and `prev`/`next` link the lists consistently from head to tail.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    nodes: Vec<Option<Node<T>>>,
    free: Vec<usize>,
    open: Ends,
    closed: Ends,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            nodes: Vec::new(),
            free: Vec::new(),
            open: Ends::default(),
            closed: Ends::default(),
        }
    }
}

impl<T> Slab<T> {
    fn ends(&mut self, list: List) -> &mut Ends {
        match list {
            List::Open => &mut self.open,
            List::Closed => &mut self.closed,
        }
    }

    /// Entries on `list`.
    pub fn len(&self, list: List) -> usize {
        match list {
            List::Open => self.open.len,
            List::Closed => self.closed.len,
        }
    }

    /// The oldest entry of `list`.
    pub fn front(&self, list: List) -> Option<usize> {
        match list {
            List::Open => self.open.head,
            List::Closed => self.closed.head,
        }
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        self.nodes.get(i)?.as_ref().map(|n| &n.value)
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.nodes.get_mut(i)?.as_mut().map(|n| &mut n.value)
    }

    /// Add `value` at the back of `list`; returns its index.
    pub fn insert(&mut self, value: T, list: List) -> usize {
        let node = Node {
            value,
            list,
            prev: None,
            next: None,
        };
        let i = match self.free.pop() {
            Some(i) if i < self.nodes.len() => {
                if let Some(slot) = self.nodes.get_mut(i) {
                    *slot = Some(node);
                }
                i
            }
            _ => {
                self.nodes.push(Some(node));
                self.nodes.len() - 1
            }
        };
        self.link_back(i, list);
        i
    }

    /// Remove entry `i`, returning its value.
    pub fn remove(&mut self, i: usize) -> Option<T> {
        self.unlink(i);
        let node = self.nodes.get_mut(i)?.take()?;
        self.free.push(i);
        Some(node.value)
    }

    /// Put entry `i` at the back of `list` (the most recent position).
    pub fn move_to_back(&mut self, i: usize, list: List) {
        if self.nodes.get(i).is_some_and(|n| n.is_some()) {
            self.unlink(i);
            self.link_back(i, list);
        }
    }

    /// Remove every entry; values in index order.
    pub fn drain(&mut self) -> Vec<T> {
        let values = std::mem::take(&mut self.nodes)
            .into_iter()
            .flatten()
            .map(|n| n.value)
            .collect();
        *self = Slab::default();
        values
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.nodes.iter().flatten().map(|n| &n.value)
    }

    fn link_back(&mut self, i: usize, list: List) {
        let old_tail = self.ends(list).tail;
        if let Some(Some(node)) = self.nodes.get_mut(i) {
            node.list = list;
            node.prev = old_tail;
            node.next = None;
        } else {
            return;
        }
        if let Some(Some(t)) = old_tail.and_then(|t| self.nodes.get_mut(t)) {
            t.next = Some(i);
        }
        let ends = self.ends(list);
        if ends.head.is_none() {
            ends.head = Some(i);
        }
        ends.tail = Some(i);
        ends.len = ends.len.saturating_add(1);
    }

    fn unlink(&mut self, i: usize) {
        let Some(Some(node)) = self.nodes.get_mut(i) else {
            return;
        };
        let (list, prev, next) = (node.list, node.prev.take(), node.next.take());
        match prev.and_then(|p| self.nodes.get_mut(p)) {
            Some(Some(p)) => p.next = next,
            _ => self.ends(list).head = next,
        }
        match next.and_then(|n| self.nodes.get_mut(n)) {
            Some(Some(n)) => n.prev = prev,
            _ => self.ends(list).tail = prev,
        }
        let ends = self.ends(list);
        ends.len = ends.len.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(s: &Slab<char>, list: List) -> String {
        let mut out = String::new();
        let mut at = s.front(list);
        while let Some(i) = at {
            let node = s.nodes[i].as_ref().unwrap();
            out.push(node.value);
            at = node.next;
        }
        out
    }

    #[test]
    fn lists_keep_recency_order() {
        let mut s = Slab::default();
        let a = s.insert('a', List::Open);
        let b = s.insert('b', List::Open);
        let c = s.insert('c', List::Open);
        assert_eq!(order(&s, List::Open), "abc");
        s.move_to_back(a, List::Open);
        assert_eq!(order(&s, List::Open), "bca");
        s.move_to_back(c, List::Closed);
        assert_eq!(
            (
                order(&s, List::Open).as_str(),
                order(&s, List::Closed).as_str()
            ),
            ("ba", "c")
        );
        assert_eq!(s.remove(b), Some('b'));
        assert_eq!(s.remove(b), None);
        assert_eq!((s.len(List::Open), s.len(List::Closed)), (1, 1));
        let d = s.insert('d', List::Open);
        assert_eq!(d, b, "freed slot reused");
        assert_eq!(order(&s, List::Open), "ad");
        s.move_to_back(99, List::Open);
        assert_eq!(s.drain(), vec!['a', 'd', 'c']);
        assert_eq!(s.front(List::Open), None);
    }
}
