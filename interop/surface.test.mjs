// The official TypeScript SDK client drives the server's resources, prompts, completion, logging
// and requests to the client over stdio, against the conformance fixtures
// (--fixtures conformance). Over HTTP the official conformance suite covers the same ground.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';

import { serverBinary, withWatchdog } from './server.mjs';

// connect starts the fixture server over stdio with a client that declares sampling and
// elicitation; handlers are installed by the test before it calls.
async function connect() {
  const transport = new StdioClientTransport({
    command: serverBinary(),
    args: ['--fixtures', 'conformance', '--log-level', 'error'],
    stderr: 'ignore',
  });
  const client = new Client({ name: 'toolgrain-interop', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: {} } });
  await withWatchdog(client.connect(transport), 'connect over stdio');
  return client;
}

test('resources: list, read, template, not found', async () => {
  const client = await connect();
  try {
    const { resources } = await client.listResources();
    assert.deepEqual(resources.map((r) => r.uri), ['test://static-text', 'test://static-binary', 'test://watched-resource']);
    const text = await client.readResource({ uri: 'test://static-text' });
    assert.equal(text.contents[0].text, 'This is the content of the static text resource.');
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.equal(resourceTemplates[0].uriTemplate, 'test://template/{id}/data');
    const tpl = await client.readResource({ uri: 'test://template/42/data' });
    assert.deepEqual(JSON.parse(tpl.contents[0].text), { id: '42', templateTest: true, data: 'Data for ID: 42' });
    await assert.rejects(client.readResource({ uri: 'test://missing' }), (err) => err instanceof McpError && err.code === -32002);
    assert.deepEqual(await client.subscribeResource({ uri: 'test://watched-resource' }), {});
  } finally {
    await client.close();
  }
});

test('prompts and completion', async () => {
  const client = await connect();
  try {
    const got = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
    assert.equal(got.messages[0].content.text, "Prompt with arguments: arg1='a', arg2='b'");
    await assert.rejects(client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a' } }),
      (err) => err instanceof McpError && err.code === -32602 && /arg2/.test(err.message));
    const done = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'te' } });
    assert.deepEqual(done.completion.values, ['test', 'testValue1']);
  } finally {
    await client.close();
  }
});

test('log messages arrive before the result, filtered by the level', async () => {
  const client = await connect();
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  try {
    await client.setLoggingLevel('warning');
    await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    assert.equal(logs.length, 0, 'info messages below the level were sent');
    await client.setLoggingLevel('debug');
    await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    assert.deepEqual(logs.map((l) => l.data), ['Tool execution started', 'Tool processing data', 'Tool execution completed']);
  } finally {
    await client.close();
  }
});

test('sampling and elicitation from inside a tool', async () => {
  const client = await connect();
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => ({
    role: 'assistant', model: 'interop', content: { type: 'text', text: `echo: ${req.params.messages[0].content.text}` },
  }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { username: 'ada', email: 'ada@example.com' } }));
  try {
    const s = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'hi' } });
    assert.equal(s.content[0].text, 'LLM response: echo: hi');
    const e = await client.callTool({ name: 'test_elicitation', arguments: { message: 'who?' } });
    assert.equal(e.content[0].text, 'User response: action=accept, content={"username":"ada","email":"ada@example.com"}');
  } finally {
    await client.close();
  }
});

test('cancelling a call withdraws the sampling request it waits on', async () => {
  const client = await connect();
  let withdrawn;
  const aborted = new Promise((resolve) => { withdrawn = resolve; });
  let asked;
  const sampling = new Promise((resolve) => { asked = resolve; });
  client.setRequestHandler(CreateMessageRequestSchema, (_req, extra) => new Promise((_, reject) => {
    asked();
    extra.signal.addEventListener('abort', () => { withdrawn(String(extra.signal.reason)); reject(new Error('withdrawn')); });
  }));
  try {
    const ac = new AbortController();
    const call = client.callTool({ name: 'test_sampling', arguments: { prompt: 'slow' } }, undefined, { signal: ac.signal });
    await withWatchdog(sampling, 'the sampling request');
    ac.abort('user gave up');
    await assert.rejects(call);
    const reason = await withWatchdog(aborted, 'the withdrawal of the sampling request');
    assert.match(reason, /cancelled by the client/);
    await client.ping(); // the connection is fine
  } finally {
    await client.close();
  }
});
