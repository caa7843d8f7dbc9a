// The official TypeScript client 2.4 in its default negotiation mode ('legacy': the
// initialize handshake, no probe) still reaches the server's 2025-11-25 era, over stdio and
// Streamable HTTP; configured for an older revision (supportedProtocolVersions), it gets that
// revision, answered in its shape.
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

// handshakeAt connects a client that speaks only version, and checks the session's shape: the
// version negotiated, the tool list and a structured result as that revision has them.
async function handshakeAt(transport, version) {
  const client = new Client({ name: 'toolgrain-interop', version: '1.0.0' }, { supportedProtocolVersions: [version] });
  try {
    await withWatchdog(client.connect(transport), 'connect');
    assert.equal(client.getProtocolEra(), 'legacy');
    assert.equal(client.getNegotiatedProtocolVersion(), version);
    const { tools } = await withWatchdog(client.listTools(), 'tools/list');
    const greet = tools.find((t) => t.name === 'greet');
    assert.equal(greet.outputSchema !== undefined, version >= '2025-06-18', `outputSchema in ${version}`);
    const res = await withWatchdog(client.callTool({ name: 'greet', arguments: { name: 'Ada' } }), 'greet');
    assert.deepEqual(res.content, [{ type: 'text', text: '{"greeting":"Hello, Ada!"}' }]);
    assert.equal(res.structuredContent !== undefined, version >= '2025-06-18', `structuredContent in ${version}`);
    const failed = await withWatchdog(client.callTool({ name: 'fail', arguments: { mode: 'error' } }), 'fail');
    assert.deepEqual(failed, { content: [{ type: 'text', text: 'Tool execution failed' }], isError: true });
  } finally {
    if (transport.sessionId !== undefined) await withWatchdog(transport.terminateSession(), 'ending the session');
    await withWatchdog(client.close(), 'close');
  }
}

for (const version of ['2024-11-05', '2025-03-26', '2025-06-18']) {
  test(`stdio: a client of ${version} gets ${version}`, () => handshakeAt(new StdioClientTransport({
    command: serverBinary(),
    args: ['--log-level', 'error'],
    stderr: 'ignore',
  }), version));

  test(`Streamable HTTP: a client of ${version} gets ${version}`, () => handshakeAt(new StreamableHTTPClientTransport(server.url), version));
}
