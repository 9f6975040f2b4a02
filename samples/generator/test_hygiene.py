#!/usr/bin/env python3
"""Tests of hygiene.judge (the generator's reading of report-schema 4b) on hand-made facts.

usage: python3 test_hygiene.py      (run by `make check`)
"""

import email.utils
import unittest

import hygiene
from hygiene import Attempt, Listing

T0 = 1_800_000_000.0
EP = "127.0.0.1:1/mcp"


def att(n, retry_of=None, *, tool="send_email", method="tools/call", outcome="HTTP_ERROR", status=503, t=None,
        end=None, ep=EP, **kw):
    t = T0 + n if t is None else t
    return Attempt(n=n, retry_of=retry_of, rpc_method=method, tool=tool, endpoint=ep, outcome=outcome,
                   http_status=status, t_req=t, t_end=t + 0.01 if end is None else end, **kw)


def listing(t, ep=EP, n=None, **tools):
    return Listing(t=t, endpoint=ep, tools=tools, n=n)


def findings(attempts, listings=(), **kw):
    hygiene.judge(attempts, list(listings), **kw)
    return {a.n: ";".join(a.findings) or None for a in attempts if a.retry_of is not None}


class UnsafeRetry(unittest.TestCase):
    def test_uncertain_endings(self):
        for outcome, status in (("NO_RESPONSE", None), ("STREAM_INCOMPLETE", 200), ("CANCELLED", 200),
                                ("HTTP_ERROR", 500), ("HTTP_ERROR", 502), ("HTTP_ERROR", 503), ("HTTP_ERROR", 504)):
            got = findings([att(1, outcome=outcome, status=status), att(2, 1, outcome="TOOL_SUCCESS", status=200)])
            self.assertEqual(got, {2: "unsafe_retry"}, (outcome, status))

    def test_certain_endings(self):
        for outcome, status in (("HTTP_ERROR", 429), ("HTTP_ERROR", 400), ("HTTP_ERROR", 401), ("HTTP_ERROR", 404),
                                ("MALFORMED_JSON", 200), ("JSONRPC_ERROR", 200), ("TOOL_ERROR", 200)):
            got = findings([att(1, outcome=outcome, status=status), att(2, 1)])
            self.assertNotIn("unsafe_retry", got[2] or "", (outcome, status))

    def test_declared_safe_by_read_only_or_idempotent(self):
        for ann, want in (({"readOnlyHint": True}, None), ({"idempotentHint": True}, None),
                          ({"readOnlyHint": False}, "unsafe_retry"), ({"destructiveHint": False}, "unsafe_retry"),
                          ({}, "unsafe_retry"), ({"readOnlyHint": "true"}, "unsafe_retry")):
            got = findings([att(2), att(3, 2)], [listing(T0 + 1, send_email=ann)])
            self.assertEqual(got, {3: want}, ann)

    def test_listed_only_after_the_retry_is_not_safe(self):
        got = findings([att(2), att(3, 2)], [listing(T0 + 3.5, send_email={"readOnlyHint": True})])
        self.assertEqual(got, {3: "unsafe_retry"})

    def test_never_listed_or_not_in_the_list(self):
        self.assertEqual(findings([att(2), att(3, 2)]), {3: "unsafe_retry"})
        got = findings([att(2), att(3, 2)], [listing(T0 + 1, get_weather={"readOnlyHint": True})])
        self.assertEqual(got, {3: "unsafe_retry"})

    def test_two_servers_with_a_tool_of_the_same_name(self):
        other = "127.0.0.1:2/mcp"
        lists = [listing(T0 + 1, send_email={"readOnlyHint": True}), listing(T0 + 1, ep=other, send_email={})]
        self.assertEqual(findings([att(2), att(3, 2)], lists), {3: None})
        self.assertEqual(findings([att(2, ep=other), att(3, 2, ep=other)], lists), {3: "unsafe_retry"})

    def test_a_later_list_replaces_the_earlier(self):
        lists = [listing(T0 + 0.5, send_email={"readOnlyHint": True}), listing(T0 + 1, send_email={})]
        self.assertEqual(findings([att(2), att(3, 2)], lists), {3: "unsafe_retry"})
        lists = [listing(T0 + 0.5, send_email={}), listing(T0 + 1, send_email={"idempotentHint": True})]
        self.assertEqual(findings([att(2), att(3, 2)], lists), {3: None})

    def test_only_tools_call(self):
        got = findings([att(1, method="resources/read", tool=None), att(2, 1, method="resources/read", tool=None)])
        self.assertEqual(got, {2: None})


class RetryAfter(unittest.TestCase):
    def test_seconds(self):
        first = att(1, tool="lookup", status=429, retry_after="2", end=T0 + 1.0)
        self.assertEqual(findings([first, att(2, 1, tool="lookup", t=T0 + 1.3)]), {2: "retry_after_ignored"})
        first = att(1, tool="lookup", status=429, retry_after="2", end=T0 + 1.0)
        self.assertEqual(findings([first, att(2, 1, tool="lookup", t=T0 + 3.3)]), {2: None})

    def test_http_date_with_and_without_a_date_header(self):
        when = email.utils.formatdate(T0 + 4, usegmt=True)
        date = email.utils.formatdate(T0 + 1, usegmt=True)
        for resp_date in (date, None):
            first = att(1, tool="lookup", status=503, retry_after=when, resp_date=resp_date, end=T0 + 1.0)
            self.assertEqual(findings([first, att(2, 1, tool="lookup", t=T0 + 2)], [listing(T0, lookup={"readOnlyHint": True})]),
                             {2: "retry_after_ignored"})
            first = att(1, tool="lookup", status=503, retry_after=when, resp_date=resp_date, end=T0 + 1.0)
            self.assertEqual(findings([first, att(2, 1, tool="lookup", t=T0 + 4.3)], [listing(T0, lookup={"readOnlyHint": True})]),
                             {2: None})

    def test_only_on_429_and_503(self):
        first = att(1, tool="lookup", status=500, retry_after="5")
        self.assertEqual(findings([first, att(2, 1, tool="lookup")], [listing(T0, lookup={"readOnlyHint": True})]), {2: None})

    def test_findings_in_table_order(self):
        first = att(1, status=503, retry_after="10", end=T0 + 1.0)
        self.assertEqual(findings([first, att(2, 1, t=T0 + 1.5)]), {2: "unsafe_retry;retry_after_ignored"})

    def test_a_decision_too_close_to_call_is_refused(self):
        first = att(1, tool="lookup", status=429, retry_after="2", end=T0 + 1.0)
        with self.assertRaises(hygiene.TooClose):
            findings([first, att(2, 1, tool="lookup", t=T0 + 3.01)])


class ParamsAndResponses(unittest.TestCase):
    def test_unchanged_after_invalid_params_on_any_status(self):
        for status, outcome in ((200, "JSONRPC_ERROR"), (400, "HTTP_ERROR")):
            a = att(1, tool="lookup", outcome=outcome, status=status, error_code=-32602, params={"name": "t", "arguments": "x"})
            b = att(2, 1, tool="lookup", params={"name": "t", "arguments": "x", "_meta": {"progressToken": 1}})
            self.assertEqual(findings([a, b]), {2: "unchanged_after_invalid_params"})

    def test_changed_params_or_another_code(self):
        a = att(1, tool="lookup", outcome="JSONRPC_ERROR", status=200, error_code=-32602, params={"arguments": "x"})
        self.assertEqual(findings([a, att(2, 1, tool="lookup", params={"arguments": {"text": "x"}})]), {2: None})
        a = att(1, tool="lookup", outcome="JSONRPC_ERROR", status=200, error_code=-32603, params={"arguments": "x"})
        self.assertEqual(findings([a, att(2, 1, tool="lookup", params={"arguments": "x"})]), {2: None})

    def test_replay_after_invalid_response(self):
        for outcome in ("MALFORMED_JSON", "INVALID_ENVELOPE", "INVALID_TOOL_RESULT"):
            got = findings([att(1, tool="lookup", outcome=outcome, status=200), att(2, 1, tool="lookup")])
            self.assertEqual(got, {2: "replay_after_invalid_response"}, outcome)
        self.assertEqual(findings([att(1, tool="lookup", outcome="TOOL_ERROR", status=200), att(2, 1, tool="lookup")]), {2: None})


class Backoff(unittest.TestCase):
    def chain(self, starts, ends=None, max_attempts=hygiene.MAX_ATTEMPTS):
        ends = ends or [s + 0.010 for s in starts]
        atts = [att(i + 1, i or None, tool="lookup", t=T0 + s, end=None if e is None else T0 + e)
                for i, (s, e) in enumerate(zip(starts, ends))]
        for a, e in zip(atts, ends):
            if e is None:
                a.t_end = None
        return findings(atts, [listing(T0 - 1, lookup={"readOnlyHint": True})], max_attempts=max_attempts)

    def test_fixed_delay(self):
        got = self.chain([0, 0.11, 0.22, 0.33, 0.44])
        self.assertEqual(got, {2: None, 3: "no_backoff", 4: "no_backoff;too_many_attempts",
                               5: "no_backoff;too_many_attempts"})

    def test_exponential(self):
        self.assertEqual(self.chain([0, 0.21, 0.62]), {2: None, 3: None})

    def test_both_gaps_under_50_ms_whatever_the_ratio(self):
        self.assertEqual(self.chain([0, 0.020, 0.060]), {2: None, 3: "no_backoff"})

    def test_earlier_attempt_never_ended(self):
        # gaps from the start of attempt 2 (never ended): 0.5 s, then 0.6 s: not 1.5 x
        self.assertEqual(self.chain([0, 0.51, 1.11], [0.01, None, 1.12]), {2: None, 3: "no_backoff"})

    def test_ratio_too_close_to_call(self):
        with self.assertRaises(hygiene.TooClose):
            self.chain([0, 0.11, 0.26])

    def test_max_attempts_option(self):
        self.assertEqual(self.chain([0, 0.2, 0.6, 1.4, 3.0], max_attempts=5), {2: None, 3: None, 4: None, 5: None})


class NeverFindings(unittest.TestCase):
    def test_continuation_and_resumption(self):
        a = att(1, outcome="NO_RESPONSE", status=None)
        self.assertEqual(findings([a, att(2, 1, continuation=True)]), {2: None})
        a = att(1, outcome="STREAM_INCOMPLETE", status=200)
        self.assertEqual(findings([a, att(2, 1, method=None, tool=None, resumption=True)]), {2: None})

    def test_first_attempts(self):
        a = att(1, outcome="NO_RESPONSE", status=None)
        hygiene.judge([a], [])
        self.assertEqual(a.findings, [])


if __name__ == "__main__":
    unittest.main()
