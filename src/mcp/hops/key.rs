//! What two copies of one message share (report-schema.md section 4c): the method and the
//! params as section 4 compares them, a `tools/call`'s tool name without a gateway's prefix;
//! for rows without params, the kind and the session id.

use crate::mcp::{Exchange, Kind};
use std::hash::{BuildHasher, Hash, Hasher};

/// Separators gateways put between a server's prefix and a tool name.
const PREFIX_SEPARATORS: &[&str] = &["__", ".", "/"];

/// `create_issue` for `github__create_issue`, `github.create_issue`, `github/create_issue`
/// and `create_issue`.
pub fn bare_tool_name(name: &str) -> &str {
    PREFIX_SEPARATORS
        .iter()
        .filter_map(|sep| name.rfind(sep).map(|at| at.saturating_add(sep.len())))
        .max()
        .and_then(|at| name.get(at..))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(name)
}

/// The key equal copies share; `None` for a row that is never linked.
pub(super) fn copy_key(row: &Exchange) -> Option<u64> {
    // A fixed seed: keys only meet keys of the same run.
    let mut h = foldhash::fast::FixedState::with_seed(0x6d63_702d_686f_7073).build_hasher();
    match row.kind {
        Kind::Request | Kind::Notification => {
            let method = row.rpc_method.as_deref()?;
            method.hash(&mut h);
            let inf = &row.inference;
            match (&row.tool_name, inf.params_fingerprint_unnamed) {
                (Some(tool), Some(unnamed)) if method == "tools/call" => {
                    bare_tool_name(tool).hash(&mut h);
                    unnamed.hash(&mut h);
                }
                _ => inf.params_fingerprint.hash(&mut h),
            }
        }
        Kind::Stream | Kind::SessionEnd | Kind::Http => {
            let sid = row.session_id.as_deref()?;
            row.kind.hash(&mut h);
            row.http_method.as_str().hash(&mut h);
            sid.hash(&mut h);
        }
        // A client's answer to a server request carries the gateway's renumbered id: nothing
        // but its body would tell, and that holds the id.
        Kind::Response => return None,
    }
    Some(h.finish())
}
