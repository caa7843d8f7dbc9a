// The official TypeScript SDK client drives the server over Streamable HTTP: the shared
// scenarios, then sessions and the auth rows.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { defineScenarios, recording } from './scenarios.mjs';
import { MARKER, startHTTPServer, withWatchdog } from './server.mjs';

let server;

before(async () => {
  server = await startHTTPServer();
});

after(async () => {
  assert.equal(await server.stop(), 0, 'SIGTERM exits 0');
});

async function connectHTTP(url, token) {
  const opts = token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {};
  const rec = recording(new StreamableHTTPClientTransport(url, opts));
  const client = new Client({ name: 'toolgrain-interop', version: '1.0.0' });
  await withWatchdog(client.connect(rec.transport), 'connect over HTTP');
  return {
    ...rec,
    client,
    async close() {
      await rec.transport.terminateSession();
      await client.close();
    },
  };
}

defineScenarios(() => connectHTTP(server.url));

test('a session has a visible-ASCII id and ends on DELETE, then answers 404', async () => {
  const c = await connectHTTP(server.url);
  const id = c.transport.sessionId;
  try {
    assert.match(id, /^[\x21-\x7E]{22,}$/);
    await c.transport.terminateSession();
    assert.equal(c.transport.sessionId, undefined);
  } finally {
    await c.client.close();
  }
  // A client that still holds the ended session's id gets 404.
  const stale = new StreamableHTTPClientTransport(server.url, { sessionId: id });
  await assert.rejects(stale.send({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    (err) => err instanceof StreamableHTTPError && err.code === 404);
  await stale.close();
});

test('auth rows with the demo verifier', async (t) => {
  const diag = path.join(mkdtempSync(path.join(tmpdir(), 'toolgrain-diag-')), 'diag.jsonl');
  const authed = await startHTTPServer([
    '--auth-token', 'good-token', '--auth-token', 'narrow-token:read', '--auth-scope', 'tools',
    '--authorization-server', 'https://auth.example.com',
    '--diagnostics-file', diag,
  ]);
  try {
    const rejectsWith = (token, code) => assert.rejects(connectHTTP(authed.url, token), (err) => {
      assert.ok(err instanceof StreamableHTTPError, `${err}`);
      assert.equal(err.code, code);
      assert.ok(!err.message.includes(MARKER), `no internal detail: ${err.message}`);
      return true;
    });

    await t.test('missing token: 401', () => rejectsWith(undefined, 401));
    await t.test('unknown token: 401', () => rejectsWith('guess', 401));
    await t.test('token without the needed scope: 403', () => rejectsWith('narrow-token', 403));
    await t.test('verifier outage: 503 with no internal detail', () => rejectsWith('auth-outage', 503));

    await t.test('the challenge leads to the protected-resource metadata', async () => {
      const res = await fetch(authed.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      await res.body?.cancel();
      assert.equal(res.status, 401);
      const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(res);
      assert.equal(resourceMetadataUrl.href, new URL('/.well-known/oauth-protected-resource/mcp', authed.url).href);
      assert.equal(scope, 'tools');
      const meta = await discoverOAuthProtectedResourceMetadata(authed.url, { resourceMetadataUrl });
      assert.equal(meta.resource, authed.url.href);
      assert.deepEqual(meta.authorization_servers, ['https://auth.example.com']);
      assert.deepEqual(meta.scopes_supported, ['tools']);
      // The path-suffixed location, found without the challenge's help.
      assert.equal((await discoverOAuthProtectedResourceMetadata(authed.url)).resource, authed.url.href);
    });

    await t.test('a valid token works end to end', async () => {
      const c = await connectHTTP(authed.url, 'good-token');
      try {
        assert.deepEqual(await c.client.callTool({ name: 'echo', arguments: { text: 'authorized' } }),
          { content: [{ type: 'text', text: 'authorized' }] });
      } finally {
        await c.close();
      }
    });
  } finally {
    assert.equal(await authed.stop(), 0, 'SIGTERM exits 0');
  }
  // The operator got the outage privately: the original error, with no tool details.
  const reports = readFileSync(diag, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(reports.length, 1, JSON.stringify(reports));
  assert.ok(reports[0].error.includes(MARKER));
  assert.equal(reports[0].tool, undefined);
  assert.equal(reports[0].request_id, undefined);
});
