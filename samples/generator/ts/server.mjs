// MCP servers built with the TypeScript SDK, for the recordings in samples/.
// usage: node ts/server.mjs --port N [--mode sse|json|legacy] [--cors] [--lifetime S] [--hygiene-tools]
//                           [--auth-port A --resource URL [--token-ttl MS]]
//   sse    : Streamable HTTP, stateful (session ids), SSE responses, in-memory event store (resumable)
//   json   : same, with enableJsonResponse (application/json responses)
//   legacy : deprecated HTTP+SSE transport (GET /sse + POST /messages?sessionId=...)
// --auth-port: /mcp becomes an OAuth-protected resource (Bearer tokens checked like the SDK's
//   requireBearerAuth: 401 + WWW-Authenticate with resource_metadata), and a minimal authorization
//   server listens on 127.0.0.1:A: protected-resource metadata (RFC 9728), authorization-server
//   metadata (RFC 8414) and a token endpoint for the client_credentials grant (client_secret_basic,
//   client "samples-client" / "samples-secret"). Tokens expire after --token-ttl ms (default 1500).
// --hygiene-tools: also registers send_email (annotations { destructiveHint: true }: not read-only, not
//   idempotent by the protocol's defaults), get_weather (annotations { readOnlyHint: true }) and set_status
//   (annotations { idempotentHint: true }), for the retry-hygiene recordings. Without it the tool list is the one the older recordings were made with.
// --tls-cert FILE --tls-key FILE: serve /mcp over node:https instead of node:http (tls-* recordings).
// --mode stateless: Streamable HTTP without session ids (sessionIdGenerator undefined), JSON responses, a new
//   server + transport for every POST (the SDK's stateless example); GET and DELETE get 405. For the gateway
//   recordings, where a load balancer sends the calls of one client to several server processes.
// --gateway-tools: also registers sleepy (sleeps `seconds`, default 2, then answers), for the gateway recordings.
// --request-log FILE: appends one JSON line per HTTP exchange as this server saw it, in proxy.py's record
//   format (request line, headers, body; status, headers, body; times; resp_complete false when the client
//   closed the connection first), plus client_addr and server_addr. The gateway recordings' upstream truth.
import http from 'node:http';
import https from 'node:https';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { z } from 'zod';

const argv = process.argv.slice(2);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
const PORT = Number(opt('--port', '3001'));
const HOST = opt('--host', '127.0.0.1');
const MODE = opt('--mode', 'sse');
const CORS = argv.includes('--cors');
const LIFETIME = Number(opt('--lifetime', '120'));
const AUTH_PORT = opt('--auth-port') ? Number(opt('--auth-port')) : undefined;
const RESOURCE = opt('--resource');
const TOKEN_TTL_MS = Number(opt('--token-ttl', '1500'));
const HYGIENE_TOOLS = argv.includes('--hygiene-tools');
const GATEWAY_TOOLS = argv.includes('--gateway-tools');
const REQUEST_LOG = opt('--request-log');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function buildServer() {
  const server = new McpServer({ name: 'samples-ts-server', version: '1.0.0' });
  server.registerTool('echo', { description: 'Echo the text back', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }));
  server.registerTool('fail', { description: 'Always fails (isError result)', inputSchema: { reason: z.string().optional() } },
    async ({ reason }) => ({ isError: true, content: [{ type: 'text', text: `failed: ${reason ?? 'on purpose'}` }] }));
  server.registerTool('slow', { description: 'Sends progress notifications, then answers', inputSchema: { steps: z.number().int().min(1).max(5) } },
    async ({ steps }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= steps; i++) {
        await sleep(150);
        if (token !== undefined) {
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps, message: `step ${i}` } });
        }
      }
      await sleep(150);
      return { content: [{ type: 'text', text: `slow done after ${steps} steps` }] };
    });
  server.registerTool('boom', { description: 'Throws inside the handler', inputSchema: {} },
    async () => { throw new Error('boom: handler threw'); });
  if (HYGIENE_TOOLS) {
    let sent = 0;
    server.registerTool('send_email', {
      description: 'Sends an email (a side effect: calling it twice sends two emails)',
      inputSchema: { to: z.string(), subject: z.string() },
      annotations: { destructiveHint: true },
    }, async ({ to, subject }) => ({ content: [{ type: 'text', text: `sent email #${++sent} to ${to}: ${subject}` }] }));
    server.registerTool('get_weather', {
      description: 'Reads the weather for a city (no side effects)',
      inputSchema: { city: z.string() },
      annotations: { readOnlyHint: true },
    }, async ({ city }) => ({ content: [{ type: 'text', text: `weather in ${city}: sunny, 21 C` }] }));
    let status = 'unknown';
    server.registerTool('set_status', {
      description: 'Sets the status page (the same call twice leaves the same state)',
      inputSchema: { status: z.string() },
      annotations: { idempotentHint: true },
    }, async (args) => { status = args.status; return { content: [{ type: 'text', text: `status is ${status}` }] }; });
  }
  if (GATEWAY_TOOLS) {
    server.registerTool('sleepy', {
      description: 'Sleeps, then answers (slower than a gateway timeout)',
      inputSchema: { seconds: z.number().min(0).max(10).optional() },
    }, async ({ seconds }) => { await sleep((seconds ?? 2) * 1000); return { content: [{ type: 'text', text: `slept ${seconds ?? 2} s` }] }; });
  }
  server.registerPrompt('greet', { description: 'A greeting prompt', argsSchema: { name: z.string() } },
    ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello ${name}` } }] }));
  return server;
}

function cors(res) {
  if (!CORS) return;
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Allow-Methods', 'GET, POST, DELETE, OPTIONS');
  res.setHeader('Access-Control-Allow-Headers', 'content-type, accept, mcp-session-id, mcp-protocol-version, last-event-id');
  res.setHeader('Access-Control-Expose-Headers', 'mcp-session-id');
}

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString('utf8');
  req.loggedBody = text; // for --request-log
  try { return JSON.parse(text); } catch { return undefined; }
}

// --request-log: one record per exchange, written when the response finished or the connection closed
let reqSeq = 0;
function logExchange(req, res) {
  if (!REQUEST_LOG) return;
  const rec = {
    seq: ++reqSeq, t_req: (performance.timeOrigin + performance.now()) / 1000, method: req.method, path: req.url,
    req_headers: [], req_body: '', status: null, resp_headers: null, resp_body: '', t_resp_end: null,
    injected: null, cut: false, resp_complete: false,
    client_addr: `${req.socket.remoteAddress}:${req.socket.remotePort}`,
    server_addr: `${req.socket.localAddress}:${req.socket.localPort}`,
  };
  for (let i = 0; i < req.rawHeaders.length; i += 2) rec.req_headers.push([req.rawHeaders[i], req.rawHeaders[i + 1]]);
  const chunks = [];
  const keep = (c, enc) => { if (c) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c, typeof enc === 'string' ? enc : 'utf8')); };
  const inlineHeaders = [];
  const writeHead = res.writeHead.bind(res);
  res.writeHead = (status, ...rest) => {
    const h = rest.find((x) => x && typeof x === 'object');
    if (h) for (const [k, v] of Object.entries(h)) inlineHeaders.push([k, String(v)]);
    return writeHead(status, ...rest);
  };
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  res.write = (c, ...rest) => { keep(c, rest[0]); return write(c, ...rest); };
  res.end = (c, ...rest) => { if (typeof c !== 'function') keep(c, rest[0]); return end(c, ...rest); };
  let done = false;
  const finish = (complete) => {
    if (done) return;
    done = true;
    rec.req_body = req.loggedBody ?? '';
    rec.status = res.headersSent ? res.statusCode : null;
    if (res.headersSent) rec.resp_headers = [...Object.entries(res.getHeaders()).map(([k, v]) => [k, String(v)]), ...inlineHeaders];
    rec.resp_body = Buffer.concat(chunks).toString('utf8');
    rec.resp_complete = complete;
    rec.t_resp_end = (performance.timeOrigin + performance.now()) / 1000;
    if (!complete) rec.closed_by_client = true;
    fs.appendFileSync(REQUEST_LOG, JSON.stringify(rec) + '\n');
  };
  res.on('finish', () => finish(true));
  res.on('close', () => finish(res.writableFinished));
}

// --- OAuth (only with --auth-port) ------------------------------------------------------------
const tokens = new Map(); // access token -> expiry (ms since epoch)
let tokenCount = 0;
const AS_URL = AUTH_PORT ? `http://127.0.0.1:${AUTH_PORT}` : undefined;

// Same checks and header shape as the SDK's requireBearerAuth (server/auth/middleware/bearerAuth.js).
function checkBearer(req, res) {
  const fail = (code, description) => {
    res.writeHead(401, {
      'content-type': 'application/json',
      'www-authenticate': `Bearer error="${code}", error_description="${description}", resource_metadata="${AS_URL}/.well-known/oauth-protected-resource"`,
    });
    res.end(JSON.stringify({ error: code, error_description: description }));
    console.log(`auth: 401 ${req.method} ${description}`);
    return false;
  };
  const [type, token] = (req.headers.authorization ?? '').split(' ');
  if (!req.headers.authorization) return fail('invalid_token', 'Missing Authorization header');
  if (type.toLowerCase() !== 'bearer' || !token) return fail('invalid_token', "Invalid Authorization header format, expected 'Bearer TOKEN'");
  const exp = tokens.get(token);
  if (exp === undefined) return fail('invalid_token', 'Invalid token');
  if (exp < Date.now()) return fail('invalid_token', 'Token has expired');
  return true;
}

function startAuthServer() {
  const as = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    const json = (status, obj) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(obj)); };
    console.log(`as: ${req.method} ${url.pathname}`);
    if (req.method === 'GET' && url.pathname.startsWith('/.well-known/oauth-protected-resource')) {
      return json(200, { resource: RESOURCE, authorization_servers: [AS_URL], bearer_methods_supported: ['header'] });
    }
    if (req.method === 'GET' && (url.pathname.startsWith('/.well-known/oauth-authorization-server') || url.pathname.startsWith('/.well-known/openid-configuration'))) {
      return json(200, {
        issuer: AS_URL, token_endpoint: `${AS_URL}/token`, authorization_endpoint: `${AS_URL}/authorize`,
        response_types_supported: ['code'], grant_types_supported: ['client_credentials'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
      });
    }
    if (req.method === 'POST' && url.pathname === '/token') {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const basic = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /i, ''), 'base64').toString('utf8');
      const [id, secret] = basic.split(':').map(decodeURIComponent);
      if (id !== 'samples-client' || secret !== 'samples-secret') return json(401, { error: 'invalid_client' });
      if (form.get('grant_type') !== 'client_credentials') return json(400, { error: 'unsupported_grant_type' });
      const token = `tok-${++tokenCount}-${randomUUID().slice(0, 8)}`;
      tokens.set(token, Date.now() + TOKEN_TTL_MS);
      console.log(`as: issued ${token} (resource ${form.get('resource')})`);
      return json(200, { access_token: token, token_type: 'Bearer', expires_in: Math.ceil(TOKEN_TTL_MS / 1000) });
    }
    json(404, { error: 'not_found' });
  });
  as.listen(AUTH_PORT, '127.0.0.1', () => console.log(`authorization server on 127.0.0.1:${AUTH_PORT}`));
}
if (AUTH_PORT) startAuthServer();

const transports = new Map();

async function handleStreamable(req, res) {
  const url = new URL(req.url, 'http://x');
  if (url.pathname !== '/mcp') { res.writeHead(404).end('not found'); return; }
  if (AUTH_PORT && !checkBearer(req, res)) return;
  const sid = req.headers['mcp-session-id'];
  if (req.method === 'POST') {
    const body = await readJson(req);
    if (MODE === 'stateless') {
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      const server = buildServer();
      res.on('close', () => { transport.close(); server.close(); });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport && !sid && body && body.method === 'initialize') {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: MODE === 'json',
        eventStore: MODE === 'json' ? undefined : new InMemoryEventStore(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
      await buildServer().connect(transport);
    }
    if (!transport) {
      // Same shapes the SDK itself uses for a missing / unknown session.
      const status = sid ? 404 : 400;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: sid ? -32001 : -32000, message: sid ? 'Session not found' : 'Bad Request: No valid session ID provided' }, id: null }));
      return;
    }
    await transport.handleRequest(req, res, body);
    return;
  }
  if (MODE === 'stateless') { res.writeHead(405, { allow: 'POST' }).end(); return; }
  const transport = sid ? transports.get(sid) : undefined;
  if (!transport) { res.writeHead(sid ? 404 : 400).end(); return; }
  await transport.handleRequest(req, res);
}

const legacy = new Map();
async function handleLegacy(req, res) {
  const url = new URL(req.url, 'http://x');
  if (req.method === 'GET' && url.pathname === '/sse') {
    const transport = new SSEServerTransport('/messages', res);
    legacy.set(transport.sessionId, transport);
    res.on('close', () => legacy.delete(transport.sessionId));
    await buildServer().connect(transport);
    return;
  }
  if (req.method === 'POST' && url.pathname === '/messages') {
    const transport = legacy.get(url.searchParams.get('sessionId'));
    if (!transport) { res.writeHead(404).end('unknown session'); return; }
    await transport.handlePostMessage(req, res);
    return;
  }
  res.writeHead(404).end('not found');
}

const TLS = opt('--tls-cert') ? { cert: fs.readFileSync(opt('--tls-cert')), key: fs.readFileSync(opt('--tls-key')) } : undefined;
const handler = async (req, res) => {
  logExchange(req, res);
  cors(res);
  if (req.method === 'OPTIONS') { res.writeHead(204).end(); return; }
  try {
    if (MODE === 'legacy') await handleLegacy(req, res); else await handleStreamable(req, res);
  } catch (e) {
    console.error('server error', e);
    if (!res.headersSent) res.writeHead(500).end();
  }
};
const httpServer = TLS ? https.createServer(TLS, handler) : http.createServer(handler);
httpServer.listen(PORT, HOST, () => console.log(`ts server (${MODE}) listening on ${HOST}:${PORT}`));
setTimeout(() => process.exit(0), LIFETIME * 1000).unref();
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => process.exit(0));
