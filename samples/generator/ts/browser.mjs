// Headless Chromium (Debian's /usr/bin/chromium) driven by playwright-core, recording a HAR.
// usage: node ts/browser.mjs --mcp URL --page-port N --har FILE [--log FILE] [--lifetime S]
// Serves a small page on 127.0.0.1:<page-port> whose script talks MCP (2025-11-25) to --mcp with
// fetch: initialize, notifications/initialized, tools/call echo / fail / slow (SSE progress),
// a slow call aborted after 250 ms (AbortController: an aborted SSE body), then DELETE.
import fs from 'node:fs';
import http from 'node:http';
import { chromium } from 'playwright-core';

const argv = process.argv.slice(2);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
const MCP = opt('--mcp');
const PAGE_PORT = Number(opt('--page-port'));
const HAR = opt('--har');
const LOG = opt('--log');
setTimeout(() => process.exit(3), Number(opt('--lifetime', '60')) * 1000).unref();
const log = (o) => { const l = JSON.stringify({ t: Date.now() / 1000, ...o }); if (LOG) fs.appendFileSync(LOG, l + '\n'); else console.log(l); };

const PAGE = `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>mcp page</title></head><body><script>
const U = ${JSON.stringify(MCP)};
let sid = null, out = [];
async function post(body, signal) {
  const h = { 'content-type': 'application/json', 'accept': 'application/json, text/event-stream' };
  if (sid) { h['mcp-session-id'] = sid; h['mcp-protocol-version'] = '2025-11-25'; }
  const r = await fetch(U, { method: 'POST', headers: h, body: JSON.stringify(body), signal });
  if (!sid && r.headers.get('mcp-session-id')) sid = r.headers.get('mcp-session-id');
  const t = await r.text();
  out.push({ id: body.id ?? null, method: body.method, status: r.status, body: t.slice(0, 200) });
}
(async () => {
  await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'samples-browser-page', version: '1.0.0' } } });
  await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'from chromium' } } });
  await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'fail', arguments: {} } });
  await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'slow', arguments: { steps: 2 }, _meta: { progressToken: 3 } } });
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 250);
  try { await post({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'slow', arguments: { steps: 4 }, _meta: { progressToken: 4 } } }, ac.signal); }
  catch (e) { out.push({ id: 4, aborted: String(e) }); }
  await new Promise((r) => setTimeout(r, 1200));
  const d = await fetch(U, { method: 'DELETE', headers: { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } });
  out.push({ method: 'DELETE', status: d.status });
  window.__out = out;
  document.title = 'done';
})().catch((e) => { window.__out = out.concat([{ fatal: String(e) }]); document.title = 'done'; });
</script></body></html>`;

const server = http.createServer((req, res) => {
  if (req.url === '/' || req.url === '/index.html') { res.writeHead(200, { 'content-type': 'text/html' }); res.end(PAGE); }
  else { res.writeHead(404).end(); }
});
await new Promise((r) => server.listen(PAGE_PORT, '127.0.0.1', r));

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
const context = await browser.newContext({ recordHar: { path: HAR, content: 'embed' } });
const page = await context.newPage();
await page.goto(`http://127.0.0.1:${PAGE_PORT}/`);
await page.waitForFunction(() => document.title === 'done', null, { timeout: 30000 });
log({ step: 'page_done', out: await page.evaluate(() => window.__out) });
await context.close();
await browser.close();
server.close();
log({ step: 'closed' });
process.exit(0);
