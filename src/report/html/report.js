"use strict";
// mcp-trace incident report: draws the page from the JSON data in #mcp-trace-data.
// Columns are read from the data's own schema, so any column of the tables is shown.
(function () {
  const D = JSON.parse(document.getElementById("mcp-trace-data").textContent);
  const STR = D.strings;
  const PAGE = 100; // table rows drawn at once
  const LIST_MAX = 100; // retry chains listed at once
  const DIAGRAM_MAX = 400; // exchanges drawn per sequence diagram

  function decode(cols, rows) {
    const strCols = [];
    cols.forEach((c, i) => { if (c.type === "str") strCols.push(i); });
    for (const r of rows) for (const i of strCols) if (r[i] !== null) r[i] = STR[r[i]];
    const idx = {};
    cols.forEach((c, i) => { idx[c.name] = i; });
    return idx;
  }
  const COLS = D.columns;
  const CI = decode(COLS, D.rows);
  const SCI = decode(D.session_columns, D.sessions);
  const ROWS = D.rows;
  const v = (r, name) => (CI[name] === undefined ? null : r[CI[name]]);
  const sv = (s, name) => (SCI[name] === undefined ? null : s[SCI[name]]);

  // Outcome colours; the name is always printed next to the colour.
  const COLOR = {
    TOOL_SUCCESS: "#2e9d4f", RPC_SUCCESS: "#5cbf6e", ACCEPTED: "#9fd3a8", STREAM_OPEN: "#8fb8c9",
    INPUT_REQUIRED: "#4c7fd1", TASK_CREATED: "#7aa5e8", CANCELLED: "#a3a3a3",
    NO_RESPONSE: "#b3261e", HTTP_ERROR: "#e0463a", UNEXPECTED_RESPONSE: "#e8833a",
    MALFORMED_JSON: "#d9622b", INVALID_ENVELOPE: "#c0502a", STREAM_INCOMPLETE: "#f0a830",
    JSONRPC_ERROR: "#e9b949", INVALID_TOOL_RESULT: "#b4479c", TOOL_ERROR: "#d35db8",
  };
  const OUT = {};
  D.outcomes.forEach((o, i) => { OUT[o.name] = Object.assign({ order: i }, o); });
  const color = (o) => COLOR[o] || "#777";
  const isFailure = (o) => (OUT[o] ? OUT[o].failure : true);
  const outcomeOrder = (o) => (OUT[o] ? OUT[o].order : 99);

  const esc = (s) => String(s).replace(/[&<>"']/g, (c) =>
    ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const pad = (n, w) => String(n).padStart(w, "0");
  function fmtTs(us) {
    if (us === null || us === undefined) return "";
    const d = new Date(Math.floor(us / 1000));
    const frac = pad(((us % 1e6) + 1e6) % 1e6, 6);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1, 2) + "-" + pad(d.getUTCDate(), 2) +
      "T" + pad(d.getUTCHours(), 2) + ":" + pad(d.getUTCMinutes(), 2) + ":" +
      pad(d.getUTCSeconds(), 2) + "." + frac + "Z";
  }
  function fmtDur(us) {
    const s = us / 1e6;
    if (s < 1) return (us / 1000).toFixed(1) + " ms";
    if (s < 120) return s.toFixed(2) + " s";
    if (s < 7200) return (s / 60).toFixed(1) + " min";
    return (s / 3600).toFixed(1) + " h";
  }
  const fmtBytes = (n) => (n >= 1e6 ? (n / 1e6).toFixed(1) + " MB" : n >= 1e3 ? (n / 1e3).toFixed(1) + " kB" : n + " B");
  function cellText(col, val) {
    if (val === null || val === undefined) return "";
    if (col.type === "timestamp") return fmtTs(val);
    return String(val);
  }
  const swatch = (o) => '<span class="outcome"><span class="sw" style="background:' + color(o) +
    '"></span>' + esc(o) + "</span>";
  const idLink = (id) => '<button class="link" data-open="' + esc(id) + '">#' + esc(id) + "</button>";
  const label = (r) => { const m = v(r, "rpc_method"); const t = v(r, "tool_name");
    return (m || v(r, "kind") || "") + (t ? " " + t : ""); };
  const end = (r) => (v(r, "ts_response") !== null ? v(r, "ts_response") : v(r, "ts_request"));

  const BY_ID = new Map();
  const BY_SESSION = new Map();
  // A gateway's copies by the row they copy (report-schema.md section 4c).
  const COPIES = new Map();
  for (const r of ROWS) {
    BY_ID.set(String(v(r, "exchange_id")), r);
    const from = v(r, "forwarded_from");
    if (from !== null) { if (!COPIES.has(from)) COPIES.set(from, []); COPIES.get(from).push(r); }
    const k = v(r, "session_key");
    if (!BY_SESSION.has(k)) BY_SESSION.set(k, []);
    BY_SESSION.get(k).push(r);
  }
  let T0 = Infinity, T1 = -Infinity;
  for (const r of ROWS) { T0 = Math.min(T0, v(r, "ts_request")); T1 = Math.max(T1, end(r)); }

  // What narrows the page: a time range (timeline) and the table's filters.
  const state = { t0: null, t1: null, outcome: "", method: "", tool: "", session: "", text: "",
    sort: "exchange_id", dir: 1, page: 0, sessionSort: "failures" };
  const inTime = (r) => state.t0 === null || (v(r, "ts_request") >= state.t0 && v(r, "ts_request") <= state.t1);
  const timeRows = () => ROWS.filter(inTime);

  const app = document.getElementById("app");
  app.innerHTML =
    '<section id="run"></section>' +
    '<section id="timeline"><h2>Timeline</h2><p class="muted no-print">Exchanges per time slice, by outcome. ' +
    'Click a bar or drag across the chart to narrow everything below to that time.</p>' +
    '<div id="tl-chart"></div><div class="controls"><span id="tl-range" class="mono"></span>' +
    '<button id="tl-clear" hidden>Show the whole capture</button></div></section>' +
    '<section id="failures"></section><section id="retries"></section><section id="latency"></section>' +
    '<section id="sessions"></section><section id="table"></section>' +
    '<aside id="details" hidden aria-label="Exchange details" tabindex="-1"></aside>';
  const $ = (id) => document.getElementById(id);

  // ---- the run ----
  function counts(obj) {
    if (!obj || typeof obj !== "object") return "";
    const keys = Object.keys(obj).filter((k) => obj[k]);
    if (!keys.length) return '<span class="muted">none</span>';
    return keys.map((k) => '<span class="badge">' + esc(k) + " " + esc(obj[k]) + "</span>").join(" ");
  }
  function drawRun() {
    const s = D.summary || {};
    const inputs = (s.inputs || []).map((i) => "<dd>" + esc(i.name) + " (" + esc(i.format || "?") + ", " +
      fmtBytes(i.bytes || 0) + (i.error ? ", error: " + esc(i.error) : "") + ")</dd>").join("");
    const span = ROWS.length ? fmtTs(T0) + " to " + fmtTs(T1) + " (" + fmtDur(T1 - T0) + ")" : "no exchanges";
    const mcp = s.mcp_exchanges || {};
    const outcomes = Object.keys(mcp).filter((o) => mcp[o]).sort((a, b) => outcomeOrder(a) - outcomeOrder(b))
      .map((o) => "<dt>" + swatch(o) + "</dt><dd>" + esc(mcp[o]) + (OUT[o] ? " (" + esc(OUT[o].layer) + ")" : "") + "</dd>").join("");
    const layers = (D.layers || []).map((l) => "<dt>" + esc(l) + "</dt><dd>" + esc((s.layers || {})[l] || 0) + "</dd>").join("");
    // Drops the capturing tool reported and the loss estimated from ACKs: unknown is never 0.
    const unknown = '<span class="muted">unknown</span>';
    const known = (v) => (v === null || v === undefined ? unknown : esc(v));
    const drops = s.capture_drops || {};
    const damage = [
      ["packets dropped by the capture", "kernel " + known(drops.kernel) + ", interface " + known(drops.interface)],
      ["capture loss (estimate)", s.capture_loss === null || s.capture_loss === undefined ? unknown :
        esc((100 * s.capture_loss).toFixed(2) + "% of TCP data")],
      ["packets skipped", counts(s.packets_skipped)],
      ["packets truncated", esc(s.packets_truncated || 0)],
      ["TCP gap bytes", esc(s.gap_bytes || 0)],
      ["TCP bytes unused", counts(s.tcp_bytes_unused)],
      ["HTTP messages skipped", counts(s.http_messages_skipped)],
      ["HTTP bytes skipped", esc(s.http_bytes_skipped || 0)],
      ["non-HTTP streams", esc(s.non_http_streams || 0)],
      ["anomalies", counts(s.anomalies)],
    ];
    if (s.tls_connections) damage.push(["TLS connections", counts(s.tls_connections)]);
    if (s.retry_findings) damage.push(["retry findings", counts(s.retry_findings)]);
    const filters = (D.filters || []).length ? "<p>Rows selected with <code>" + esc(D.filters.join(" ")) +
      "</code>; the run counts below cover every exchange.</p>" : "";
    const omitted = D.rows_omitted ? '<p class="banner">' + esc(D.rows_omitted) + " of " +
      esc(D.rows_kept + D.rows_omitted) + " selected exchanges are past --html-max-rows (" + esc(D.max_rows) +
      ") and are left out of this page; the exchanges table in Parquet (<code>-o out.parquet</code>) has them all.</p>" : "";
    $("run").innerHTML = "<h2>The run</h2>" + filters + omitted + '<div class="grid">' +
      '<div class="card"><h3>Inputs</h3><dl><dt>files</dt>' + (inputs || "<dd>none</dd>") +
      "<dt>time span</dt><dd>" + esc(span) + "</dd><dt>packets</dt><dd>" + esc(s.packets_total || 0) +
      " read, " + esc(s.packets_decoded || 0) + " decoded</dd><dt>TCP streams</dt><dd>" + esc(s.tcp_streams || 0) +
      "</dd><dt>HTTP exchanges</dt><dd>" + esc(s.http_exchanges || 0) + "</dd><dt>MCP exchanges</dt><dd>" +
      esc(s.mcp_exchanges_total || 0) + "</dd><dt>sessions</dt><dd>" + esc(s.sessions || 0) + "</dd></dl></div>" +
      '<div class="card"><h3>Outcomes</h3><dl>' + (outcomes || "<dd>none</dd>") + "</dl><h3>Layers</h3><dl>" + layers + "</dl></div>" +
      '<div class="card"><h3>What could not be analyzed</h3><dl>' +
      damage.map(([k, val]) => "<dt>" + esc(k) + "</dt><dd>" + val + "</dd>").join("") + "</dl></div></div>";
  }

  // ---- timeline ----
  const BINS = 100;
  let bins = [];
  function drawTimeline() {
    const W = 1000, H = 150, top = 8, bottom = 22;
    const box = $("tl-chart");
    if (!ROWS.length) { box.innerHTML = '<p class="muted">No exchanges.</p>'; return; }
    const span = Math.max(T1 - T0, 1);
    const width = span / BINS;
    bins = Array.from({ length: BINS }, (_, i) => ({ t0: T0 + i * width, t1: T0 + (i + 1) * width, n: 0, by: {} }));
    for (const r of ROWS) {
      const i = Math.min(BINS - 1, Math.floor((v(r, "ts_request") - T0) / width));
      const b = bins[i]; b.n++; const o = v(r, "outcome"); b.by[o] = (b.by[o] || 0) + 1;
    }
    const max = Math.max(1, ...bins.map((b) => b.n));
    const bw = W / BINS;
    let svg = '<svg viewBox="0 0 ' + W + " " + (H + bottom) + '" preserveAspectRatio="none" role="img" aria-label="Exchanges over time by outcome">';
    bins.forEach((b, i) => {
      let y = H;
      Object.keys(b.by).sort((p, q) => outcomeOrder(q) - outcomeOrder(p)).forEach((o) => {
        const h = ((H - top) * b.by[o]) / max;
        y -= h;
        svg += '<rect data-bin="' + i + '" x="' + (i * bw + 0.5).toFixed(1) + '" y="' + y.toFixed(1) + '" width="' +
          Math.max(bw - 1, 0.5).toFixed(1) + '" height="' + h.toFixed(1) + '" fill="' + color(o) + '"><title>' +
          esc(o + ": " + b.by[o] + " at " + fmtTs(Math.round(b.t0))) + "</title></rect>";
      });
    });
    svg += '<line x1="0" x2="' + W + '" y1="' + H + '" y2="' + H + '" stroke="#8a929c"/>';
    for (let k = 0; k <= 4; k++) {
      const x = (W * k) / 4;
      svg += '<text x="' + Math.min(Math.max(x, 2), W - 2) + '" y="' + (H + 16) + '" text-anchor="' +
        (k === 0 ? "start" : k === 4 ? "end" : "middle") + '">' + esc(fmtTs(Math.round(T0 + (span * k) / 4)).slice(11, 23)) + "</text>";
    }
    svg += '<rect class="brush" id="tl-brush" x="0" y="0" width="0" height="' + H + '" visibility="hidden"/></svg>';
    const present = Object.keys(ROWS.reduce((a, r) => { a[v(r, "outcome")] = 1; return a; }, {}))
      .sort((a, b) => outcomeOrder(a) - outcomeOrder(b));
    box.innerHTML = svg + '<div class="legend">' + present.map(swatch).join("") + "</div>";
    const el = box.querySelector("svg");
    const toT = (ev) => { const rc = el.getBoundingClientRect();
      return T0 + (Math.min(Math.max(ev.clientX - rc.left, 0), rc.width) / rc.width) * span; };
    let start = null, startX = 0;
    el.addEventListener("mousedown", (ev) => { start = toT(ev); startX = ev.clientX; ev.preventDefault(); });
    el.addEventListener("mousemove", (ev) => {
      if (start === null) return;
      const t = toT(ev); showBrush(Math.min(start, t), Math.max(start, t));
    });
    window.addEventListener("mouseup", (ev) => {
      if (start === null) return;
      const t = toT(ev); const s0 = start; start = null;
      if (Math.abs(ev.clientX - startX) < 3) {
        const b = bins[Math.min(BINS - 1, Math.floor((t - T0) / width))];
        setRange(b.t0, b.t1);
      } else setRange(Math.min(s0, t), Math.max(s0, t));
    });
    $("tl-clear").addEventListener("click", () => setRange(null, null));
  }
  function showBrush(a, b) {
    const brush = $("tl-brush"); if (!brush) return;
    if (a === null) { brush.setAttribute("visibility", "hidden"); return; }
    const span = Math.max(T1 - T0, 1);
    brush.setAttribute("x", ((1000 * (a - T0)) / span).toFixed(1));
    brush.setAttribute("width", Math.max((1000 * (b - a)) / span, 1).toFixed(1));
    brush.setAttribute("visibility", "visible");
  }
  function setRange(a, b) {
    state.t0 = a === null ? null : Math.floor(a);
    state.t1 = b === null ? null : Math.ceil(b);
    showBrush(state.t0, state.t1);
    $("tl-clear").hidden = state.t0 === null;
    $("tl-range").textContent = state.t0 === null ? "" : "Narrowed to " + fmtTs(state.t0) + " .. " + fmtTs(state.t1);
    state.page = 0;
    drawBelow();
  }

  // ---- failing tools and methods, retries, latency ----
  function drawFailures(rows) {
    const groups = new Map();
    for (const r of rows) {
      const key = (v(r, "rpc_method") || "(" + v(r, "kind") + ")") + "\u0000" + (v(r, "tool_name") || "");
      if (!groups.has(key)) groups.set(key, { m: key.split("\u0000")[0], t: key.split("\u0000")[1], n: 0, f: 0, by: {} });
      const g = groups.get(key); g.n++;
      const o = v(r, "outcome");
      if (isFailure(o)) { g.f++; g.by[o] = (g.by[o] || 0) + 1; }
    }
    const bad = [...groups.values()].filter((g) => g.f).sort((a, b) => b.f - a.f || (a.m < b.m ? -1 : 1));
    $("failures").innerHTML = "<h2>Failing tools and methods</h2>" + (bad.length ?
      '<div class="scroll"><table><thead><tr><th>method</th><th>tool</th><th>calls</th><th>failed</th><th>outcomes</th></tr></thead><tbody>' +
      bad.map((g) => "<tr><td>" + esc(g.m) + "</td><td>" + esc(g.t) + '</td><td class="num">' + g.n + '</td><td class="num">' + g.f +
        "</td><td>" + Object.keys(g.by).map((o) => swatch(o) + " " + g.by[o]).join(" &nbsp; ") + "</td></tr>").join("") +
      "</tbody></table></div>" : '<p class="muted">No failed exchange in this range.</p>');
  }
  function drawRetries(rows) {
    const chains = new Map();
    const root = (r) => { let cur = r; const seen = new Set();
      while (v(cur, "retry_of") !== null && BY_ID.has(String(v(cur, "retry_of"))) && !seen.has(cur)) {
        seen.add(cur); cur = BY_ID.get(String(v(cur, "retry_of"))); }
      return cur; };
    for (const r of rows) {
      if (v(r, "retry_of") === null) continue;
      const first = root(r);
      const k = String(v(first, "exchange_id"));
      if (!chains.has(k)) chains.set(k, [first]);
      chains.get(k).push(r);
    }
    const hasFindings = CI.retry_findings !== undefined;
    const all = [...chains.values()].sort((a, b) => v(a[0], "ts_request") - v(b[0], "ts_request"));
    const list = all.slice(0, LIST_MAX);
    const more = all.length > list.length ? '<p class="muted">First ' + list.length + " of " + all.length +
      " chains listed; narrow the time range to see the others, or sort the table by retry_of.</p>" : "";
    $("retries").innerHTML = "<h2>Retry chains (" + all.length + ")</h2>" + more + (list.length ?
      '<div class="scroll"><table><thead><tr><th>attempts</th><th>call</th><th>origins</th><th>outcomes, in order</th>' +
      (hasFindings ? "<th>findings</th>" : "") + "<th>evidence of the last attempt</th></tr></thead><tbody>" +
      list.map((c) => { const last = c[c.length - 1];
        const origins = [...new Set(c.slice(1).map((r) => v(r, "retry_origin")))];
        const findings = [...new Set(c.map((r) => v(r, "retry_findings")).filter((x) => x).join(";").split(";").filter((x) => x))];
        return "<tr><td>" + c.map((r) => idLink(v(r, "exchange_id"))).join(" &rarr; ") + "</td><td>" + esc(label(c[0])) + "</td><td>" +
          origins.map((o) => '<span class="badge">' + esc(o) + "</span>").join("") + "</td><td>" +
          c.map((r) => swatch(v(r, "outcome"))).join(" &rarr; ") + "</td>" +
          (hasFindings ? "<td>" + findings.map((f) => '<span class="badge bad">' + esc(f) + "</span>").join("") + "</td>" : "") +
          "<td>" + esc(v(last, "retry_evidence") || "") + "</td></tr>"; }).join("") +
      "</tbody></table></div>" : '<p class="muted">No retries in this range.</p>');
  }
  function pct(sorted, p) { return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]; }
  function drawLatency(rows) {
    const groups = new Map();
    for (const r of rows) {
      const l = v(r, "latency_ms"); if (l === null) continue;
      const k = v(r, "rpc_method") || "(" + v(r, "kind") + ")";
      if (!groups.has(k)) groups.set(k, []);
      groups.get(k).push(l);
    }
    const list = [...groups.entries()].map(([k, ls]) => [k, ls.sort((a, b) => a - b)]).sort((a, b) => b[1].length - a[1].length);
    const f = (x) => x.toFixed(1);
    $("latency").innerHTML = "<h2>Latency per method (ms)</h2>" + (list.length ?
      '<div class="scroll"><table><thead><tr><th>method</th><th>n</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr></thead><tbody>' +
      list.map(([k, ls]) => "<tr><td>" + esc(k) + '</td><td class="num">' + ls.length + '</td><td class="num">' + f(pct(ls, 50)) +
        '</td><td class="num">' + f(pct(ls, 90)) + '</td><td class="num">' + f(pct(ls, 99)) + '</td><td class="num">' + f(ls[ls.length - 1]) + "</td></tr>").join("") +
      "</tbody></table></div>" : '<p class="muted">No completed exchange in this range.</p>');
  }

  // ---- sessions ----
  function sessionFailures(s) {
    let n = 0;
    D.session_columns.forEach((c, i) => {
      if (!c.name.startsWith("n_")) return;
      const o = c.name.slice(2).toUpperCase();
      if (OUT[o] && OUT[o].failure) n += s[i] || 0;
    });
    return n;
  }
  function drawSessions() {
    const sessions = D.sessions.filter((s) => state.t0 === null ||
      (BY_SESSION.get(sv(s, "session_key")) || []).some(inTime));
    const sorters = {
      failures: (a, b) => sessionFailures(b) - sessionFailures(a) || sv(a, "first_ts") - sv(b, "first_ts"),
      first: (a, b) => sv(a, "first_ts") - sv(b, "first_ts"),
      requests: (a, b) => (sv(b, "requests") || 0) - (sv(a, "requests") || 0),
    };
    sessions.sort(sorters[state.sessionSort] || sorters.failures);
    const sec = $("sessions");
    const wasOpen = new Set([...sec.querySelectorAll("details.session[open]")].map((d) => d.dataset.sessionKey));
    sec.innerHTML = "<h2>Sessions (" + sessions.length + ")</h2>" +
      '<div class="controls no-print"><label>sort by<select id="sess-sort"><option value="failures">failures</option>' +
      '<option value="first">first seen</option><option value="requests">requests</option></select></label>' +
      '<button id="sess-open">Open all</button><button id="sess-close">Close all</button></div>' +
      sessions.map((s) => { const key = sv(s, "session_key"); const f = sessionFailures(s);
        return '<details class="session" data-session-key="' + esc(key) + '"><summary><span class="mono">' + esc(key) + "</span> " +
          '<span class="badge' + (f ? " bad" : "") + '">' + f + " failed</span>" +
          '<span class="badge">' + esc(sv(s, "requests")) + " requests</span>" +
          (SCI.exchanges !== undefined ? '<span class="badge">' + esc(sv(s, "exchanges")) + " exchanges</span>" : "") +
          '<span class="muted">' + esc([sv(s, "client_name"), sv(s, "client_version")].filter((x) => x).join(" ")) + " " +
          esc(sv(s, "transport") || "") + " " + esc(fmtTs(sv(s, "first_ts"))) + " .. " + esc(fmtTs(sv(s, "last_ts"))) +
          ", ended by " + esc(sv(s, "ended_by") || "?") + "</span></summary><div class=\"diagram\"></div></details>"; }).join("");
    const sel = $("sess-sort"); sel.value = state.sessionSort;
    sel.addEventListener("change", () => { state.sessionSort = sel.value; drawSessions(); });
    const all = () => sec.querySelectorAll("details.session");
    $("sess-open").addEventListener("click", () => all().forEach((d) => { d.open = true; }));
    $("sess-close").addEventListener("click", () => all().forEach((d) => { d.open = false; }));
    all().forEach((d) => { d.addEventListener("toggle", () => { if (d.open) drawDiagram(d); });
      if (wasOpen.has(d.dataset.sessionKey)) d.open = true; });
  }
  function drawDiagram(det) {
    const key = det.dataset.sessionKey;
    const srow = D.sessions.find((s) => sv(s, "session_key") === key);
    const all = (BY_SESSION.get(key) || []).filter(inTime);
    let rows = all.slice(0, DIAGRAM_MAX);
    // The copies a gateway made of these calls, on their own lifelines (one per hop).
    const seen = new Set(rows.map((r) => v(r, "exchange_id")));
    const queue = rows.slice();
    while (queue.length) {
      for (const c of COPIES.get(v(queue.shift(), "exchange_id")) || []) {
        if (!seen.has(v(c, "exchange_id"))) { seen.add(v(c, "exchange_id")); rows.push(c); queue.push(c); }
      }
    }
    rows.sort((a, b) => v(a, "exchange_id") - v(b, "exchange_id"));
    const hopOf = (r) => v(r, "hop") || 1;
    const lowHop = rows.reduce((m, r) => Math.min(m, hopOf(r)), 99);
    const topHop = rows.reduce((m, r) => Math.max(m, hopOf(r)), 1);
    const W = 1000, xc = 190, xs = 720, head = 40, step = 38;
    const lines = Math.max(1, topHop - Math.min(lowHop, topHop) + 1);
    const xAt = (k) => xc + (k * (xs - xc)) / lines;
    const names = [];
    for (let k = 0; k <= lines; k++) {
      names.push(k === 0 ? (lowHop > 1 ? "gateway" : "client") : k === lines ? "server" : "gateway" + (lines > 2 ? " " + k : ""));
    }
    const ypos = new Map();
    rows.forEach((r, i) => ypos.set(v(r, "exchange_id"), head + 16 + i * step));
    const H = head + 30 + rows.length * step + 30;
    const t0 = rows.length ? v(rows[0], "ts_request") : 0;
    let s = '<svg width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + " " + H + '" role="img" aria-label="Sequence diagram of session ' + esc(key) + '">' +
      '<defs><marker id="ah" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">' +
      '<path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>' +
      names.map((n, k) => '<rect class="actor" x="' + (xAt(k) - 60) + '" y="4" width="120" height="24" rx="4"/><text x="' + xAt(k) +
        '" y="20" text-anchor="middle" class="lifeline-name">' + esc(n) + "</text>" +
        '<line class="lifeline" x1="' + xAt(k) + '" x2="' + xAt(k) + '" y1="28" y2="' + (H - 24) + '"/>').join("");
    rows.forEach((r) => {
      const id = v(r, "exchange_id"); const y = ypos.get(id); const o = v(r, "outcome"); const c = color(o);
      const k = hopOf(r) - Math.min(lowHop, topHop);
      const xc = xAt(k), xs = xAt(k + 1);
      const copyOf = v(r, "forwarded_from");
      const fault = v(r, "fault_hop");
      s += '<g class="arrow" data-open="' + esc(id) + '" tabindex="0" role="button" aria-label="exchange ' + esc(id) + " " + esc(o) + '">' +
        '<text x="8" y="' + (y + 4) + '" fill="#5b6470">+' + esc(fmtDur(v(r, "ts_request") - t0)) + "</text>" +
        '<line x1="' + xc + '" x2="' + (xs - 2) + '" y1="' + y + '" y2="' + y + '" stroke="#4a5360" stroke-width="1.5" marker-end="url(#ah)"/>' +
        '<text x="' + (xc + 8) + '" y="' + (y - 4) + '">#' + esc(id) + " " + esc(v(r, "http_method")) + " " + esc(label(r)) +
        (v(r, "attempt") > 1 ? " (attempt " + esc(v(r, "attempt")) + ")" : "") +
        (copyOf !== null ? " (copy of #" + esc(copyOf) + ")" : "") +
        (fault !== null ? " [failure at hop " + esc(fault) + "]" : "") + "</text>";
      const ry = y + 16;
      if (v(r, "http_status") !== null || v(r, "final_response")) {
        const sse = v(r, "sse_events") ? ", " + v(r, "sse_events") + " SSE events" : "";
        const lat = v(r, "latency_ms") !== null ? ", " + v(r, "latency_ms").toFixed(1) + " ms" : "";
        s += '<line x1="' + xs + '" x2="' + (xc + 2) + '" y1="' + ry + '" y2="' + ry + '" stroke="' + c + '" stroke-width="2" marker-end="url(#ah)"' +
          (v(r, "sse_events") ? ' stroke-dasharray="6 2"' : "") + "/>" +
          '<text x="' + (xs - 8) + '" y="' + (ry - 3) + '" text-anchor="end">' + esc((v(r, "http_status") !== null ? v(r, "http_status") + " " : "") + o + sse + lat) + "</text>";
      } else {
        s += '<text x="' + (xs - 8) + '" y="' + (ry - 3) + '" text-anchor="end" fill="' + c + '">&#x2715; ' + esc(o) + " (no response seen)</text>";
      }
      s += '<circle cx="' + (xc - 10) + '" cy="' + y + '" r="5" fill="' + c + '"><title>' + esc(o) + "</title></circle></g>";
      const prev = v(r, "retry_of");
      if (prev !== null && ypos.has(prev)) {
        const py = ypos.get(prev); const x = xs + 24 + ((id % 5) * 10);
        s += '<path class="retry" d="M' + (xs + 4) + "," + y + " C" + x + "," + y + " " + x + "," + py + " " + (xs + 4) + "," + py + '" marker-end="url(#ah)"/>' +
          '<text x="' + (x + 6) + '" y="' + ((y + py) / 2) + '" fill="#7a3db8">retry of #' + esc(prev) + " (" + esc(v(r, "retry_origin")) + ")</text>";
      }
    });
    const endY = H - 16;
    s += '<line x1="' + (xc - 40) + '" x2="' + (xs + 40) + '" y1="' + (endY - 8) + '" y2="' + (endY - 8) + '" stroke="#1b1f24" stroke-width="2"/>' +
      '<text x="' + ((xc + xs) / 2) + '" y="' + (endY + 6) + '" text-anchor="middle">session end: ' + esc(srow ? sv(srow, "ended_by") : "?") + "</text></svg>";
    const note = all.length > rows.length ? '<p class="muted">First ' + rows.length + " of " + all.length + " exchanges drawn; the table below has them all.</p>" :
      !rows.length ? '<p class="muted">No exchange of this session is in this page (time range or --html-max-rows).</p>' : "";
    det.querySelector(".diagram").innerHTML = note + s;
  }

  // ---- exchanges table ----
  function tableRows() {
    const text = state.text.toLowerCase();
    const out = ROWS.filter((r) => inTime(r) &&
      (!state.outcome || v(r, "outcome") === state.outcome) &&
      (!state.method || (v(r, "rpc_method") || "") === state.method) &&
      (!state.tool || (v(r, "tool_name") || "") === state.tool) &&
      (!state.session || v(r, "session_key") === state.session) &&
      (!text || r.some((x) => x !== null && String(x).toLowerCase().includes(text))));
    const i = CI[state.sort];
    if (i !== undefined) {
      const d = state.dir;
      out.sort((a, b) => { const x = a[i], y = b[i];
        if (x === y) return v(a, "exchange_id") - v(b, "exchange_id");
        if (x === null) return 1; if (y === null) return -1;
        return (x < y ? -1 : 1) * d; });
    }
    return out;
  }
  function options(name, values, cur) {
    return '<label>' + name + '<select data-filter="' + name + '"><option value="">all</option>' +
      values.map((x) => '<option value="' + esc(x) + '"' + (x === cur ? " selected" : "") + ">" + esc(x) + "</option>").join("") + "</select></label>";
  }
  const distinct = (name) => [...new Set(ROWS.map((r) => v(r, name)).filter((x) => x !== null && x !== ""))].sort();
  // Fixed column widths: the browser lays the table out without measuring every cell.
  function colWidth(c) {
    if (c.type === "timestamp") return 16;
    if (c.type === "bool") return 6;
    if (c.type !== "str") return Math.max(5, c.name.length * 0.62 + 1.5);
    if (/evidence|message|anomalies|user_agent|session_key|path|findings/.test(c.name)) return 20;
    return Math.max(9, c.name.length * 0.62 + 1.5);
  }
  function drawTableShell() {
    $("table").innerHTML = "<h2>Exchanges</h2>" +
      (D.rows_omitted ? '<p class="banner">' + esc(D.rows_omitted) + " more exchanges are not listed here (past --html-max-rows " +
        esc(D.max_rows) + "); the Parquet output (<code>-o out.parquet</code>) has them all.</p>" : "") +
      '<div class="controls no-print">' +
      options("outcome", distinct("outcome").sort((a, b) => outcomeOrder(a) - outcomeOrder(b)), state.outcome) +
      options("method", distinct("rpc_method"), state.method) + options("tool", distinct("tool_name"), state.tool) +
      options("session", distinct("session_key"), state.session) +
      '<label>text<input id="f-text" type="search" placeholder="any column"></label><button id="f-clear">Clear filters</button></div>' +
      '<div class="pager no-print" id="pager"></div>' +
      '<div class="scroll"><table id="exchanges" style="width:' + COLS.reduce((a, c) => a + colWidth(c), 0).toFixed(1) + 'em"><colgroup>' + COLS.map((c) => '<col style="width:' + colWidth(c) + 'em">').join("") +
      "</colgroup><thead><tr>" +
      COLS.map((c) => '<th scope="col"><button data-sort="' + esc(c.name) + '">' + esc(c.name) + "</button></th>").join("") +
      "</tr></thead><tbody></tbody></table></div>";
    $("table").querySelectorAll("select[data-filter]").forEach((sel) => sel.addEventListener("change", () => {
      state[sel.dataset.filter] = sel.value; state.page = 0; drawTable(); }));
    let timer = null;
    $("f-text").addEventListener("input", (ev) => { clearTimeout(timer);
      timer = setTimeout(() => { state.text = ev.target.value; state.page = 0; drawTable(); }, 150); });
    $("f-clear").addEventListener("click", () => {
      Object.assign(state, { outcome: "", method: "", tool: "", session: "", text: "", page: 0 });
      $("f-text").value = ""; $("table").querySelectorAll("select[data-filter]").forEach((s) => { s.value = ""; });
      drawTable(); });
    $("exchanges").querySelector("thead").addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-sort]"); if (!b) return;
      if (state.sort === b.dataset.sort) state.dir = -state.dir; else { state.sort = b.dataset.sort; state.dir = 1; }
      drawTable(); });
    const tbody = $("exchanges").querySelector("tbody");
    tbody.addEventListener("click", (ev) => { const tr = ev.target.closest("tr[data-exchange-id]"); if (tr) openDetails(tr.dataset.exchangeId, tr); });
    tbody.addEventListener("keydown", (ev) => {
      const tr = ev.target.closest("tr[data-exchange-id]"); if (!tr) return;
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); openDetails(tr.dataset.exchangeId, tr); }
      else if (ev.key === "ArrowDown" && tr.nextElementSibling) { ev.preventDefault(); tr.nextElementSibling.focus(); }
      else if (ev.key === "ArrowUp" && tr.previousElementSibling) { ev.preventDefault(); tr.previousElementSibling.focus(); }
    });
  }
  function drawTable() {
    const rows = tableRows();
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const part = rows.slice(state.page * PAGE, (state.page + 1) * PAGE);
    const oi = CI.outcome;
    const html = [];
    for (const r of part) {
      let tr = '<tr tabindex="0" data-exchange-id="' + esc(v(r, "exchange_id")) + '" data-outcome="' + esc(v(r, "outcome")) + '">';
      for (let i = 0; i < COLS.length; i++) {
        const c = COLS[i]; const val = r[i];
        if (i === oi) { tr += "<td>" + swatch(val) + "</td>"; continue; }
        const t = cellText(c, val);
        tr += (c.type === "str" || c.type === "timestamp" || c.type === "bool" ? "<td" : '<td class="num"') +
          (t.length > 40 ? ' title="' + esc(t) + '"' : "") + ">" + esc(t) + "</td>";
      }
      html.push(tr + "</tr>");
    }
    $("exchanges").querySelector("tbody").innerHTML = html.join("");
    $("exchanges").querySelectorAll("th button").forEach((b) => {
      b.parentElement.setAttribute("aria-sort", b.dataset.sort === state.sort ? (state.dir > 0 ? "ascending" : "descending") : "none");
      b.textContent = b.dataset.sort + (b.dataset.sort === state.sort ? (state.dir > 0 ? " \u25b2" : " \u25bc") : ""); });
    const pager = $("pager");
    pager.innerHTML = '<span id="row-count">' + rows.length + " of " + ROWS.length + " exchanges" +
      (rows.length > PAGE ? ", showing " + (state.page * PAGE + 1) + "&ndash;" + (state.page * PAGE + part.length) : "") + "</span>" +
      (pages > 1 ? '<button data-page="-1"' + (state.page ? "" : " disabled") + '>Previous</button><button data-page="1"' +
        (state.page < pages - 1 ? "" : " disabled") + ">Next</button>" : "");
    pager.querySelectorAll("button[data-page]").forEach((b) => b.addEventListener("click", () => {
      state.page += Number(b.dataset.page); drawTable(); }));
  }

  // ---- details pane ----
  let returnFocus = null;
  function openDetails(id, from) {
    const r = BY_ID.get(String(id));
    const pane = $("details");
    if (!r) return;
    returnFocus = from || document.activeElement;
    document.querySelectorAll("#exchanges tr.sel").forEach((t) => t.classList.remove("sel"));
    const tr = document.querySelector('#exchanges tr[data-exchange-id="' + CSS.escape(String(id)) + '"]');
    if (tr) tr.classList.add("sel");
    const links = new Set(["retry_of", "continuation_of"]);
    const later = ROWS.filter((x) => String(v(x, "retry_of")) === String(id) || String(v(x, "continuation_of")) === String(id));
    pane.innerHTML = '<button class="close" id="d-close" aria-label="Close details">Close (Esc)</button>' +
      "<h2>Exchange #" + esc(id) + " " + swatch(v(r, "outcome")) + "</h2><p>" + esc(label(r)) + "</p>" +
      (later.length ? "<p>Repeated or continued by " + later.map((x) => idLink(v(x, "exchange_id"))).join(" ") + "</p>" : "") +
      "<table><tbody>" + COLS.map((c, i) => "<tr><th>" + esc(c.name) + "</th><td>" +
        (links.has(c.name) && r[i] !== null && BY_ID.has(String(r[i])) ? idLink(r[i]) : esc(cellText(c, r[i]))) + "</td></tr>").join("") +
      "</tbody></table>";
    pane.hidden = false;
    pane.focus();
    $("d-close").addEventListener("click", closeDetails);
  }
  function closeDetails() {
    $("details").hidden = true;
    if (returnFocus && document.contains(returnFocus)) returnFocus.focus();
  }
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape" && !$("details").hidden) closeDetails(); });
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest("[data-open]"); if (b) openDetails(b.dataset.open, b); });
  document.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    const g = ev.target.closest && ev.target.closest("g[data-open]"); if (g) openDetails(g.dataset.open, g); });

  function drawBelow() {
    const rows = timeRows();
    drawFailures(rows); drawRetries(rows); drawLatency(rows); drawSessions(); drawTable();
  }

  drawRun();
  drawTimeline();
  drawTableShell();
  drawBelow();
  // Printed, every session shows its diagram (drawn now: the toggle event would come too late).
  window.addEventListener("beforeprint", () => document.querySelectorAll("details.session").forEach((d) => {
    if (!d.open) { d.open = true; drawDiagram(d); } }));
  // Ready once the first frame with the drawn page has been painted.
  requestAnimationFrame(() => setTimeout(() => {
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    document.body.dataset.ready = "1";
  }, 0));
})();
