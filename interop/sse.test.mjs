// The official TypeScript SDK client drives the server over the HTTP+SSE transport of MCP
// 2024-11-05 (SSEClientTransport): the shared scenarios, error model and cancellation
// included, then the fallback on the MCP endpoint, the end of a session with its stream, and
// auth. With TOOLGRAIN_CLUSTER=3 the stream is held by one member and the POSTs reach all three.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport, SseError } from '@modelcontextprotocol/sdk/client/sse.js';

import { defineScenarios, recording } from './scenarios.mjs';
import { WATCHDOG_MS, startHTTPServer, withWatchdog } from './server.mjs';

let server;

before(async () => {
  server = await startHTTPServer();
});

after(async () => {
  assert.equal(await server.stop(), 0, 'SIGTERM exits 0');
});

async function connectSSE(url, token) {
  // The transport sends requestInit's headers on the GET and on every POST.
  const opts = token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {};
  const rec = recording(new SSEClientTransport(url, opts));
  const client = new Client({ name: 'toolgrain-interop-sse', version: '1.0.0' });
  await withWatchdog(client.connect(rec.transport), 'connect over HTTP+SSE');
  return {
    ...rec,
    client,
    // The URL the stream's endpoint event named (the transport keeps it privately).
    endpoint: rec.transport._endpoint,
    async close() {
      await client.close();
    },
  };
}

const sseURL = () => new URL('/sse', server.url);

defineScenarios(() => connectSSE(sseURL()));

// postTo sends one JSON-RPC message to url and resolves with the response's status.
async function postTo(url, body, token) {
  const headers = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
  await res.body?.cancel();
  return res.status;
}

test('the stream opened at /sse names /messages; a client falling back GETs /mcp and is named /mcp', async () => {
  const viaSSE = await connectSSE(sseURL());
  try {
    assert.equal(viaSSE.endpoint.pathname, '/messages');
    assert.match(viaSSE.endpoint.searchParams.get('sessionId'), /^[\x21-\x7E]{22,}$/);
  } finally {
    await viaSSE.close();
  }
  const fallback = await connectSSE(server.url);
  try {
    assert.equal(fallback.endpoint.pathname, server.url.pathname);
    assert.deepEqual(await fallback.client.callTool({ name: 'echo', arguments: { text: 'fallback' } }),
      { content: [{ type: 'text', text: 'fallback' }] });
  } finally {
    await fallback.close();
  }
});

test('closing the stream ends the session: its POST URL answers 404', async () => {
  const c = await connectSSE(sseURL());
  const endpoint = c.endpoint;
  assert.equal(await postTo(endpoint, { jsonrpc: '2.0', id: 'p', method: 'ping' }), 202);
  await c.close();
  // The server sees the connection close on its own time: poll, bounded by the watchdog.
  const deadline = Date.now() + WATCHDOG_MS;
  let status;
  while ((status = await postTo(endpoint, { jsonrpc: '2.0', id: 'p', method: 'ping' })) === 202 && Date.now() < deadline) await delay(20);
  assert.equal(status, 404);
});

test('auth: the bearer token is checked on the GET and on every POST', async () => {
  const authed = await startHTTPServer(['--auth-token', 'good-token', '--auth-token', 'other-token']);
  try {
    await assert.rejects(connectSSE(new URL('/sse', authed.url)), (err) => err instanceof SseError && err.code === 401);
    const c = await connectSSE(new URL('/sse', authed.url), 'good-token');
    try {
      assert.deepEqual(await c.client.callTool({ name: 'echo', arguments: { text: 'authorized' } }),
        { content: [{ type: 'text', text: 'authorized' }] });
      const ping = { jsonrpc: '2.0', id: 'p', method: 'ping' };
      assert.equal(await postTo(c.endpoint, ping), 401);
      assert.equal(await postTo(c.endpoint, ping, 'other-token'), 404, 'another subject does not find the session');
      assert.equal(await postTo(c.endpoint, ping, 'good-token'), 202);
    } finally {
      await c.close();
    }
  } finally {
    assert.equal(await authed.stop(), 0, 'SIGTERM exits 0');
  }
});
