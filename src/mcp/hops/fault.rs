//! Where a call's failure arose (report-schema.md section 4c): follow the copies of the call
//! upstream, each time through the last copy (a gateway's final attempt), and stop at the
//! first row whose copy succeeded or was given up by the gateway, or that has no copy: the
//! failure arose at that row's server.

use super::Held;
use super::evidence::{self, Stop};
use crate::mcp::retry::is_success_outcome;
use crate::mcp::{Exchange, Outcome};
use std::collections::VecDeque;

/// The row failed in the sense of section 4c (anything but a success or an open stream).
pub(super) fn failed(row: &Exchange) -> bool {
    row.outcome.is_failure() && !is_success_outcome(row.outcome)
}

/// Its client side (a gateway) ended it before the response was complete.
fn given_up(row: &Exchange) -> bool {
    row.inference.client_gave_up || row.outcome == Outcome::Cancelled
}

fn row_at(held: &VecDeque<Held>, i: usize) -> Option<&Exchange> {
    held.get(i).map(|h| &*h.row)
}

/// Where the held row with `exchange_id` `id` is.
pub(super) fn position(held: &VecDeque<Held>, id: u64) -> Option<usize> {
    held.binary_search_by_key(&id, |h| h.id).ok()
}

fn last_copy(held: &VecDeque<Held>, i: usize) -> Option<usize> {
    position(held, *held.get(i)?.copies.last()?)
}

/// The row (index) the failure of row `i` arose at, and why the walk stopped there.
pub(super) fn walk(held: &VecDeque<Held>, i: usize) -> (usize, Stop) {
    let mut c = i;
    loop {
        let Some(d) = last_copy(held, c) else {
            return (c, Stop::NoCopy);
        };
        let Some(copy) = row_at(held, d) else {
            return (c, Stop::NoCopy);
        };
        if !failed(copy) {
            return (c, Stop::CopySucceeded(d));
        }
        if given_up(copy) {
            return (c, Stop::CopyGivenUp(d));
        }
        c = d;
    }
}

/// Writes `fault_hop`, the failure's evidence and `translated` on the failed rows of the call
/// whose hop-1 row is the front of `held`, and marks every row of it with its gateway.
pub(super) fn settle_chain(held: &mut VecDeque<Held>) {
    let Some(gateway) = held.front().map(|h| h.row.server_addr.clone()) else {
        return;
    };
    let mut members = vec![0];
    let mut at = 0;
    while let Some(&i) = members.get(at) {
        at = at.saturating_add(1);
        let copies: Vec<usize> = held.get(i).map_or_else(Vec::new, |h| {
            h.copies
                .iter()
                .filter_map(|&id| position(held, id))
                .collect()
        });
        members.extend(copies);
    }
    for &i in &members {
        if let Some(h) = held.get_mut(i) {
            h.row.inference.gateway = Some(gateway.clone());
        }
    }
    let span = |r: &Exchange| r.ts_response.map(|t| t.saturating_sub(r.ts_request));
    let added = last_copy(held, 0)
        .and_then(|c| held.get(c))
        .and_then(|c| span(&c.row))
        .zip(held.front().and_then(|h| span(&h.row)))
        .map(|(copy, call)| call.saturating_sub(copy));
    if let Some(h) = held.front_mut() {
        h.row.inference.gateway_added_us = added;
    }
    assign(held, 0, 0);
}

/// Gives the failed rows on the path of last copies from row `i` the hop the walk from `i`
/// stops at; each earlier copy (a gateway's failed attempt) starts a walk of its own.
fn assign(held: &mut VecDeque<Held>, i: usize, depth: usize) {
    // A chain is as deep as its hops (u8); the bound only guards the recursion.
    if depth > usize::from(u8::MAX) {
        return;
    }
    let (stop_at, why) = walk(held, i);
    let Some(fault) = row_at(held, stop_at).map(|r| (r.hop.0, r.outcome, r.exchange_id)) else {
        return;
    };
    let told = evidence::failure(held, stop_at, why);
    let mut x = Some(i);
    while let Some(xi) = x {
        let earlier: Vec<usize> = held.get(xi).map_or_else(Vec::new, |h| {
            let n = h.copies.len().saturating_sub(1);
            h.copies
                .iter()
                .take(n)
                .filter_map(|&id| position(held, id))
                .collect()
        });
        for e in earlier {
            assign(held, e, depth.saturating_add(1));
        }
        if let Some(h) = held.get_mut(xi)
            && failed(&h.row)
        {
            let row = &mut h.row;
            row.fault_hop = Some(fault.0);
            row.inference.translated = row.outcome != fault.1;
            let mut text = told.clone();
            if row.inference.translated {
                text.push_str("; ");
                text.push_str(&evidence::translated(
                    row.outcome,
                    fault.1,
                    fault.0,
                    fault.2,
                ));
            }
            evidence::append(&mut row.hop_evidence, &text);
        }
        x = last_copy(held, xi);
    }
}
