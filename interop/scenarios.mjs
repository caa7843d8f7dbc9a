// The scenarios every transport must pass with the official TypeScript SDK client.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { MARKER, withWatchdog } from './server.mjs';

const FAILED = 'Tool execution failed';

// recording wraps a transport so a test sees every message that reaches the client and every
// transport error, in order. The client chains these handlers when it connects.
export function recording(transport) {
  const seen = [];
  const errors = [];
  transport.onmessage = (msg) => seen.push(msg);
  transport.onerror = (err) => errors.push(err);
  return { transport, seen, errors };
}

// defineScenarios registers the shared tests. connect() resolves to
// { client, seen, errors, close() } with a connected, initialized client.
export function defineScenarios(connect) {
  test('handshake: server info, capabilities and instructions', async () => {
    const c = await connect();
    try {
      assert.equal(c.client.getServerVersion().name, 'toolgrain-demo');
      assert.deepEqual(c.client.getServerCapabilities().tools, { listChanged: true });
      assert.equal(c.client.getInstructions(), 'Demonstration tools: echo, greet, sleep, fail and spin.');
      await c.client.ping();
    } finally {
      await c.close();
    }
  });

  test('tools/list names every demonstration tool with a description and schema', async () => {
    const c = await connect();
    try {
      const { tools } = await c.client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['echo', 'greet', 'sleep', 'fail', 'spin']);
      for (const t of tools) {
        assert.ok(t.description, `${t.name} has a description`);
        assert.equal(t.inputSchema.type, 'object');
      }
      assert.deepEqual(tools.find((t) => t.name === 'greet').outputSchema.required, ['greeting']);
    } finally {
      await c.close();
    }
  });

  test('every demonstration tool answers as documented', async () => {
    const c = await connect();
    try {
      await c.client.listTools(); // so the client validates structured output against the schemas
      assert.deepEqual(await c.client.callTool({ name: 'echo', arguments: { text: 'hello' } }),
        { content: [{ type: 'text', text: 'hello' }] });
      assert.deepEqual(await c.client.callTool({ name: 'greet', arguments: { name: 'Ada' } }),
        { content: [{ type: 'text', text: '{"greeting":"Hello, Ada!"}' }], structuredContent: { greeting: 'Hello, Ada!' } });
      assert.deepEqual(await c.client.callTool({ name: 'sleep', arguments: { ms: 10 } }),
        { content: [{ type: 'text', text: 'slept' }] });
      assert.deepEqual(await c.client.callTool({ name: 'spin', arguments: { ms: 10 } }),
        { content: [{ type: 'text', text: 'spun' }] });
    } finally {
      await c.close();
    }
  });

  test('every fail mode: the public result, or the generic failure with no internal detail', async () => {
    const c = await connect();
    try {
      await c.client.listTools();
      assert.deepEqual(await c.client.callTool({ name: 'fail', arguments: { mode: 'result' } }),
        { content: [{ type: 'text', text: 'public failure message' }], isError: true });
      for (const mode of ['error', 'panic', 'bad-output', 'provider']) {
        const res = await c.client.callTool({ name: 'fail', arguments: { mode } });
        assert.deepEqual(res, { content: [{ type: 'text', text: FAILED }], isError: true }, mode);
      }
      assert.ok(!JSON.stringify(c.seen).includes(MARKER), 'no internal detail on the wire');
    } finally {
      await c.close();
    }
  });

  test('validation feedback names the field and the rule', async () => {
    const c = await connect();
    try {
      assert.deepEqual(await c.client.callTool({ name: 'sleep', arguments: { ms: 700000 } }),
        { content: [{ type: 'text', text: 'invalid arguments: ms: must be <= 600000' }], isError: true });
      assert.deepEqual(await c.client.callTool({ name: 'echo', arguments: {} }),
        { content: [{ type: 'text', text: 'invalid arguments: text: missing property' }], isError: true });
      assert.deepEqual(await c.client.callTool({ name: 'fail', arguments: { mode: 'nope' } }),
        { content: [{ type: 'text', text: 'invalid arguments: mode: must be one of "result", "error", "panic", "bad-output", "provider"' }], isError: true });
      await assert.rejects(c.client.callTool({ name: 'nope', arguments: {} }),
        (err) => err instanceof McpError && err.code === -32602 && err.message.includes('unknown tool "nope"'));
    } finally {
      await c.close();
    }
  });

  test('progress arrives before the result, increasing', async () => {
    const c = await connect();
    try {
      const progress = [];
      const res = await withWatchdog(c.client.callTool({ name: 'sleep', arguments: { ms: 350 } }, undefined, {
        onprogress: (p) => progress.push(p),
      }), 'progress call');
      assert.deepEqual(res, { content: [{ type: 'text', text: 'slept' }] });
      assert.ok(progress.length >= 2, `got ${progress.length} progress notifications`);
      for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
      assert.equal(progress[0].total, 350);
      assert.deepEqual(c.errors, [], 'no progress for an unknown token, no transport error');
    } finally {
      await c.close();
    }
  });

  test('an AbortSignal cancels the call and no response for it ever arrives', async () => {
    const c = await connect();
    try {
      const ac = new AbortController();
      let running;
      const started = new Promise((resolve) => { running = resolve; });
      const call = c.client.callTool({ name: 'sleep', arguments: { ms: 600000 } }, undefined, {
        signal: ac.signal,
        onprogress: () => running(),
      });
      await withWatchdog(started, 'first progress');
      const cancelledId = c.seen.find((m) => m.method === 'notifications/progress').params.progressToken;
      ac.abort('user gave up');
      await assert.rejects(call, (err) => err instanceof McpError && err.message.includes('user gave up'));
      // The server handles the cancellation before this ping (one session, messages in order):
      // once the ping is answered, the cancelled call can no longer be.
      await withWatchdog(c.client.ping(), 'ping after cancel');
      const echoed = await c.client.callTool({ name: 'echo', arguments: { text: 'still here' } });
      assert.deepEqual(echoed, { content: [{ type: 'text', text: 'still here' }] });
      const late = c.seen.filter((m) => m.id === cancelledId && ('result' in m || 'error' in m));
      assert.deepEqual(late, [], 'no response for the cancelled call');
      assert.deepEqual(c.errors, [], 'no late message reported by the client');
    } finally {
      await c.close();
    }
  });
}
