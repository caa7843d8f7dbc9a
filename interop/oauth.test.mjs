// The official TypeScript SDK client, with its OAuth support, against the server binary behind a
// real authorization server (oidc-provider, interop/oidc, under its pinned Node 22): from the 401
// challenge to the protected-resource metadata, the authorization server's metadata, a token by
// the client credentials grant for the server's resource, and the call; then the 403 step-up
// challenge of a tool that needs one more scope, answered by a new token and a retry. Over the
// HTTP+SSE transport too, where the resource is the URL of /sse.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';

import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  Client as Client24,
  ClientCredentialsProvider as Client24CredentialsProvider,
  StreamableHTTPClientTransport as Transport24,
} from '@modelcontextprotocol/client';

import { repoRoot, startHTTPServer, withWatchdog } from './server.mjs';

const asDir = path.join(repoRoot, 'interop', 'oidc');

let as; // { issuer, stop() }
let server;

// startAuthServer runs interop/oidc/server.mjs with a fresh RSA key and resolves once it
// listens.
async function startAuthServer() {
  const node = path.join(asDir, 'node_modules', '.bin', 'node');
  if (!existsSync(path.join(asDir, 'node_modules', 'oidc-provider'))) {
    throw new Error(`oidc-provider is not installed: run npm ci in ${asDir}`);
  }
  const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const keys = path.join(mkdtempSync(path.join(tmpdir(), 'toolgrain-oidc-')), 'keys.json');
  writeFileSync(keys, JSON.stringify({ keys: [{ ...jwk, kid: 'r1', alg: 'RS256', use: 'sig' }] }));
  const proc = spawn(node, ['server.mjs', keys, '0'], { cwd: asDir, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal)));
  const lines = createInterface({ input: proc.stdout });
  const first = await withWatchdog(new Promise((resolve, reject) => {
    lines.once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`authorization server exited with ${code}`)));
  }), 'authorization server start');
  return {
    issuer: JSON.parse(first).issuer,
    async stop() {
      proc.stdin.end(); // it exits when its standard input closes
      return withWatchdog(exited, 'authorization server exit');
    },
  };
}

before(async () => {
  as = await startAuthServer();
  server = await startHTTPServer(['--auth-issuer', as.issuer, '--auth-scope', 'tools:call', '--tool-scope', 'fail=admin']);
});

after(async () => {
  assert.equal(await server.stop(), 0, 'server: SIGTERM exits 0');
  assert.equal(await as.stop(), 0, 'authorization server exits 0');
});

// recorder returns a fetch that records every request the client sends, to the MCP server and
// to the authorization server, and the list it records into.
function recorder() {
  const sent = [];
  const fetchFn = async (url, init) => {
    const res = await fetch(url, init);
    const u = new URL(url instanceof Request ? url.url : url);
    const form = init?.body instanceof URLSearchParams ? init.body : new URLSearchParams(u.pathname === '/token' && typeof init?.body === 'string' ? init.body : '');
    const where = u.origin === server.url.origin ? 'mcp' : u.origin === as.issuer ? 'as' : u.origin;
    sent.push({ step: `${init?.method ?? 'GET'} ${where}${u.pathname} ${res.status}`, status: res.status, path: u.pathname,
      scope: form.get('scope'), resource: form.get('resource'), grant: form.get('grant_type'),
      challenge: res.headers.get('www-authenticate') });
    return res;
  };
  return { sent, fetchFn };
}

// assertDiscovery checks the start of an OAuth flow: the first POST refused with the 401
// challenge, the protected-resource metadata it points to, the authorization server's metadata,
// one token by the client credentials grant for the server as resource (RFC 8707) with the
// scope the challenge named, then the request again, accepted.
function assertDiscovery(sent) {
  const steps = sent.map((r) => r.step);
  const all = steps.join('\n');
  assert.equal(steps[0], 'POST mcp/mcp 401', all);
  assert.match(sent[0].challenge, /^Bearer resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp", scope="tools:call"$/);
  assert.ok(steps.includes('GET mcp/.well-known/oauth-protected-resource/mcp 200'), all);
  assert.ok(steps.some((s) => /^GET as\/\.well-known\/(oauth-authorization-server|openid-configuration) 200$/.test(s)), all);
  const tokens = sent.filter((r) => r.path === '/token');
  assert.equal(tokens.length, 1, all);
  assert.equal(tokens[0].grant, 'client_credentials');
  assert.equal(tokens[0].resource, server.url.href);
  assert.equal(tokens[0].scope, 'tools:call');
  assert.equal(tokens[0].status, 200);
  assert.match(steps.at(-1), /^POST mcp\/mcp 20[02]$/, all);
}

const echoed = { content: [{ type: 'text', text: 'authorized' }] };
const publicFailure = { content: [{ type: 'text', text: 'public failure message' }], isError: true };

test('SDK 1.32.2: discovery from the 401, a token for the resource, the call; the 403 challenge of a tool that needs admin', async () => {
  const { sent, fetchFn } = recorder();
  const provider = new ClientCredentialsProvider({ clientId: 'mcp-client', clientSecret: 'mcp-secret', expectedIssuer: as.issuer, scope: 'tools:call' });
  const transport = new StreamableHTTPClientTransport(server.url, { authProvider: provider, fetch: fetchFn });
  const client = new Client({ name: 'toolgrain-oauth', version: '1.0.0' });
  try {
    await withWatchdog(client.connect(transport), 'connect with OAuth');
    assertDiscovery(sent);
    assert.deepEqual(await client.callTool({ name: 'echo', arguments: { text: 'authorized' } }), echoed);

    // fail needs admin. SDK 1.32.2's client credentials provider asks for its configured scope
    // again (not the challenge's), so it gets the same token scope and gives up: the 403 and
    // its challenge reached it.
    const before = sent.length;
    await assert.rejects(withWatchdog(client.callTool({ name: 'fail', arguments: { mode: 'result' } }), 'fail'),
      (err) => err instanceof StreamableHTTPError && err.code === 403);
    const refused = sent.slice(before).find((r) => r.status === 403);
    assert.equal(refused.challenge, `Bearer error="insufficient_scope", scope="tools:call admin", resource_metadata="${new URL('/.well-known/oauth-protected-resource/mcp', server.url)}", error_description="Insufficient scope: tool \\"fail\\" needs the scope admin"`);
  } finally {
    await client.close();
  }

  // Configured for both scopes, it calls fail.
  const wide = new ClientCredentialsProvider({ clientId: 'mcp-client', clientSecret: 'mcp-secret', expectedIssuer: as.issuer, scope: 'tools:call admin' });
  const c2 = new Client({ name: 'toolgrain-oauth', version: '1.0.0' });
  try {
    await withWatchdog(c2.connect(new StreamableHTTPClientTransport(server.url, { authProvider: wide })), 'connect with admin');
    assert.deepEqual(await c2.callTool({ name: 'fail', arguments: { mode: 'result' } }), publicFailure);
  } finally {
    await c2.close();
  }
});

// SSEClientTransport takes the URL it connects to, /sse, as the resource: it reads the metadata
// the GET's challenge names, checks that its resource is that URL (or a prefix of it), asks for
// a token for it, and sends that token on the GET and on every POST to /messages, which the
// server checks for the same audience.
test('SDK 1.32.2 over HTTP+SSE: discovery from the GET\'s 401, a token for /sse, the calls on the stream', async () => {
  const { sent, fetchFn } = recorder();
  const provider = new ClientCredentialsProvider({ clientId: 'mcp-client', clientSecret: 'mcp-secret', expectedIssuer: as.issuer, scope: 'tools:call' });
  const sse = new URL('/sse', server.url);
  const transport = new SSEClientTransport(sse, { authProvider: provider, fetch: fetchFn });
  const client = new Client({ name: 'toolgrain-oauth-sse', version: '1.0.0' });
  try {
    await withWatchdog(client.connect(transport), 'connect over HTTP+SSE with OAuth');
    const steps = sent.map((r) => r.step);
    const all = steps.join('\n');
    assert.equal(steps[0], 'GET mcp/sse 401', all);
    assert.equal(sent[0].challenge, `Bearer resource_metadata="${new URL('/.well-known/oauth-protected-resource/sse', server.url)}", scope="tools:call"`);
    assert.ok(steps.includes('GET mcp/.well-known/oauth-protected-resource/sse 200'), all);
    const tokens = sent.filter((r) => r.path === '/token');
    assert.equal(tokens.length, 1, all);
    assert.equal(tokens[0].resource, sse.href);
    assert.equal(tokens[0].status, 200);
    assert.ok(steps.includes('GET mcp/sse 200'), all);
    assert.ok(steps.some((s) => s === 'POST mcp/messages 202'), all);
    assert.deepEqual(await withWatchdog(client.callTool({ name: 'echo', arguments: { text: 'authorized' } }), 'echo'), echoed);
    assert.deepEqual(await withWatchdog(client.callTool({ name: 'echo', arguments: { text: 5 } }), 'echo, invalid'),
      { content: [{ type: 'text', text: 'invalid arguments: text: must be string, got number' }], isError: true });
    assert.ok(sent.filter((r) => r.path === '/messages').every((r) => r.status === 202), sent.map((r) => r.step).join('\n'));
  } finally {
    await client.close();
  }
});

// Client 2.4 asks for the scopes a challenge names: the whole flow, step-up included, in both
// eras. The 2025-11-25 challenge names the scopes the token holds and those the call needs; the
// 2026-07-28 one names those the call needs, which the client adds to those it asked for.
for (const [era, versionNegotiation] of [['2025-11-25 (legacy mode)', undefined], ['2026-07-28 (pinned)', { mode: { pin: '2026-07-28' } }]]) {
  test(`client 2.4, ${era}: discovery, a token, the call, then the step-up for a tool that needs admin`, async () => {
    const { sent, fetchFn } = recorder();
    const provider = new Client24CredentialsProvider({ clientId: 'mcp-client', clientSecret: 'mcp-secret', expectedIssuer: as.issuer });
    const transport = new Transport24(server.url, { authProvider: provider, fetch: fetchFn });
    const client = new Client24({ name: 'toolgrain-oauth', version: '1.0.0' }, versionNegotiation ? { versionNegotiation } : {});
    try {
      await withWatchdog(client.connect(transport), 'connect with OAuth');
      assertDiscovery(sent);
      assert.deepEqual((await client.callTool({ name: 'echo', arguments: { text: 'authorized' } })).content, echoed.content);

      const before = sent.length;
      const res = await withWatchdog(client.callTool({ name: 'fail', arguments: { mode: 'result' } }), 'step-up');
      assert.deepEqual(versionNegotiation ? { content: res.content, isError: res.isError } : res, publicFailure);
      const stepUp = sent.slice(before);
      const steps = stepUp.map((r) => r.step).join('\n');
      // In the legacy era the client's standalone GET stream may open (or reopen) at any point
      // in between, so the call is followed by its POSTs.
      const posts = stepUp.filter((r) => r.step.startsWith('POST mcp/'));
      assert.equal(posts[0].status, 403, steps);
      // Here both revisions name the same scopes: the token holds only the endpoint's.
      assert.match(posts[0].challenge, /^Bearer error="insufficient_scope", scope="tools:call admin", resource_metadata="/);
      const tokens = stepUp.filter((r) => r.path === '/token');
      assert.equal(tokens.length, 1, steps);
      assert.equal(tokens[0].scope.split(' ').sort().join(' '), 'admin tools:call', steps);
      assert.equal(posts.at(-1).status, 200, steps);
    } finally {
      if (transport.sessionId !== undefined) await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });
}
