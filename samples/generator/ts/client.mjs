// MCP client built with the TypeScript SDK, for the recordings in samples/.
// usage: node ts/client.mjs --url URL --steps a,b,c [--log FILE] [--legacy] [--lifetime S] [--auth-issuer AS_URL]
// Steps: list | echo:TEXT | fail | unknown | badargs | boom | prompt_unknown | slow:N |
//        retry_echo:TEXT (call echo; on error wait 300 ms and call it again: an application retry) |
//        reinit_echo:TEXT (call echo; on HTTP 404 - session unknown to the server - close the client, open a
//                          new transport, connect again (new initialize, new session) and call echo again) |
//        sleep:MS | delete (terminateSession) | hold:MS (stay connected, idle) |
//        plan:I (run retry plan I of --plans, see below) |
//        invalid_args_resend (tools/call echo with `arguments` a string through the low-level
//                             client.request; on the JSON-RPC error wait 300 ms and send the same params
//                             again with a new id; then call echo with proper arguments)
// --plans JSON: a list of application retry policies, [{tool, args, attempts, delays_ms: [..],
//   retry_after: "ignore"|"honour", timeout_ms}]: call the tool (with the SDK's request timeout, which sends
//   notifications/cancelled when it fires, if timeout_ms is given); while it throws and attempts are left, wait
//   delays_ms[i] (the last one repeats) and call it again (a new JSON-RPC id each time, same arguments).
//   With "honour", a Retry-After on the failed response (seconds or HTTP-date) sets the wait instead,
//   plus 300 ms. The SDK hides response headers from the application, so with --plans the transport
//   gets a fetch wrapper that keeps the last response's status, Retry-After and Date.
// --headers JSON: extra request headers for every request of the transport (requestInit.headers).
// --auth-issuer: the transport gets the SDK's own ClientCredentialsProvider (client_credentials grant,
//   client "samples-client"), so the SDK itself handles 401s: auth() then the same message re-sent.
import fs from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const argv = process.argv.slice(2);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
const URL_ = opt('--url');
const STEPS = (opt('--steps', 'list')).split(',').filter(Boolean);
const LOG = opt('--log');
const LIFETIME = Number(opt('--lifetime', '60'));
setTimeout(() => { log({ event: 'lifetime_exceeded' }); process.exit(3); }, LIFETIME * 1000).unref();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function log(obj) {
  const line = JSON.stringify({ t: Date.now() / 1000, ...obj });
  if (LOG) fs.appendFileSync(LOG, line + '\n'); else console.log(line);
}

const ISSUER = opt('--auth-issuer');
const authProvider = ISSUER
  ? new ClientCredentialsProvider({ clientId: 'samples-client', clientSecret: 'samples-secret', expectedIssuer: ISSUER })
  : undefined;
const PLANS = opt('--plans') ? JSON.parse(opt('--plans')) : undefined;
const HEADERS = opt('--headers') ? JSON.parse(opt('--headers')) : undefined;
let lastResponse = null; // {status, retryAfter, date} of the last HTTP response (only with --plans)
const watchingFetch = async (url, init) => {
  const r = await fetch(url, init);
  lastResponse = { status: r.status, retryAfter: r.headers.get('retry-after'), date: r.headers.get('date') };
  return r;
};
const transportOpts = () => {
  const o = {};
  if (authProvider) o.authProvider = authProvider;
  if (PLANS) o.fetch = watchingFetch;
  if (HEADERS) o.requestInit = { headers: HEADERS };
  return Object.keys(o).length ? o : undefined;
};
const newTransport = () => (argv.includes('--legacy')
  ? new SSEClientTransport(new URL(URL_))
  : new StreamableHTTPClientTransport(new URL(URL_), transportOpts()));

// Milliseconds to wait as a Retry-After asks: delay-seconds, or an HTTP-date (never before it, and
// never before the response's Date + the same difference, whichever is later).
function retryAfterMs(resp) {
  const v = resp?.retryAfter;
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const when = Date.parse(v);
  if (Number.isNaN(when)) return undefined;
  const byDateHeader = resp.date && !Number.isNaN(Date.parse(resp.date)) ? when - Date.parse(resp.date) : 0;
  return Math.max(when - Date.now(), byDateHeader, 0);
}

async function runPlan(plan) {
  const delays = plan.delays_ms ?? [300];
  for (let attempt = 1; ; attempt++) {
    lastResponse = null; // a failure without any HTTP response leaves none
    try {
      await call(plan.tool, plan.args, plan.timeout_ms ? { timeout: plan.timeout_ms } : {});
      log({ step: 'plan_attempt', tool: plan.tool, attempt, ok: true });
      return;
    } catch (e) {
      const resp = lastResponse;
      log({ step: 'plan_attempt', tool: plan.tool, attempt, ok: false, status: resp?.status, retryAfter: resp?.retryAfter ?? null });
      if (attempt >= plan.attempts) { log({ step: 'plan_gave_up', tool: plan.tool, attempts: attempt }); return; }
      let wait = delays[Math.min(attempt - 1, delays.length - 1)];
      const ra = retryAfterMs(resp);
      if (plan.retry_after === 'honour' && ra !== undefined) wait = ra + 300;
      log({ step: 'app_retry', tool: plan.tool, after_ms: wait, retry_after: resp?.retryAfter ?? null, policy: plan.retry_after ?? 'ignore' });
      await sleep(wait);
    }
  }
}

async function invalidArgsResend() {
  const params = { name: 'echo', arguments: 'not an object' };
  for (let i = 1; i <= 2; i++) {
    try {
      const r = await client.request({ method: 'tools/call', params }, CallToolResultSchema);
      log({ step: 'invalid_args', attempt: i, ok: true, isError: r.isError ?? false, text: r.content?.[0]?.text });
    } catch (e) {
      log({ step: 'invalid_args', attempt: i, ok: false, code: e.code, error: String(e.message ?? e) });
    }
    await sleep(300);
  }
  await call('echo', { text: 'fixed arguments' });
}
let transport = newTransport();
const client = new Client({ name: 'samples-ts-client', version: '1.0.0' });

async function call(name, args, extra = {}) {
  try {
    const r = await client.callTool({ name, arguments: args }, undefined, extra);
    log({ step: 'tools/call', tool: name, ok: true, isError: r.isError ?? false, text: r.content?.[0]?.text });
    return r;
  } catch (e) {
    log({ step: 'tools/call', tool: name, ok: false, error: String(e.message ?? e), code: e.code });
    throw e;
  }
}

async function main() {
  await client.connect(transport);
  log({ step: 'connected', sessionId: transport.sessionId ?? null, protocolVersion: transport.protocolVersion ?? null });
  for (const step of STEPS) {
    const [name, arg] = step.split(':');
    try {
      if (name === 'list') { const r = await client.listTools(); log({ step: 'tools/list', ok: true, n: r.tools.length }); }
      else if (name === 'echo') await call('echo', { text: arg ?? 'hello' });
      else if (name === 'fail') await call('fail', { reason: 'on purpose' });
      else if (name === 'unknown') await call('no_such_tool', {});
      else if (name === 'badargs') await call('echo', { text: 42 });
      else if (name === 'boom') await call('boom', {});
      else if (name === 'prompt_unknown') {
        try { await client.getPrompt({ name: 'no_such_prompt', arguments: {} }); log({ step: 'prompts/get', ok: true }); }
        catch (e) { log({ step: 'prompts/get', ok: false, code: e.code, error: e.message }); }
      }
      else if (name === 'slow') await call('slow', { steps: Number(arg ?? 3) }, { onprogress: (p) => log({ step: 'progress', progress: p.progress, total: p.total }) });
      else if (name === 'retry_echo') {
        try { await call('echo', { text: arg ?? 'retry me' }); }
        catch (e) {
          log({ step: 'app_retry', after_ms: 300, reason: String(e.message ?? e) });
          await sleep(300);
          await call('echo', { text: arg ?? 'retry me' });
        }
      }
      else if (name === 'reinit_echo') {
        try { await call('echo', { text: arg ?? 'again' }); }
        catch (e) {
          if (e.code !== 404) throw e;
          // The SDK does not start a new session by itself on 404 (it throws StreamableHTTPError 404):
          // the application re-establishes it, as the spec asks, and calls the tool again.
          log({ step: 'app_reinit', old_session: transport.sessionId ?? null, reason: String(e.message ?? e) });
          await client.close();
          transport = newTransport();
          await client.connect(transport);
          log({ step: 'connected', sessionId: transport.sessionId ?? null, protocolVersion: transport.protocolVersion ?? null });
          await call('echo', { text: arg ?? 'again' });
        }
      }
      else if (name === 'sleep' || name === 'hold') await sleep(Number(arg ?? 500));
      else if (name === 'plan') await runPlan(PLANS[Number(arg)]);
      else if (name === 'invalid_args_resend') await invalidArgsResend();
      else if (name === 'delete') { await transport.terminateSession(); log({ step: 'delete', ok: true }); }
      else log({ step: name, error: 'unknown step' });
    } catch (e) {
      log({ step: name, ok: false, error: String(e.message ?? e) });
    }
  }
  await client.close();
  log({ step: 'closed' });
}
// --exit-delay MS: Node writes --tls-keylog lines asynchronously; process.exit right after the last
// request loses the last connection's secrets (seen in the tls-* recordings), so TLS runs wait a little.
const EXIT_DELAY = Number(opt('--exit-delay', '0'));
const exitLater = (code) => setTimeout(() => process.exit(code), EXIT_DELAY);
main().then(() => exitLater(0), (e) => { log({ step: 'fatal', error: String(e.stack ?? e) }); exitLater(1); });
