// The official TypeScript client 2.4 in its default negotiation mode ('legacy': the
// initialize handshake, no probe) still reaches the server's 2025-11-25 era, over stdio and
// Streamable HTTP.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { assertNoChildProcesses, serverBinary, startHTTPServer, withWatchdog } from './server.mjs';

let server;

before(async () => {
  server = await startHTTPServer();
});

after(async () => {
  assert.equal(await server.stop(), 0, 'SIGTERM exits 0');
  await assertNoChildProcesses();
});

async function handshakeAndCall(transport) {
  const client = new Client({ name: 'toolgrain-interop', version: '1.0.0' });
  try {
    await withWatchdog(client.connect(transport), 'connect');
    assert.equal(client.getProtocolEra(), 'legacy');
    assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
    assert.equal(client.getServerVersion().name, 'toolgrain-demo');
    assert.deepEqual(client.getServerCapabilities().tools, { listChanged: true });
    assert.equal(client.getInstructions(), 'Demonstration tools: echo, greet, sleep, fail and spin.');
    const res = await withWatchdog(client.callTool({ name: 'echo', arguments: { text: 'hello' } }), 'echo');
    assert.deepEqual(res, { content: [{ type: 'text', text: 'hello' }] });
  } finally {
    if (transport.sessionId !== undefined) await withWatchdog(transport.terminateSession(), 'ending the session');
    await withWatchdog(client.close(), 'close');
  }
}

test('stdio: the initialize handshake and a tool call', () => handshakeAndCall(new StdioClientTransport({
  command: serverBinary(),
  args: ['--log-level', 'error'],
  stderr: 'ignore',
})));

test('Streamable HTTP: the initialize handshake and a tool call', () => handshakeAndCall(new StreamableHTTPClientTransport(server.url)));
