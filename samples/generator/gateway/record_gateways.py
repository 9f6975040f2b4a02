#!/usr/bin/env python3
"""Records the gateway samples (gw-*: one MCP call seen on several legs) and writes their truth files.

usage: .venv/bin/python gateway/record_gateways.py [SCENARIO ...]   (default: all; `make record-gateways`)

Every process is real and runs on loopback: Debian's nginx and HAProxy, FastMCP's proxy from PyPI, the TS
SDK server (ts/server.mjs --mode stateless --request-log), proxy.py as the fault injector, and the Python SDK
client gateway/gw_client.py (which logs every HTTP exchange it makes). tcpdump on `lo` captures every leg:
the client -> gateway port and each gateway -> server port. The gateway host has its own address
(127.0.0.2: clients connect to it, nginx `proxy_bind`s to it), servers listen on 127.0.0.3 and 127.0.0.4;
gw-nginx-shared puts everything on 127.0.0.1.

Truth, never from mcp-trace:
- each leg's exchanges from the log of the program at its far end or near end: the client leg from
  gw_client.py's log (request and response as httpx2 handed them over), an upstream leg from proxy.py's log
  (when the fault proxy is that leg's server) or from the TS server's --request-log; truth.py decides the
  outcome of each exchange on each leg (report-schema 3);
- the links (which upstream request is a copy of which client request, and which copy the gateway resent)
  from the gateway's own log: nginx's access log ($request_id passed upstream as X-Request-Id, $upstream_addr,
  $upstream_status), HAProxy's log (unique-id passed as X-Request-Id, retries %rc, server), and for FastMCP,
  which has no request ids, from time containment (the client makes one call at a time: every upstream
  request FastMCP starts while a client request is open belongs to it) plus equal method and params;
- hop, forwarded_from, retry_origin "gateway" and fault_hop from those links, with report-schema 4c's rules
  (written out below: copies(), fault_hops()); retry_findings with hygiene.py (4b) on the rows where the
  resend was decided.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

GW = Path(__file__).resolve().parent
GEN = GW.parent
sys.path.insert(0, str(GEN))

import hygiene  # noqa: E402
import truth  # noqa: E402
from run_all import CERTS, NODE, PY, SAMPLES, lost_segments, read_jsonl, wait_port  # noqa: E402

WORK = GEN / "work"
LOGS = SAMPLES / "gateway-logs"
FASTMCP_PY = str(GEN / ".venv-fastmcp" / "bin" / "python")
SUCCESS = {"TOOL_SUCCESS", "RPC_SUCCESS", "ACCEPTED", "INPUT_REQUIRED", "TASK_CREATED", "STREAM_OPEN"}
ALL_PROCS = []


class Rec:
    def __init__(self, name):
        self.name = name
        self.dir = WORK / name
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        self.capture = SAMPLES / f"{name}.pcap"
        self.keys = None
        self.procs = []
        self.made_by = []
        self.legs = []          # (source kind, path, server_addr or None, client label)
        self.gateway_proc = None

    def spawn(self, cmd, logname, env=None):
        p = subprocess.Popen(cmd, cwd=GEN, stdout=open(self.dir / logname, "w"), stderr=subprocess.STDOUT,
                             start_new_session=True, env=env)
        self.procs.append(p)
        ALL_PROCS.append(p)
        return p

    # --- servers and gateways --------------------------------------------------------------
    def ts_server(self, host, port, label, mode="stateless"):
        log = self.dir / f"{label}.jsonl"
        self.spawn([NODE, "ts/server.mjs", "--host", host, "--port", str(port), "--mode", mode,
                    "--hygiene-tools", "--gateway-tools", "--request-log", str(log), "--lifetime", "120"], f"{label}.out")
        wait_port(host, port)
        what = ("TS SDK server (--mode stateless: JSON responses, no session ids; --hygiene-tools --gateway-tools)"
                if mode == "stateless" else f"TS SDK server (--mode {mode}, --hygiene-tools --gateway-tools)")
        if what not in self.made_by:
            self.made_by.append(what)
        return log

    def fault_proxy(self, host, port, up_host, up_port, label, *inject):
        log = self.dir / f"{label}.json"
        cmd = [PY, "proxy.py", "--listen-host", host, "--listen-port", str(port), "--upstream-host", up_host,
               "--upstream-port", str(up_port), "--log", str(log), "--lifetime", "120"]
        for spec in inject:
            cmd += ["--inject", spec]
        p = self.spawn(cmd, f"{label}.out")
        wait_port(host, port)
        self.made_by.append(f"proxy.py on {host}:{port} in front of the server on {up_host}:{up_port} ("
                            + ", ".join(f"--inject {s}" for s in inject) + ")")
        return log, p

    def render(self, template, subs):
        text = (GW / template).read_text()
        for k, v in subs.items():
            text = text.replace(f"@{k}@", str(v))
        left = re.findall(r"@[A-Z_]+@", text)
        if left:
            raise RuntimeError(f"{template}: unfilled {left}")
        out = self.dir / template.replace(".in", "")
        out.write_text(text)
        return out

    def nginx(self, template, listen_host, listen_port, subs):
        (self.dir / "tmp").mkdir(exist_ok=True)
        self.gw_log = self.dir / "nginx-access.log"
        conf = self.render(template, {"DIR": self.dir, "ACCESS_LOG": self.gw_log, "CERTS": CERTS, **subs})
        self.gateway_proc = self.spawn(["nginx", "-p", str(self.dir), "-c", str(conf), "-g", "daemon off;"], "nginx.out")
        wait_port(listen_host, listen_port)
        self.made_by.insert(0, f"nginx {nginx_version()} (Debian 12), config gateway/{template}")

    def haproxy(self, template, listen_host, listen_port, subs):
        conf = self.render(template, {"DIR": self.dir, **subs})
        self.gateway_proc = self.spawn(["haproxy", "-f", str(conf), "-db"], "haproxy.log")
        self.gw_log = self.dir / "haproxy.log"
        wait_port(listen_host, listen_port)
        self.made_by.insert(0, f"HAProxy {haproxy_version()} (Debian 12), config gateway/{template}")

    # --- capture ---------------------------------------------------------------------------
    def capture_start(self, ports):
        self.ports = ports
        filt = "tcp and (" + " or ".join(f"port {p}" for p in ports) + ")"
        self.tcpdump = subprocess.Popen(["tcpdump", "-i", "lo", "--immediate-mode", "-U", "-w", str(self.capture), filt],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        ALL_PROCS.append(self.tcpdump)
        ready = threading.Event()
        self.tcpdump_err = []

        def reader():
            for line in self.tcpdump.stderr:
                self.tcpdump_err.append(line)
                if "listening on" in line:
                    ready.set()
        threading.Thread(target=reader, daemon=True).start()
        if not ready.wait(10):
            raise RuntimeError("tcpdump did not start")
        time.sleep(0.3)
        self.made_by.append(f"captured by tcpdump -i lo '{filt}'")

    def client(self, label, url, steps, h2=False):
        log = self.dir / f"{label}.jsonl"
        cmd = [PY, "gateway/gw_client.py", "--url", url, "--steps", steps, "--log", str(log), "--label", label,
               "--lifetime", "60"]
        what = "Python SDK client gateway/gw_client.py (mcp 2.3.0, mode legacy, httpx2"
        if h2:
            self.keys = SAMPLES / f"{self.name}.keys"
            if self.keys.exists():
                self.keys.unlink()
            cmd += ["--h2", "--tls-ca", str(CERTS / "ca.pem"), "--keylog", str(self.keys)]
            what += " http2=True over TLS with ssl.SSLContext keylog_filename"
        self.made_by.append(what + ")")
        p = self.spawn(cmd, f"{label}.out")
        p.wait(90)
        return log

    def stop(self):
        time.sleep(1.0)
        self.t_capture_end = time.time()
        self.tcpdump.send_signal(signal.SIGINT)
        self.tcpdump.wait(10)
        time.sleep(0.2)
        (self.dir / "tcpdump.err").write_text("".join(self.tcpdump_err))
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        lost = lost_segments(self.capture)
        if lost:
            raise RuntimeError(f"{self.capture.name}: tcpdump missed segments {lost}")

    def save_log(self, src, suffix):
        LOGS.mkdir(exist_ok=True)
        dst = LOGS / f"{self.name}.{suffix}"
        shutil.copyfile(src, dst)
        return str(dst.relative_to(SAMPLES))


def nginx_version():
    return subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip().split("/")[-1]


def haproxy_version():
    return subprocess.run(["haproxy", "-v"], capture_output=True, text=True).stdout.split()[2]


# --- records of each leg, in proxy.py's record format --------------------------------------------

def client_records(log, server_addr):
    recs, by_rid = [], {}
    for line in read_jsonl(log):
        if line["step"] == "http_request":
            rec = {"seq": len(recs) + 1, "t_req": line["t"], "method": line["method"], "path": line["path"],
                   "req_headers": line["headers"], "req_body": line["body"], "status": None, "resp_headers": None,
                   "resp_body": "", "t_resp_end": None, "injected": None, "cut": False, "resp_complete": False,
                   "server_addr": server_addr, "source": f"client log {Path(log).name}, http_request at t={line['t']:.6f}"}
            recs.append(rec)
            by_rid[line["rid"]] = rec
        elif line["step"] == "http_response":
            rec = by_rid[line["rid"]]
            rec.update(status=line["status"], resp_headers=line["headers"], resp_body=line.get("body", ""),
                       t_resp_end=line.get("t_end"), resp_complete="body" in line, http_version=line["http_version"],
                       h2_stream=line.get("h2_stream"), client_addr=line.get("client_addr"), tls=line.get("tls"))
            if line.get("server_addr"):
                assert line["server_addr"] == server_addr, (line["server_addr"], server_addr)
    return recs


def server_records(log):
    recs = read_jsonl(log)
    for r in recs:
        r["source"] = f"server log {Path(log).name} seq {r['seq']}"
    return recs


def proxy_records(log, server_addr):
    recs = json.loads(Path(log).read_text())
    for r in recs:
        r["server_addr"] = server_addr
        r["source"] = f"proxy.py log {Path(log).name} seq {r['seq']}"
        if r["status"] is None and r.get("injected") is None:
            r["closed_by_client"] = True  # proxy.py: the gateway closed its connection before any response
    return recs


def xrid(rec):
    return truth.hget(rec["req_headers"], "x-request-id")


# --- truth -----------------------------------------------------------------------------------

def build(rec, legs, links, gateway_kind, description, gw_log_rel, extra=None):
    """legs: [(label, client label, records)], the first being the client's leg (hop 1).
    links: {id(client rec): [upstream recs in time order]} from the gateway's log, with a reason each."""
    all_recs, entries = [], []
    sid_labels = {}
    for leg_label, client_label, recs in legs:
        recs = sorted(recs, key=lambda r: r["t_req"])
        es = truth.build_entries(recs, rec.t_capture_end, lambda r, sid, c=client_label: c, sid_labels)
        for e, r in zip(es, recs):
            e["server_addr"] = r["server_addr"]
            e["leg"] = leg_label
            all_recs.append(r)
            entries.append(e)
    order = sorted(range(len(entries)), key=lambda i: all_recs[i]["t_req"])
    entries = [entries[i] for i in order]
    all_recs = [all_recs[i] for i in order]
    for n, e in enumerate(entries, 1):
        e["n"] = n
    n_of = {id(r): e["n"] for e, r in zip(entries, all_recs)}
    by_n = {e["n"]: e for e in entries}
    rec_of = {e["n"]: r for e, r in zip(entries, all_recs)}
    for e in entries:
        e.update(hop=1, forwarded_from=None, fault_hop=None)
    # copies and gateway retries, from the gateway's log
    copies = {}
    for cid, (ups, why) in links.items():
        cn = n_of[cid]
        copies[cn] = []
        for k, u in enumerate(ups):
            un = n_of[id(u)]
            ue = by_n[un]
            assert ue["rpc_method"] == by_n[cn]["rpc_method"], (cn, un)
            assert equivalent(rec_of[cn], u), f"entry {un} is not equivalent to {cn}"
            assert rec_of[un]["t_req"] > rec_of[cn]["t_req"]
            ue["hop"] = by_n[cn]["hop"] + 1
            ue["forwarded_from"] = cn
            ue["reason"] += f"; copy of entry {cn} ({why[k]})"
            if k > 0:
                prev = copies[cn][-1]
                assert by_n[prev]["outcome"] not in SUCCESS
                ue["retry_of"], ue["retry_origin"] = prev, "gateway"
                ue["reason"] += f"; the gateway resent it after entry {prev} ended {by_n[prev]['outcome']}"
            copies[cn].append(un)
    return entries, all_recs, copies, by_n, rec_of


def equivalent(a, b):
    pa, pb = truth.parse_body(a), truth.parse_body(b)
    if not isinstance(pa, dict) or not isinstance(pb, dict):
        return a["method"] == b["method"]
    return (pa.get("method") == pb.get("method")
            and hygiene.normalise_params(pa.get("params")) == hygiene.normalise_params(pb.get("params")))


def link_app_retries(entries, recs, client_log):
    """The application's retries (gw_client.py app_retry lines): hop-1 rows, retry_origin application."""
    lines = read_jsonl(client_log)
    hop1 = [(e, r) for e, r in zip(entries, recs) if e["hop"] == 1 and e["leg"] == "client"]
    for line in lines:
        if line["step"] != "app_retry":
            continue
        before = [e for e, r in hop1 if e["tool_name"] == line["tool"] and r["t_req"] < line["t"]]
        after = [e for e, r in hop1 if e["tool_name"] == line["tool"] and r["t_req"] > line["t"]]
        prev, again = before[-1], after[0]
        assert prev["jsonrpc_id"] != again["jsonrpc_id"]
        again["retry_of"], again["retry_origin"] = prev["n"], "application"
        again["reason"] += (f"; the application called {line['tool']} again after {line['after_ms']} ms with a new "
                            f"id (client log app_retry at {line['t']:.3f})")


def propagate_retries(entries, copies):
    """A copy of a retry repeats its original's relation one hop up (report-schema 4c)."""
    by_n = {e["n"]: e for e in entries}
    for e in entries:
        if e["retry_of"] is None or e["retry_origin"] == "gateway":
            continue
        mine, theirs = copies.get(e["n"], []), copies.get(e["retry_of"], [])
        if mine and theirs:
            c = by_n[mine[0]]
            c["retry_of"], c["retry_origin"] = theirs[-1], e["retry_origin"]
            c["reason"] += (f"; copy of the {e['retry_origin']} retry entry {e['n']}: retry_of the copy of entry "
                            f"{e['retry_of']} (its findings stay on entry {e['n']})")


def findings(entries, recs, copies):
    """4b on the rows where the resend was decided: hop-1 retries and the gateway's resends."""
    attempts, listings = [], []
    for e, r in zip(entries, recs):
        a, li = hygiene.facts_from_records([e], [r], r["server_addr"])
        a = a[0]
        decided_here = e["retry_origin"] == "gateway" or (e["retry_of"] is not None and e["hop"] == 1)
        if not decided_here:
            a.retry_of = None
        attempts.append(a)
        listings += li
    hygiene.judge(attempts, listings)
    hygiene.apply(entries, attempts)


def fault_hops(entries, recs, copies):
    """report-schema 4c: follow the copies of a failed hop-1 row upstream (the last copy when the gateway
    resent it); stop at the first C whose own copy D succeeded or was ended by D's client side (the gateway
    closed it before a response) or that has no copy: fault_hop = C's hop, for every failed row of the chain.
    A gateway's earlier failed attempt: its own walk."""
    by_n = {e["n"]: e for e in entries}
    rec_of = {e["n"]: r for e, r in zip(entries, recs)}
    failed = lambda e: e["outcome"] not in SUCCESS  # noqa: E731

    def walk(c):
        chain = [c]
        while True:
            ds = copies.get(c["n"], [])
            if not ds:
                return c["hop"], chain
            d = by_n[ds[-1]]
            if not failed(d) or rec_of[d["n"]].get("closed_by_client"):
                if failed(d):
                    chain.append(d)
                return c["hop"], chain
            c = d
            chain.append(c)

    for e in entries:
        if e["hop"] == 1 and failed(e) and e["kind"] == "request":
            hop, chain = walk(e)
            for x in chain:
                if failed(x):
                    x["fault_hop"] = hop
    for e in entries:
        if failed(e) and e["fault_hop"] is None and e["hop"] > 1 and e["kind"] == "request":
            e["fault_hop"] = walk(e)[0]
    # a row with no other hop at all keeps null (report-schema: nothing to place)
    for e in entries:
        if e["fault_hop"] is not None and e["hop"] == 1 and not copies.get(e["n"]):
            e["fault_hop"] = None


def summary(entries, copies):
    hops = {}
    for e in entries:
        if e["hop"] != 1 or not copies.get(e["n"]):
            continue
        h = hops.setdefault(e["server_addr"] + e["path"], {"calls": 0, "copies": 0, "gateway_retries": 0})
        h["calls"] += 1
        h["copies"] += len(copies[e["n"]])
        h["gateway_retries"] += sum(1 for c in copies[e["n"]] if entries[c - 1]["retry_origin"] == "gateway")
    return hops


def write(rec, entries, copies, description, gw_log_rel, ports, extra=None):
    for e in entries:
        e.pop("leg", None)
    doc = {"capture": rec.capture.name, "description": description, "made_by": ", ".join(rec.made_by),
           "server_port": ports[0], "server_ports": ports, "link": "lo", "gateway_log": gw_log_rel,
           "hops_expected": summary(entries, copies), "entries": entries}
    if extra:
        doc.update(extra)
    path = SAMPLES / f"{rec.name}.truth.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{rec.capture.name}: {len(entries)} entries, {rec.capture.stat().st_size} bytes; hops {doc['hops_expected']}")
    for e in entries:
        print(f"  {e['n']:>2} {e['server_addr']:<16} hop={e['hop']} fwd={str(e['forwarded_from']):<4} "
              f"{e['http_method']:<6} {str(e['jsonrpc_id']):<4} {str(e['rpc_method']):<26} {str(e['tool_name']):<11} "
              f"{str(e['http_status']):<4} {e['outcome']:<14} fault_hop={e['fault_hop']} retry_of={e['retry_of']} "
              f"{e['retry_origin']} {e['retry_findings'] or ''}", flush=True)


# --- nginx access log -------------------------------------------------------------------------

def nginx_lines(path):
    out = []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        d = json.loads(line)
        d["line"] = i
        d["t_start"] = float(d["msec"]) - float(d["request_time"])
        out.append(d)
    return sorted(out, key=lambda d: d["t_start"])


def nginx_links(lines, client_recs, upstream_recs, log_name):
    """One access-log line per client request (in time order); the upstream requests that carry its
    $request_id as X-Request-Id are its copies, which must be exactly $upstream_addr / $upstream_status."""
    crecs = sorted(client_recs, key=lambda r: r["t_req"])
    assert len(lines) == len(crecs), (len(lines), len(crecs))
    links = {}
    for d, c in zip(lines, crecs):
        method, path, _ = d["request"].split(" ")
        assert (method, path) == (c["method"], c["path"]), (d, c["method"], c["path"])
        assert int(d["status"]) == c["status"], (d, c["status"])
        ups = sorted([u for u in upstream_recs if xrid(u) == d["request_id"]], key=lambda r: r["t_req"])
        addrs = [a.strip() for a in d["upstream_addr"].split(",")] if d["upstream_addr"] else []
        stats = [s.strip() for s in d["upstream_status"].split(",")] if d["upstream_status"] else []
        assert [u["server_addr"] for u in ups] == addrs, (d, [u["server_addr"] for u in ups])
        for u, s in zip(ups, stats):
            # nginx logs 504 for an upstream it timed out (no response): the record then has none
            assert (u["status"] is None and s == "504") or str(u["status"]) == s, (d, u["status"], s)
        c["gw_line"] = d
        if ups:
            links[id(c)] = (ups, [f"{log_name} line {d['line']}: request_id {d['request_id']}, upstream_addr "
                                  f"{d['upstream_addr']!r}, upstream_status {d['upstream_status']!r}, status {d['status']}"
                                  for _ in ups])
    return links


def cite_gateway(entries, recs, log_name):
    for e, r in zip(entries, recs):
        d = r.get("gw_line")
        if d:
            e["reason"] += (f"; {log_name} line {d['line']}: status {d['status']}, upstream_addr {d['upstream_addr'] or '-'}"
                            f", upstream_status {d['upstream_status'] or '-'}, request_time {d['request_time']}"
                            f", upstream_response_time {d['upstream_response_time'] or '-'}")


def finish_truth(rec, legs, links, description, gw_log_rel, ports, client_log, extra=None):
    entries, recs, copies, by_n, rec_of = build(rec, legs, links, None, description, gw_log_rel)
    link_app_retries(entries, recs, client_log)
    propagate_retries(entries, copies)
    findings(entries, recs, copies)
    fault_hops(entries, recs, copies)
    for e, r in zip(entries, recs):
        e["reason"] += f" [{r['source']}]"
    return entries, recs, copies


# --- scenarios --------------------------------------------------------------------------------

def gw_nginx_next_upstream():
    rec = Rec("gw-nginx-next-upstream")
    P, PA, PB = 18440, 18441, 18442
    srv_a = rec.ts_server("127.0.0.3", PA + 10, "server-a")
    plog, _ = rec.fault_proxy("127.0.0.3", PA, "127.0.0.3", PA + 10, "proxy-a", "status=503&match=tools/call&count=3")
    srv_b = rec.ts_server("127.0.0.4", PB, "server-b")
    rec.nginx("nginx-next-upstream.conf.in", "127.0.0.2", P, {"LISTEN": f"127.0.0.2:{P}", "BIND": "127.0.0.2",
              "UP_A": f"127.0.0.3:{PA}", "UP_B": f"127.0.0.4:{PB}"})
    rec.capture_start([P, PA, PB])
    clog = rec.client("py-client", f"http://127.0.0.2:{P}/mcp",
                      "list,list,email,echo:one,weather:Paris,echo:two,weather:Oslo,status:green,fail,email")
    rec.stop()
    crecs = client_records(clog, f"127.0.0.2:{P}")
    arecs = proxy_records(plog, f"127.0.0.3:{PA}")
    brecs = server_records(srv_b)
    gwl = rec.save_log(rec.gw_log, "nginx-access.log")
    links = nginx_links(nginx_lines(rec.gw_log), crecs, arecs + brecs, gwl)
    legs = [("client", "py-client", crecs), ("a", "nginx", arecs), ("b", "nginx", brecs)]
    entries, recs, copies = finish_truth(rec, legs, links, None, gwl, [P, PA, PB], clog)
    cite_gateway(entries, recs, gwl)
    rec.save_log(plog, "proxy-a.json")
    resent = [e for e in entries if e["retry_origin"] == "gateway"]
    desc = ("Plaintext nginx on 127.0.0.2 (proxy_bind 127.0.0.2) with two upstreams, 127.0.0.3 (proxy.py answering "
            "the first three tools/call it gets with 503 and an empty body, in front of a TS server) and 127.0.0.4 "
            "(a TS server), round robin, max_fails=0, proxy_next_upstream error timeout http_503 non_idempotent: "
            f"nginx resent {len(resent)} tools/call to 127.0.0.4 after the 503 "
            f"({', '.join(e['tool_name'] for e in resent)}); the client saw only successes. Servers are stateless "
            "(no Mcp-Session-Id: round robin would otherwise send a session's calls to a server that never saw "
            "its initialize). The client lists tools twice so that each upstream has served a tools/list.")
    write(rec, entries, copies, desc, gwl, [P, PA, PB])
    return entries


def gw_nginx_timeout():
    rec = Rec("gw-nginx-timeout")
    P, PA = 18443, 18444
    srv = rec.ts_server("127.0.0.3", PA, "server")
    rec.nginx("nginx-timeout.conf.in", "127.0.0.2", P, {"LISTEN": f"127.0.0.2:{P}", "BIND": "127.0.0.2",
              "UP_A": f"127.0.0.3:{PA}"})
    rec.capture_start([P, PA])
    clog = rec.client("py-client", f"https://127.0.0.2:{P}/mcp",
                      "list,echo:one,weather:Paris,echo:two,retry:sleepy,echo:three,status:green,weather:Oslo,"
                      "fail,echo:four,email", h2=True)
    rec.stop()
    crecs = client_records(clog, f"127.0.0.2:{P}")
    srecs = server_records(srv)
    gwl = rec.save_log(rec.gw_log, "nginx-access.log")
    links = nginx_links(nginx_lines(rec.gw_log), crecs, srecs, gwl)
    legs = [("client", "py-client", crecs), ("a", "nginx", srecs)]
    entries, recs, copies = finish_truth(rec, legs, links, None, gwl, [P, PA], clog)
    cite_gateway(entries, recs, gwl)
    for e, r in zip(entries, recs):
        if r.get("h2_stream") is not None:
            e.update(http_version=r["http_version"], h2_stream=r["h2_stream"])
        if r.get("closed_by_client"):
            e["reason"] += (f"; the server's log: the connection was closed by its client (nginx, at its 1 s "
                            f"proxy_read_timeout) {(r['t_resp_end'] - r['t_req']) * 1000:.0f} ms after the request, "
                            "before any response byte (the server had been silent that long)")
    tls = {r["tls"]["version"] + " " + r["tls"]["cipher_openssl"] + " ALPN " + r["tls"]["alpn"]
           for r in crecs if r.get("tls")}
    desc = ("nginx on 127.0.0.2 terminating TLS 1.3 (test CA, certificate for IP 127.0.0.2; the client connects by "
            "IP, so no SNI) with HTTP/2 towards the client (the client's ssl: " + ", ".join(sorted(tls)) + ") and "
            "HTTP/1.1 upstream (proxy_http_version 1.1, keepalive, proxy_buffering off, proxy_bind 127.0.0.2) to a "
            "stateless TS server on 127.0.0.3; proxy_read_timeout 1s. The tool sleepy sleeps 2 s: nginx closes the "
            "upstream connection after 1 s without a response (NO_RESPONSE on that leg) and answers 504 "
            "(HTTP_ERROR, fault_hop 1 on both: the gateway's timeout); the application calls sleepy once more with "
            "a new id (application retry, unsafe_retry on the client's row only) and gets 504 again. Every other call "
            "succeeds through the gateway. The key log is the client's (ssl.SSLContext.keylog_filename).")
    write(rec, entries, copies, desc, gwl, [P, PA], {"keylog": rec.keys.name, "http2_ports": [P], "requires": "http2"})
    return entries


def gw_nginx_shared():
    rec = Rec("gw-nginx-shared")
    P, PA = 18445, 18446
    rec.ts_server("127.0.0.1", PA + 10, "server")
    plog, _ = rec.fault_proxy("127.0.0.1", PA, "127.0.0.1", PA + 10, "proxy", "status=503&match=get_weather&count=1")
    rec.nginx("nginx-shared.conf.in", "127.0.0.1", P, {"LISTEN": f"127.0.0.1:{P}", "UP_A": f"127.0.0.1:{PA}"})
    rec.capture_start([P, PA])
    clog = rec.client("py-client", f"http://127.0.0.1:{P}/mcp", "list,echo:one,weather:Paris,echo:two")
    rec.stop()
    crecs = client_records(clog, f"127.0.0.1:{P}")
    arecs = proxy_records(plog, f"127.0.0.1:{PA}")
    gwl = rec.save_log(rec.gw_log, "nginx-access.log")
    links = nginx_links(nginx_lines(rec.gw_log), crecs, arecs, gwl)
    legs = [("client", "py-client", crecs), ("a", "nginx", arecs)]
    entries, recs, copies = finish_truth(rec, legs, links, None, gwl, [P, PA], clog)
    cite_gateway(entries, recs, gwl)
    rec.save_log(plog, "proxy.json")
    desc = ("Everything on 127.0.0.1: the client, nginx (plaintext, port %d) and proxy.py (port %d) in front of a "
            "stateless TS server; only ports tell the legs apart. proxy.py answers the get_weather call with 503 "
            "and an empty body; nginx (no proxy_next_upstream for it: one upstream) relays the 503 to the client "
            "(both rows HTTP_ERROR 503, fault_hop 2). The SDK raises; the client does not retry." % (P, PA))
    write(rec, entries, copies, desc, gwl, [P, PA])
    return entries


def haproxy_lines(path):
    out = []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        d["line"] = i
        if d["request"] == "<BADREQ>" and d["termination"].startswith("CR"):
            continue  # the recorder's own port probe (wait_port: connect, close), before the capture started
        out.append(d)
    return sorted(out, key=lambda d: float(d["accept"]))


def haproxy_links(lines, client_recs, upstream_recs, log_name):
    """One log line per client request (in accept order); the upstream requests carrying its unique id as
    X-Request-Id are its copies: retries + 1 of them, the last one at the logged server with the logged status."""
    crecs = sorted(client_recs, key=lambda r: r["t_req"])
    assert len(lines) == len(crecs), (len(lines), len(crecs))
    links = {}
    for d, c in zip(lines, crecs):
        method, path, _ = d["request"].split(" ")
        assert (method, path) == (c["method"], c["path"]) and d["status"] == c["status"], (d, c["status"])
        ups = sorted([u for u in upstream_recs if xrid(u) == d["id"]], key=lambda r: r["t_req"])
        retries = int(d["retries"].lstrip("+"))
        assert len(ups) == retries + 1, (d, len(ups))
        assert ups[-1]["server_addr"] == d["server_addr"] and ups[-1]["status"] == d["status"], (d, ups[-1]["server_addr"])
        c["gw_line"] = d
        links[id(c)] = (ups, [f"{log_name} line {d['line']}: id {d['id']}, server {d['server']} ({d['server_addr']}), "
                              f"retries {d['retries']}, status {d['status']}" for _ in ups])
    return links


def gw_haproxy_retry():
    rec = Rec("gw-haproxy-retry")
    P, PA, PB = 18447, 18448, 18449
    rec.ts_server("127.0.0.3", PA + 10, "server-a")
    plog, _ = rec.fault_proxy("127.0.0.3", PA, "127.0.0.3", PA + 10, "proxy-a", "status=503&match=tools/call&count=4")
    srv_b = rec.ts_server("127.0.0.4", PB, "server-b")
    rec.haproxy("haproxy-retry.cfg.in", "127.0.0.2", P, {"LISTEN": f"127.0.0.2:{P}", "BIND": "127.0.0.2",
                "UP_A": f"127.0.0.3:{PA}", "UP_B": f"127.0.0.4:{PB}"})
    rec.capture_start([P, PA, PB])
    clog = rec.client("py-client", f"http://127.0.0.2:{P}/mcp",
                      "list,list,email,echo:one,weather:Paris,echo:two,weather:Oslo,status:green")
    rec.stop()
    crecs = client_records(clog, f"127.0.0.2:{P}")
    arecs = proxy_records(plog, f"127.0.0.3:{PA}")
    brecs = server_records(srv_b)
    gwl = rec.save_log(rec.gw_log, "haproxy.log")
    lines = haproxy_lines(rec.gw_log)
    links = haproxy_links(lines, crecs, arecs + brecs, gwl)
    legs = [("client", "py-client", crecs), ("a", "haproxy", arecs), ("b", "haproxy", brecs)]
    entries, recs, copies = finish_truth(rec, legs, links, None, gwl, [P, PA, PB], clog)
    for e, r in zip(entries, recs):
        d = r.get("gw_line")
        if d:
            e["reason"] += (f"; {gwl} line {d['line']}: server {d['server']} {d['server_addr']}, status {d['status']}, "
                            f"retries {d['retries']}, Tc/Tr/Ta {d['Tc']}/{d['Tr']}/{d['Ta']} ms, termination {d['termination']}")
    rec.save_log(plog, "proxy-a.json")
    resent = [e for e in entries if e["retry_origin"] == "gateway"]
    desc = ("HAProxy %s in HTTP mode on 127.0.0.2 (source 127.0.0.2), balance roundrobin over 127.0.0.3 (proxy.py "
            "answering the first four tools/call it gets with 503, in front of a TS server) and 127.0.0.4 (a TS "
            "server), option http-buffer-request, retry-on 503 conn-failure, retries 2, option redispatch; unique-id passed upstream as X-Request-Id. HAProxy resent %d copies "
            "(%s), each after one 503 and straight to the other server (its log's retries field \"+1\": one retry, "
            "redispatched; with two servers the allowed second retry was never needed); the client saw only successes. Stateless servers, as in gw-nginx-next-upstream."
            % (haproxy_version(), len(resent), ", ".join(f"{e['tool_name']} to {e['server_addr']}" for e in resent)))
    write(rec, entries, copies, desc, gwl, [P, PA, PB])
    return entries


def fastmcp_version():
    out = subprocess.run([FASTMCP_PY, "-c", "import fastmcp, mcp.types; from importlib.metadata import version as v; "
                          "print(v('fastmcp'), v('mcp'))"], capture_output=True, text=True)
    return out.stdout.split()


def gw_fastmcp_proxy():
    rec = Rec("gw-fastmcp-proxy")
    P, PA = 18450, 18451
    rec.ts_server("127.0.0.3", PA + 10, "server", mode="json")
    plog, _ = rec.fault_proxy("127.0.0.3", PA, "127.0.0.3", PA + 10, "proxy", "status=503&match=get_weather&count=1")
    fv, mv = fastmcp_version()
    env = {**os.environ, "FASTMCP_LOG_LEVEL": "DEBUG", "COLUMNS": "250", "NO_COLOR": "1"}
    rec.gateway_proc = rec.spawn([FASTMCP_PY, "gateway/fastmcp_proxy.py", "--host", "127.0.0.2", "--port", str(P),
                                  "--upstream", f"http://127.0.0.3:{PA}/mcp", "--lifetime", "120"], "fastmcp.log", env)
    wait_port("127.0.0.2", P, 30)
    rec.gw_log = rec.dir / "fastmcp.log"
    rec.made_by.insert(0, f"FastMCP {fv} (PyPI, mcp {mv}) create_proxy(URL) run(transport='http'), gateway/fastmcp_proxy.py")
    rec.capture_start([P, PA])
    clog = rec.client("py-client", f"http://127.0.0.2:{P}/mcp", "list,echo:one,retry:weather:Paris,echo:two,fail")
    rec.stop()
    crecs = client_records(clog, f"127.0.0.2:{P}")
    closed = [l["t"] for l in read_jsonl(clog) if l["step"] == "closed"][0]
    for c in crecs:
        if c["method"] == "GET" and c["t_resp_end"] is None:
            # the client's GET stream ends at the latest when the client process closes its connections
            c["t_resp_end"] = closed
            c["source"] += "; its end: the client's `closed` log line (the process exits after it)"
    urecs = proxy_records(plog, f"127.0.0.3:{PA}")
    gwl = rec.save_log(rec.gw_log, "fastmcp.log")
    rec.save_log(plog, "proxy.json")
    log_lines = rec.gw_log.read_text().splitlines()
    handled = [(i, l) for i, l in enumerate(log_lines, 1) if "Handler called:" in l]
    # links: FastMCP has no request id; the client makes one call at a time, so every upstream request started
    # while a client POST was open belongs to it; the copy is the one with the same method and params
    links, inside = {}, {}
    posts = [c for c in crecs if c["method"] == "POST"]
    for u in sorted(urecs, key=lambda r: r["t_req"]):
        owner = [c for c in posts if c["t_req"] < u["t_req"] < (c["t_resp_end"] or 1e12)]
        assert len(owner) <= 1
        if not owner:
            continue
        c = owner[0]
        if u["method"] == "POST" and equivalent(c, u) and truth.parse_body(c).get("id") is not None:
            assert id(c) not in links, "two copies of one call"
            links[id(c)] = ([u], [""])
        else:
            inside.setdefault(id(u), c)
    rpc = [c for c in posts if (truth.parse_body(c) or {}).get("method") in ("tools/list", "tools/call")]
    assert len(rpc) == len(handled), (len(rpc), len(handled))
    for c, (i, line) in zip(rpc, handled):
        c["fm_line"] = (i, line.strip())
        nxt = log_lines[i].strip() if i < len(log_lines) else ""
        client_of_call = re.search(r"\[(ProxyClient-[0-9a-f:]+)\]", nxt)
        if id(c) in links:
            links[id(c)] = (links[id(c)][0], [f"{gwl} line {i}: {' '.join(line.split())[:110]!r}"
                                              + (f", line {i + 1}: called by {client_of_call.group(1)}" if client_of_call else "")
                                              + "; started while the client's request was open, same method and "
                                              "params (_meta removed)"])
    errors = [(i, l) for i, l in enumerate(log_lines, 1) if "Error calling tool" in l]
    legs = [("client", "py-client", crecs), ("a", "fastmcp", urecs)]
    entries, recs, copies = finish_truth(rec, legs, links, None, gwl, [P, PA], clog)
    n_of = {id(r): e["n"] for e, r in zip(entries, recs)}
    for e, r in zip(entries, recs):
        if id(r) in inside:
            e["reason"] += f"; sent by FastMCP itself while serving client entry {n_of[id(inside[id(r)])]} (not a copy)"
        if r.get("fm_line") and e["forwarded_from"] is None and not copies.get(e["n"]):
            e["reason"] += f"; {gwl} line {r['fm_line'][0]}: handled by FastMCP without an upstream copy"
        if e["hop"] == 2 and e["rpc_method"] == "tools/call":
            orig = entries[e["forwarded_from"] - 1]
            e["reason"] += f"; JSON-RPC id {e['jsonrpc_id']} here, {orig['jsonrpc_id']} on the client's leg (renumbered)"
    translated = [e for e in entries if e["hop"] == 1 and e["outcome"] == "TOOL_ERROR" and copies.get(e["n"])
                  and entries[copies[e["n"]][-1] - 1]["outcome"] == "HTTP_ERROR"]
    for e in translated:
        c = entries[copies[e["n"]][-1] - 1]
        fm = [f"{gwl} line {i}: {' '.join(l.split())!r}" for i, l in errors
              if f"'{e['tool_name']}'" in l]
        mcperr = [i for i, l in enumerate(log_lines, 1) if "MCPError:" in l]
        e["reason"] += (f"; translated: FastMCP turned the upstream HTTP {c['http_status']} of entry {c['n']} into a "
                        "tool result with isError true (" + "; ".join(fm[:1])
                        + (f", line {mcperr[0]}: {' '.join(log_lines[mcperr[0] - 1].split())!r}" if mcperr else "") + ")")
    sessions = sorted({e["session"] for e in entries if e["client"] == "fastmcp"})
    desc = (f"FastMCP {fv}'s proxy (create_proxy(URL), the documented way; mcp {mv}) on 127.0.0.2 in front of a TS "
            f"server (--mode json, stateful) behind proxy.py on 127.0.0.3, which answers the first get_weather call "
            f"with 503. What FastMCP did, from proxy.py's log: a new upstream session for every proxied request "
            f"({len(sessions)} upstream sessions: initialize, notifications/initialized, a GET stream, the call, "
            "DELETE; its DEBUG log names a new ProxyClient instance for each call), its own JSON-RPC ids (every proxied request is id 2 upstream), params relayed with _meta {progressToken} added; "
            "the client's tools/list and tools/call are relayed; the client's initialize is answered by FastMCP "
            "itself. The 503 reached the client as a tools/call result with isError true (TOOL_ERROR at hop 1, "
            "HTTP_ERROR 503 at hop 2, fault_hop 2 on both: translated); the application called get_weather again "
            "(application retry, no finding: readOnlyHint) and it succeeded through a new upstream session.")
    write(rec, entries, copies, desc, gwl, [P, PA], {"proxy_log": "gateway-logs/gw-fastmcp-proxy.proxy.json"})
    return entries


SCENARIOS = {"gw-nginx-timeout": gw_nginx_timeout, "gw-nginx-next-upstream": gw_nginx_next_upstream,
             "gw-haproxy-retry": gw_haproxy_retry, "gw-fastmcp-proxy": gw_fastmcp_proxy,
             "gw-nginx-shared": gw_nginx_shared}


def main():
    names = sys.argv[1:] or list(SCENARIOS)
    try:
        for name in names:
            print(f"== {name}", flush=True)
            SCENARIOS[name]()
    finally:
        for p in ALL_PROCS:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


if __name__ == "__main__":
    main()
