//! The tool safety catalog (report-schema.md section 4b): what each server endpoint's
//! `tools/list` results said of each tool's `annotations` (mcp-wire.md 10d), kept as the
//! capture goes, so `unsafe_retry` can ask "was this tool declared safe before this attempt?".
//!
//! "Seen before an attempt" is exact: a listing counts for an attempt when its response was
//! complete (`ts_response`) strictly before the attempt's `ts_request`. A `tools/list` without
//! `params.cursor` starts a new listing for its endpoint, which replaces the earlier one from
//! its response time on; a page requested with a cursor adds its tools to the endpoint's
//! latest listing, each tool counting from its own page's response time. Rows reach the
//! catalog in `exchange_id` (request start) order, so every listing that completed before an
//! attempt started is in by the time the attempt is judged; the one listing before the latest
//! is kept for attempts that started before the latest completed. (A `tools/list` still open
//! a minute after it was sent is set aside by the analyzer and reaches the catalog when it
//! ends: attempts released before then are judged without it.)
//!
//! Bounded: at most [`LISTINGS_PER_ENDPOINT`] listings per endpoint, and
//! [`MAX_CATALOG_TOOLS`] entries in all (each listing costs one entry plus one per tool),
//! configurable. When full, the oldest listing of any endpoint is forgotten; a listing larger
//! than the whole limit is cut. Each tool dropped is counted (`mcp.tool_catalog_full`) and a
//! cut listing says so in the evidence. Tool names are kept as 128-bit fingerprints.

use crate::hashing::HashMap;
use crate::mcp::{Exchange, Kind};
use arcstr::ArcStr;
use serde_json::Value;
use std::collections::VecDeque;
use xxhash_rust::xxh3::xxh3_128;

/// Default bound on catalog entries (listings plus tools, over all endpoints).
pub const MAX_CATALOG_TOOLS: usize = 65_536;

/// Listings kept per endpoint: the latest, and the one it replaced (for attempts that started
/// before the latest completed).
pub const LISTINGS_PER_ENDPOINT: usize = 2;

/// Most tools read from one `tools/list` result (the rest are counted as dropped).
pub const MAX_TOOLS_PER_PAGE: usize = 65_536;

/// A tool's safety hints as listed; `None` when absent (or not a boolean), which means the
/// protocol default: `readOnlyHint` false, `idempotentHint` false, `destructiveHint` true.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolHints {
    pub read_only: Option<bool>,
    pub idempotent: Option<bool>,
    pub destructive: Option<bool>,
}

impl ToolHints {
    /// Declared safe to repeat: read-only or idempotent (section 4b).
    pub fn is_safe(&self) -> bool {
        self.read_only == Some(true) || self.idempotent == Some(true)
    }

    /// `readOnlyHint false (default), idempotentHint true, destructiveHint true (default)`.
    pub fn describe(&self) -> String {
        let one = |name: &str, v: Option<bool>, default: bool| match v {
            Some(b) => format!("{name} {b}"),
            None => format!("{name} {default} (default)"),
        };
        [
            one("readOnlyHint", self.read_only, false),
            one("idempotentHint", self.idempotent, false),
            one("destructiveHint", self.destructive, true),
        ]
        .join(", ")
    }
}

/// XXH3-128 of a tool name.
type NameFp = u128;

fn name_fp(name: &str) -> NameFp {
    xxh3_128(name.as_bytes())
}

/// The tools of one `tools/list` result (its `result` as response parsing cut it, see
/// [`crate::rpc::digest::slim_result`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolsPage {
    tools: Vec<(NameFp, ToolHints)>,
    /// Tools past [`MAX_TOOLS_PER_PAGE`], not read.
    dropped: u64,
}

impl ToolsPage {
    /// The page of a result with a `tools` array; `None` otherwise. Tools without a string
    /// `name` are skipped.
    pub fn from_result(result: &Value) -> Option<ToolsPage> {
        let tools = result.get("tools")?.as_array()?;
        let mut page = ToolsPage::default();
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            if page.tools.len() >= MAX_TOOLS_PER_PAGE {
                page.dropped = page.dropped.saturating_add(1);
                continue;
            }
            let a = tool.get("annotations");
            let hint = |k: &str| a.and_then(|a| a.get(k)).and_then(Value::as_bool);
            let hints = ToolHints {
                read_only: hint("readOnlyHint"),
                idempotent: hint("idempotentHint"),
                destructive: hint("destructiveHint"),
            };
            page.tools.push((name_fp(name), hints));
        }
        Some(page)
    }

    /// A page of named tools (tests).
    pub fn of<'a>(tools: impl IntoIterator<Item = (&'a str, ToolHints)>) -> ToolsPage {
        ToolsPage {
            tools: tools.into_iter().map(|(n, h)| (name_fp(n), h)).collect(),
            dropped: 0,
        }
    }
}

/// A tool in a listing: its hints, and the page that listed it.
#[derive(Debug, Clone, Copy)]
struct Listed {
    hints: ToolHints,
    /// `ts_response` of the page (µs).
    seen_us: i64,
    /// `exchange_id` of the page.
    page: u64,
}

#[derive(Debug)]
struct Listing {
    /// Catalog-wide serial, for eviction in creation order.
    serial: u64,
    /// `ts_response` of the first page (µs): from then on this listing is the endpoint's.
    start_us: i64,
    /// `exchange_id` of the first page.
    first_page: u64,
    tools: HashMap<NameFp, Listed>,
    /// Some of its tools were dropped at the catalog limit.
    cut: bool,
}

impl Listing {
    fn cost(&self) -> usize {
        self.tools.len().saturating_add(1)
    }
}

/// What the catalog says of a tool for one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolSafety {
    /// Listed by the `tools/list` exchange `page` with these hints.
    Listed { hints: ToolHints, page: u64 },
    /// The endpoint's latest listing before the attempt (first page `listing`) lacks it;
    /// `cut`: that listing was cut at the catalog limit.
    NotListed { listing: u64, cut: bool },
    /// No listing of the endpoint completed before the attempt.
    NeverListed,
}

/// Tool annotations per server endpoint (see the module doc).
#[derive(Debug)]
pub struct ToolCatalog {
    limit: usize,
    entries: usize,
    endpoints: HashMap<ArcStr, VecDeque<Listing>>,
    /// (endpoint, serial) of every listing, oldest first.
    order: VecDeque<(ArcStr, u64)>,
    next_serial: u64,
    /// Tools dropped at the limit (`mcp.tool_catalog_full`).
    dropped: u64,
}

impl ToolCatalog {
    /// A catalog of at most `limit` entries (at least one listing's worth is always allowed).
    pub fn with_limit(limit: usize) -> ToolCatalog {
        ToolCatalog {
            limit: limit.max(1),
            entries: 0,
            endpoints: HashMap::default(),
            order: VecDeque::new(),
            next_serial: 0,
            dropped: 0,
        }
    }

    /// Tools dropped so far at the limit.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Entries held now (listings plus tools).
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Takes a `tools/list` row's page, if it has one, into the catalog.
    pub fn observe(&mut self, row: &mut Exchange) {
        if row.rpc_method.as_deref() != Some("tools/list") || row.kind != Kind::Request {
            return;
        }
        let Some(page) = row.inference.tools_page.take() else {
            return;
        };
        let Some(ts) = row.ts_response else {
            return;
        };
        self.add_page(
            &row.inference.endpoint,
            row.exchange_id,
            ts,
            row.inference.list_cursor,
            &page,
        );
    }

    /// Adds a page answered at `ts` by exchange `id`: a new listing unless `continued`
    /// (requested with a cursor) and the endpoint has one.
    pub fn add_page(
        &mut self,
        endpoint: &ArcStr,
        id: u64,
        ts: i64,
        continued: bool,
        page: &ToolsPage,
    ) {
        self.dropped = self.dropped.saturating_add(page.dropped);
        let has_listing = self.endpoints.get(endpoint).is_some_and(|l| !l.is_empty());
        if !continued || !has_listing {
            self.start_listing(endpoint, id, ts);
        }
        for &(fp, hints) in &page.tools {
            let replaces = self
                .endpoints
                .get(endpoint)
                .and_then(|l| l.back())
                .is_some_and(|l| l.tools.contains_key(&fp));
            if !replaces && !self.make_room(endpoint) {
                self.dropped = self.dropped.saturating_add(1);
                if let Some(l) = self.endpoints.get_mut(endpoint).and_then(|l| l.back_mut()) {
                    l.cut = true;
                }
                continue;
            }
            if let Some(l) = self.endpoints.get_mut(endpoint).and_then(|l| l.back_mut()) {
                let listed = Listed {
                    hints,
                    seen_us: ts,
                    page: id,
                };
                if l.tools.insert(fp, listed).is_none() {
                    self.entries = self.entries.saturating_add(1);
                }
            }
        }
    }

    fn start_listing(&mut self, endpoint: &ArcStr, id: u64, ts: i64) {
        // Room for the listing itself; the endpoint's own listings may go too.
        while self.entries >= self.limit && self.evict_oldest(None) {}
        let serial = self.next_serial;
        self.next_serial = self.next_serial.wrapping_add(1);
        let listings = self.endpoints.entry(endpoint.clone()).or_default();
        listings.push_back(Listing {
            serial,
            start_us: ts,
            first_page: id,
            tools: HashMap::default(),
            cut: false,
        });
        self.entries = self.entries.saturating_add(1);
        let mut freed = 0usize;
        while listings.len() > LISTINGS_PER_ENDPOINT {
            if let Some(old) = listings.pop_front() {
                freed = freed.saturating_add(old.cost());
            }
        }
        self.entries = self.entries.saturating_sub(freed);
        self.order.push_back((endpoint.clone(), serial));
        // Listings replaced on their endpoint leave stale entries in `order`: drop them once
        // they outnumber the live ones (each endpoint holds at most two listings).
        if self.order.len() > self.entries.saturating_mul(2).saturating_add(1024) {
            let endpoints = &self.endpoints;
            self.order.retain(|(e, s)| {
                endpoints
                    .get(e)
                    .is_some_and(|l| l.iter().any(|l| l.serial == *s))
            });
        }
    }

    /// Room for one more tool in `endpoint`'s latest listing, forgetting the oldest listings
    /// (never that one); false when it alone fills the catalog.
    fn make_room(&mut self, endpoint: &ArcStr) -> bool {
        let keep = self
            .endpoints
            .get(endpoint)
            .and_then(|l| l.back())
            .map(|l| l.serial);
        while self.entries >= self.limit {
            if !self.evict_oldest(keep) {
                return false;
            }
        }
        true
    }

    /// Forgets the oldest listing other than `keep`; false when there is none.
    fn evict_oldest(&mut self, keep: Option<u64>) -> bool {
        let mut skipped = None;
        let mut evicted = false;
        while let Some((endpoint, serial)) = self.order.pop_front() {
            if Some(serial) == keep {
                skipped = Some((endpoint, serial));
                continue;
            }
            let Some(listings) = self.endpoints.get_mut(&endpoint) else {
                continue;
            };
            let Some(at) = listings.iter().position(|l| l.serial == serial) else {
                continue;
            };
            if let Some(old) = listings.remove(at) {
                self.entries = self.entries.saturating_sub(old.cost());
            }
            if listings.is_empty() {
                self.endpoints.remove(&endpoint);
            }
            evicted = true;
            break;
        }
        if let Some(s) = skipped {
            self.order.push_front(s);
        }
        evicted
    }

    /// What the listings of `endpoint` complete before `ts_request` say of `tool`.
    pub fn safety(&self, endpoint: &str, tool: &str, ts_request: i64) -> ToolSafety {
        let Some(listing) = self
            .endpoints
            .get(endpoint)
            .and_then(|l| l.iter().rev().find(|l| l.start_us < ts_request))
        else {
            return ToolSafety::NeverListed;
        };
        match listing.tools.get(&name_fp(tool)) {
            Some(t) if t.seen_us < ts_request => ToolSafety::Listed {
                hints: t.hints,
                page: t.page,
            },
            _ => ToolSafety::NotListed {
                listing: listing.first_page,
                cut: listing.cut,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAFE: ToolHints = ToolHints {
        read_only: Some(true),
        idempotent: None,
        destructive: None,
    };
    const IDEMPOTENT: ToolHints = ToolHints {
        read_only: None,
        idempotent: Some(true),
        destructive: Some(false),
    };

    fn ep(s: &str) -> ArcStr {
        ArcStr::from(s)
    }

    #[test]
    fn hints_and_their_defaults() {
        assert!(SAFE.is_safe());
        assert!(IDEMPOTENT.is_safe());
        assert!(!ToolHints::default().is_safe());
        let destructive_read_only_false = ToolHints {
            read_only: Some(false),
            idempotent: Some(false),
            destructive: Some(true),
        };
        assert!(!destructive_read_only_false.is_safe());
        assert_eq!(
            ToolHints::default().describe(),
            "readOnlyHint false (default), idempotentHint false (default), destructiveHint true (default)"
        );
        assert_eq!(
            IDEMPOTENT.describe(),
            "readOnlyHint false (default), idempotentHint true, destructiveHint false"
        );
    }

    #[test]
    fn a_page_reads_names_and_boolean_hints_only() {
        let result = serde_json::json!({"tools": [
            {"name": "get", "annotations": {"readOnlyHint": true}},
            {"name": "put", "annotations": {"idempotentHint": "yes", "destructiveHint": false}},
            {"annotations": {"readOnlyHint": true}},
            {"name": 7},
            "junk",
            {"name": "plain"}
        ]});
        let page = ToolsPage::from_result(&result).unwrap();
        let want = ToolsPage::of([
            ("get", SAFE),
            (
                "put",
                ToolHints {
                    destructive: Some(false),
                    ..ToolHints::default()
                },
            ),
            ("plain", ToolHints::default()),
        ]);
        assert_eq!(page, want);
        assert_eq!(
            ToolsPage::from_result(&serde_json::json!({"tools": {}})),
            None
        );
        assert_eq!(
            ToolsPage::from_result(&serde_json::json!({"content": []})),
            None
        );
    }

    #[test]
    fn seen_before_means_complete_before_the_attempt_started() {
        let mut c = ToolCatalog::with_limit(100);
        let a = ep("127.0.0.1:3000/mcp");
        c.add_page(&a, 3, 1_000, false, &ToolsPage::of([("get", SAFE)]));
        assert_eq!(c.safety(&a, "get", 999), ToolSafety::NeverListed);
        // Strictly before: an attempt starting the very microsecond the list completed did
        // not see it.
        assert_eq!(c.safety(&a, "get", 1_000), ToolSafety::NeverListed);
        assert_eq!(
            c.safety(&a, "get", 1_001),
            ToolSafety::Listed {
                hints: SAFE,
                page: 3
            }
        );
        assert_eq!(
            c.safety(&a, "put", 1_001),
            ToolSafety::NotListed {
                listing: 3,
                cut: false
            }
        );
    }

    #[test]
    fn a_later_listing_replaces_the_earlier_from_its_time_on() {
        let mut c = ToolCatalog::with_limit(100);
        let a = ep("a/mcp");
        c.add_page(&a, 1, 100, false, &ToolsPage::of([("t", SAFE)]));
        c.add_page(
            &a,
            5,
            500,
            false,
            &ToolsPage::of([("t", ToolHints::default())]),
        );
        let listed = |hints, page| ToolSafety::Listed { hints, page };
        assert_eq!(c.safety(&a, "t", 300), listed(SAFE, 1));
        assert_eq!(c.safety(&a, "t", 501), listed(ToolHints::default(), 5));
        // A third listing forgets the first.
        c.add_page(&a, 9, 900, false, &ToolsPage::of([]));
        assert_eq!(c.safety(&a, "t", 300), ToolSafety::NeverListed);
        assert_eq!(c.safety(&a, "t", 600), listed(ToolHints::default(), 5));
        assert_eq!(
            c.safety(&a, "t", 901),
            ToolSafety::NotListed {
                listing: 9,
                cut: false
            }
        );
        assert_eq!(c.entries(), 1 + 1 + 1);
        // A million re-listings of one endpoint keep the bookkeeping small.
        for i in 0..1_000_000u64 {
            c.add_page(
                &a,
                10 + i,
                1000 + i as i64,
                false,
                &ToolsPage::of([("t", SAFE)]),
            );
        }
        assert_eq!(c.entries(), 4);
        assert!(c.order.len() <= 2 * 4 + 1024 + 1, "{}", c.order.len());
    }

    #[test]
    fn cursor_pages_merge_each_tool_from_its_own_page() {
        let mut c = ToolCatalog::with_limit(100);
        let a = ep("a/mcp");
        c.add_page(&a, 1, 100, false, &ToolsPage::of([("one", SAFE)]));
        c.add_page(&a, 2, 200, true, &ToolsPage::of([("two", IDEMPOTENT)]));
        assert_eq!(
            c.safety(&a, "two", 150),
            ToolSafety::NotListed {
                listing: 1,
                cut: false
            }
        );
        assert_eq!(
            c.safety(&a, "two", 201),
            ToolSafety::Listed {
                hints: IDEMPOTENT,
                page: 2
            }
        );
        assert_eq!(
            c.safety(&a, "one", 201),
            ToolSafety::Listed {
                hints: SAFE,
                page: 1
            }
        );
        // A cursor page without any listing before it starts one.
        let b = ep("b/mcp");
        c.add_page(&b, 4, 400, true, &ToolsPage::of([("x", SAFE)]));
        assert!(matches!(c.safety(&b, "x", 401), ToolSafety::Listed { .. }));
    }

    #[test]
    fn endpoints_are_separate() {
        // Two servers with a tool of the same name and different annotations.
        let mut c = ToolCatalog::with_limit(100);
        let (a, b) = (ep("10.0.0.1:80/mcp"), ep("10.0.0.2:80/mcp"));
        c.add_page(&a, 1, 10, false, &ToolsPage::of([("send", SAFE)]));
        c.add_page(
            &b,
            2,
            20,
            false,
            &ToolsPage::of([("send", ToolHints::default())]),
        );
        assert!(
            matches!(c.safety(&a, "send", 30), ToolSafety::Listed { hints, .. } if hints.is_safe())
        );
        assert!(
            matches!(c.safety(&b, "send", 30), ToolSafety::Listed { hints, .. } if !hints.is_safe())
        );
        assert_eq!(
            c.safety("10.0.0.3:80/mcp", "send", 30),
            ToolSafety::NeverListed
        );
    }

    #[test]
    fn hostile_listings_stay_within_the_limit() {
        // Thousands of endpoints, each listing thousands of tools: the catalog never holds
        // more than its limit, forgets the oldest listings first and counts what it dropped.
        let limit = 1000;
        let mut c = ToolCatalog::with_limit(limit);
        let names: Vec<String> = (0..3000).map(|i| format!("tool{i}")).collect();
        let page = ToolsPage::of(names.iter().map(|n| (n.as_str(), SAFE)));
        for e in 0..200 {
            let endpoint = ep(&format!("10.0.{}.{}:80/mcp", e / 256, e % 256));
            c.add_page(&endpoint, e, e as i64 * 10, false, &page);
            assert!(c.entries() <= limit, "{} entries", c.entries());
        }
        // Each listing alone overflows: it is cut, and says so.
        assert!(c.dropped() >= 200 * (3000 - limit as u64));
        let last = ep("10.0.0.199:80/mcp");
        assert!(matches!(
            c.safety(&last, "tool2999", 5000),
            ToolSafety::NotListed { cut: true, .. }
        ));
        assert!(matches!(
            c.safety(&last, "tool0", 5000),
            ToolSafety::Listed { .. }
        ));
        // Only the newest endpoint survives; the others were forgotten.
        assert_eq!(
            c.safety("10.0.0.0:80/mcp", "tool0", 5000),
            ToolSafety::NeverListed
        );
        // Many small listings: old endpoints go, newer stay, the bound holds.
        let mut c = ToolCatalog::with_limit(limit);
        let small = ToolsPage::of([("a", SAFE), ("b", SAFE), ("c", SAFE)]);
        for e in 0..100_000u64 {
            let endpoint = ep(&format!("h{e}/mcp"));
            c.add_page(&endpoint, e, e as i64, false, &small);
        }
        assert!(c.entries() <= limit);
        assert_eq!(c.dropped(), 0);
        assert!(matches!(
            c.safety("h99999/mcp", "a", 1 << 40),
            ToolSafety::Listed { .. }
        ));
        assert_eq!(c.safety("h0/mcp", "a", 1 << 40), ToolSafety::NeverListed);
    }
}
