// The scenarios of MCP 2026-07-28 ("modern": stateless requests with a _meta envelope,
// server/discover, input_required rounds, subscriptions/listen) that every transport must pass
// with the official TypeScript client 2.4 (@modelcontextprotocol/client). Each scenario runs
// twice: with the client pinned to 2026-07-28 (modern or a typed connect error, no fallback) and
// in 'auto' mode (a server/discover probe that falls back to initialize unless the server proves
// it is modern); both must end on the modern era.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';

import { Client, ProtocolError, SdkError } from '@modelcontextprotocol/client';

import { MARKER, withWatchdog } from './server.mjs';

export const MODERN = '2026-07-28';

export const MODES = [
  ['pinned to 2026-07-28', { mode: { pin: MODERN } }],
  ['auto', { mode: 'auto' }],
];

const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';
const FAILED = 'Tool execution failed';

// recordingTransport makes a transport show the test every message the client sends through it
// and every message and transport error it delivers to the client, in order. The client chains
// the handlers set here when it connects (and restores them after an in-place probe).
export function recordingTransport(transport) {
  const sent = [];
  const seen = [];
  const errors = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    sent.push(message);
    return send(message, options);
  };
  transport.onmessage = (message) => seen.push(message);
  transport.onerror = (err) => errors.push(err);
  return { transport, sent, seen, errors };
}

// exchanges pairs every request the client sent for method (and tool or prompt name) with the
// response that arrived for it, in the order sent.
function exchanges(c, method, name) {
  return c.sent
    .filter((m) => m.method === method && m.id !== undefined && (name === undefined || m.params?.name === name))
    .map((request) => ({ request, response: c.seen.find((m) => m.id === request.id && ('result' in m || 'error' in m)) }));
}

// body is a result as the client returned it, without the envelope fields of the revision
// (resultType, and _meta with the serverInfo), so the tool's own answer can be compared whole.
function body(result) {
  const { _meta, resultType, ...rest } = result;
  return rest;
}

function text(result) {
  assert.equal(result.content?.[0]?.type, 'text', JSON.stringify(result));
  return result.content[0].text;
}

// The client's answers to the input the server asks for, keyed by the property they fill in.
const ANSWERS = { name: 'Ada', color: 'green', username: 'ada', email: 'ada@example.com', ok: true, context: 'interop' };
const ROOTS = [{ uri: 'file:///interop/workspace', name: 'workspace' }];

// answering declares elicitation, sampling and roots and installs handlers for them that record
// each input request they fulfil ({ method, params }).
function answering() {
  const calls = [];
  return {
    calls,
    capabilities: { elicitation: {}, sampling: {}, roots: {} },
    install(client) {
      client.setRequestHandler('elicitation/create', async (req) => {
        calls.push({ method: req.method, params: req.params });
        const props = Object.keys(req.params.requestedSchema?.properties ?? {});
        return { action: 'accept', content: Object.fromEntries(props.map((p) => [p, ANSWERS[p] ?? 'interop'])) };
      });
      client.setRequestHandler('sampling/createMessage', async (req) => {
        calls.push({ method: req.method, params: req.params });
        const prompt = req.params.messages.at(-1).content.text;
        const answer = prompt === 'What is the capital of France?' ? 'Paris' : `echo: ${prompt}`;
        return { role: 'assistant', model: 'interop', content: { type: 'text', text: answer }, stopReason: 'endTurn' };
      });
      client.setRequestHandler('roots/list', async (req) => {
        calls.push({ method: req.method, params: req.params });
        return { roots: ROOTS };
      });
    },
  };
}

// assertRounds checks the wire of one multi-round call of tool: every round but the last is an
// input_required result (asking for the keys of keysPerRound, when given), every retry is a new
// request with the same arguments that answers exactly those keys and echoes the round's
// requestState byte for byte, and the last round is complete.
function assertRounds(c, tool, keysPerRound) {
  const rounds = exchanges(c, 'tools/call', tool);
  if (keysPerRound) assert.equal(rounds.length, keysPerRound.length + 1, `rounds of ${tool}`);
  else assert.ok(rounds.length >= 2, `${tool} took ${rounds.length} round(s)`);
  assert.equal(new Set(rounds.map((r) => r.request.id)).size, rounds.length, 'every retry has a new id');
  for (let i = 0; i < rounds.length - 1; i++) {
    const asked = rounds[i].response?.result;
    assert.equal(asked?.resultType, 'input_required', `round ${i + 1} of ${tool}: ${JSON.stringify(rounds[i].response)}`);
    const keys = Object.keys(asked.inputRequests ?? {}).sort();
    if (keysPerRound) assert.deepEqual(keys, [...keysPerRound[i]].sort(), `keys asked in round ${i + 1}`);
    const retry = rounds[i + 1].request.params;
    assert.deepEqual(Object.keys(retry.inputResponses ?? {}).sort(), keys, `keys answered after round ${i + 1}`);
    assert.equal(retry.requestState, asked.requestState, 'requestState echoed byte for byte');
    assert.deepEqual(retry.arguments, rounds[0].request.params.arguments);
  }
  const last = rounds.at(-1).response;
  assert.equal(last?.result?.resultType, 'complete', `last round of ${tool}: ${JSON.stringify(last)}`);
  return rounds;
}

// connectModern connects a client 2.4 over transport in the given negotiation mode and checks
// that it ended on the modern era at 2026-07-28. The result records the traffic (see
// recordingTransport); its close() ends the connection (over stdio, the server process too).
// opts: capabilities and listChanged for the client, install(client) to add handlers first.
export async function connectModern(transport, versionNegotiation, { capabilities, listChanged, install } = {}) {
  const rec = recordingTransport(transport);
  const client = new Client({ name: 'toolgrain-interop', version: '1.0.0' }, { versionNegotiation, capabilities, listChanged });
  install?.(client);
  const close = () => withWatchdog((async () => {
    if (rec.transport.sessionId !== undefined) await rec.transport.terminateSession().catch(() => {}); // a legacy fallback
    await client.close();
  })(), 'close');
  try {
    await withWatchdog(client.connect(rec.transport), 'connect');
    assert.equal(client.getProtocolEra(), 'modern',
      `the client settled on the ${client.getProtocolEra()} era (protocol ${client.getNegotiatedProtocolVersion()})`);
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
  return { ...rec, client, close };
}

// defineModernScenarios registers the shared tests. newTransport({ fixtures }) returns a fresh,
// unconnected client transport to the server: with --fixtures conformance when fixtures is
// true, else the demonstration server alone.
export function defineModernScenarios(newTransport) {
  const connect = (versionNegotiation, opts = {}) => connectModern(newTransport({ fixtures: opts.fixtures ?? false }), versionNegotiation, opts);

  for (const [modeName, versionNegotiation] of MODES) {
    describe(modeName, () => {
      test('discover: server identity, capabilities and instructions', async () => {
        // The identity the legacy handshake reports, to compare with.
        const legacy = new Client({ name: 'toolgrain-interop', version: '1.0.0' });
        const lt = newTransport({ fixtures: false });
        let legacyInfo;
        try {
          await withWatchdog(legacy.connect(lt), 'legacy connect');
          legacyInfo = legacy.getServerVersion();
        } finally {
          if (lt.sessionId !== undefined) await withWatchdog(lt.terminateSession(), 'ending the legacy session');
          await withWatchdog(legacy.close(), 'legacy close');
        }

        const c = await connect(versionNegotiation);
        try {
          const d = c.client.getDiscoverResult();
          assert.ok(d.supportedVersions.includes(MODERN), `supportedVersions ${JSON.stringify(d.supportedVersions)}`);
          const info = d._meta?.[SERVER_INFO];
          assert.equal(info?.name, 'toolgrain-demo', `serverInfo in the discover _meta: ${JSON.stringify(d._meta)}`);
          assert.equal(info.version, legacyInfo.version, 'the same version in both eras');
          assert.equal(c.client.getServerVersion()?.name, 'toolgrain-demo');
          const caps = c.client.getServerCapabilities();
          assert.deepEqual(caps.tools, { listChanged: true });
          assert.deepEqual(caps.prompts, { listChanged: true });
          assert.equal(caps.resources?.listChanged, true);
          assert.deepEqual(caps.completions, {});
          assert.deepEqual(caps.logging, {});
          assert.equal(c.client.getInstructions(), 'Demonstration tools: echo, greet, sleep, fail and spin.');
          assert.ok(Number.isInteger(d.ttlMs) && d.ttlMs >= 0, `ttlMs ${d.ttlMs}`);
          assert.ok(['public', 'private'].includes(d.cacheScope), `cacheScope ${d.cacheScope}`);

          // The connection itself answers server/discover too (over stdio the client probed on a
          // separate process) with the same result.
          const again = await withWatchdog(c.client.discover(), 'server/discover');
          assert.deepEqual(again.capabilities, d.capabilities);
          assert.deepEqual(again._meta?.[SERVER_INFO], info);
          const asked = exchanges(c, 'server/discover').at(-1); // the probe's answer goes to the probe alone
          assert.equal(asked.request.params._meta['io.modelcontextprotocol/protocolVersion'], MODERN);
          assert.equal(asked.response?.result?.resultType, 'complete', JSON.stringify(asked.response));
        } finally {
          await c.close();
        }
      });

      test('tools/list names every demonstration tool, in order, with cache hints', async () => {
        const c = await connect(versionNegotiation);
        try {
          const { tools } = await withWatchdog(c.client.listTools(), 'tools/list');
          assert.deepEqual(tools.map((t) => t.name), ['echo', 'greet', 'sleep', 'fail', 'spin']);
          for (const t of tools) {
            assert.ok(t.description, `${t.name} has a description`);
            assert.equal(t.inputSchema.type, 'object');
          }
          assert.deepEqual(tools.find((t) => t.name === 'greet').outputSchema.required, ['greeting']);
          const [{ request, response }] = exchanges(c, 'tools/list');
          assert.equal(request.params._meta['io.modelcontextprotocol/protocolVersion'], MODERN, 'the envelope is on the request');
          const r = response?.result;
          assert.equal(r?.resultType, 'complete', JSON.stringify(response));
          assert.ok(Number.isInteger(r.ttlMs) && r.ttlMs >= 0, `ttlMs ${r.ttlMs}`);
          assert.ok(['public', 'private'].includes(r.cacheScope), `cacheScope ${r.cacheScope}`);
        } finally {
          await c.close();
        }
      });

      test('every demonstration tool answers as documented', async () => {
        const c = await connect(versionNegotiation);
        try {
          await withWatchdog(c.client.listTools(), 'tools/list'); // so the client checks structured output
          assert.deepEqual(body(await withWatchdog(c.client.callTool({ name: 'echo', arguments: { text: 'hello' } }), 'echo')),
            { content: [{ type: 'text', text: 'hello' }] });
          assert.deepEqual(body(await withWatchdog(c.client.callTool({ name: 'greet', arguments: { name: 'Ada' } }), 'greet')),
            { content: [{ type: 'text', text: '{"greeting":"Hello, Ada!"}' }], structuredContent: { greeting: 'Hello, Ada!' } });
          assert.deepEqual(body(await withWatchdog(c.client.callTool({ name: 'sleep', arguments: { ms: 10 } }), 'sleep')),
            { content: [{ type: 'text', text: 'slept' }] });
          assert.deepEqual(body(await withWatchdog(c.client.callTool({ name: 'spin', arguments: { ms: 10 } }), 'spin')),
            { content: [{ type: 'text', text: 'spun' }] });
          for (const { response } of exchanges(c, 'tools/call')) {
            assert.equal(response?.result?.resultType, 'complete', JSON.stringify(response));
          }
        } finally {
          await c.close();
        }
      });

      test('every fail mode: the public result, or the generic failure with no internal detail', async () => {
        const c = await connect(versionNegotiation);
        try {
          await withWatchdog(c.client.listTools(), 'tools/list');
          const got = [await withWatchdog(c.client.callTool({ name: 'fail', arguments: { mode: 'result' } }), 'fail result')];
          assert.deepEqual(body(got[0]), { content: [{ type: 'text', text: 'public failure message' }], isError: true });
          for (const mode of ['error', 'panic', 'bad-output', 'provider']) {
            const res = await withWatchdog(c.client.callTool({ name: 'fail', arguments: { mode } }), `fail ${mode}`);
            got.push(res);
            assert.deepEqual(body(res), { content: [{ type: 'text', text: FAILED }], isError: true }, mode);
          }
          assert.ok(!JSON.stringify(c.seen).includes(MARKER), 'no internal detail on the wire');
          assert.ok(!JSON.stringify(got).includes(MARKER), 'no internal detail in the results');
        } finally {
          await c.close();
        }
      });

      test('validation feedback names the field and the rule; an unknown tool is a protocol error', async () => {
        const c = await connect(versionNegotiation);
        try {
          assert.deepEqual(body(await withWatchdog(c.client.callTool({ name: 'sleep', arguments: { ms: 700000 } }), 'sleep')),
            { content: [{ type: 'text', text: 'invalid arguments: ms: must be <= 600000' }], isError: true });
          assert.deepEqual(body(await withWatchdog(c.client.callTool({ name: 'echo', arguments: {} }), 'echo')),
            { content: [{ type: 'text', text: 'invalid arguments: text: missing property' }], isError: true });
          await assert.rejects(withWatchdog(c.client.callTool({ name: 'nope', arguments: {} }), 'unknown tool'),
            (err) => err instanceof ProtocolError && err.code === -32602 && err.message.includes('nope'));
        } finally {
          await c.close();
        }
      });

      test('progress arrives before the result, increasing', async () => {
        const c = await connect(versionNegotiation);
        try {
          const progress = [];
          const res = await withWatchdog(c.client.callTool({ name: 'sleep', arguments: { ms: 350 } }, {
            onprogress: (p) => progress.push(p),
          }), 'progress call');
          assert.deepEqual(body(res), { content: [{ type: 'text', text: 'slept' }] });
          assert.ok(progress.length >= 2, `got ${progress.length} progress notifications`);
          for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress);
          assert.equal(progress[0].total, 350);
          assert.deepEqual(c.errors, [], 'no progress for an unknown token, no transport error');
        } finally {
          await c.close();
        }
      });

      describe('input_required rounds, fulfilled by the client', () => {
        // mrtr connects to the fixture server with handlers for every kind of input request.
        async function mrtr() {
          const a = answering();
          const c = await connect(versionNegotiation, { fixtures: true, capabilities: a.capabilities, install: (cl) => a.install(cl) });
          return { c, calls: a.calls };
        }
        const call = (c, name, args = {}) => withWatchdog(c.client.callTool({ name, arguments: args }), name);
        const nameSchema = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };

        test('elicitation', async () => {
          const { c, calls } = await mrtr();
          try {
            const res = await call(c, 'test_input_required_result_elicitation');
            assert.match(text(res), /Ada/);
            assert.equal(calls.length, 1);
            assert.equal(calls[0].method, 'elicitation/create');
            assert.equal(calls[0].params.message, 'What is your name?');
            assert.deepEqual(calls[0].params.requestedSchema, nameSchema);
            assertRounds(c, 'test_input_required_result_elicitation', [['user_name']]);
          } finally {
            await c.close();
          }
        });

        test('sampling', async () => {
          const { c, calls } = await mrtr();
          try {
            const res = await call(c, 'test_input_required_result_sampling');
            assert.match(text(res), /Paris/);
            assert.deepEqual(calls.map((x) => x.method), ['sampling/createMessage']);
            assert.deepEqual(calls[0].params.messages, [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }]);
            assert.equal(calls[0].params.maxTokens, 100);
            assertRounds(c, 'test_input_required_result_sampling', [['capital_question']]);
          } finally {
            await c.close();
          }
        });

        test('roots/list', async () => {
          const { c, calls } = await mrtr();
          try {
            const res = await call(c, 'test_input_required_result_list_roots');
            assert.ok(text(res).includes(ROOTS[0].uri), text(res));
            assert.deepEqual(calls.map((x) => x.method), ['roots/list']);
            assertRounds(c, 'test_input_required_result_list_roots', [['client_roots']]);
          } finally {
            await c.close();
          }
        });

        test('requestState', async () => {
          const { c, calls } = await mrtr();
          try {
            const res = await call(c, 'test_input_required_result_request_state');
            assert.match(text(res), /state-ok/);
            assert.deepEqual(calls.map((x) => x.params.message), ['Please confirm']);
            const [first] = assertRounds(c, 'test_input_required_result_request_state', [['confirm']]);
            assert.equal(typeof first.response.result.requestState, 'string');
          } finally {
            await c.close();
          }
        });

        test('several inputs in one round', async () => {
          const { c, calls } = await mrtr();
          try {
            const res = await call(c, 'test_input_required_result_multiple_inputs');
            assert.ok(text(res).length > 0);
            assert.deepEqual(calls.map((x) => x.method).sort(), ['elicitation/create', 'roots/list', 'sampling/createMessage']);
            const elicit = calls.find((x) => x.method === 'elicitation/create');
            assert.equal(elicit.params.message, 'What is your name?');
            assert.deepEqual(elicit.params.requestedSchema, nameSchema);
            const sample = calls.find((x) => x.method === 'sampling/createMessage');
            assert.deepEqual(sample.params.messages, [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }]);
            assert.equal(sample.params.maxTokens, 50);
            assertRounds(c, 'test_input_required_result_multiple_inputs', [['user_name', 'greeting', 'client_roots']]);
          } finally {
            await c.close();
          }
        });

        test('several rounds with evolving requestState', async () => {
          const { c, calls } = await mrtr();
          try {
            const res = await call(c, 'test_input_required_result_multi_round');
            assert.ok(text(res).length > 0);
            assert.deepEqual(calls.map((x) => x.params.message), ['Step 1: What is your name?', 'Step 2: What is your favorite color?']);
            assert.deepEqual(calls[1].params.requestedSchema, { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] });
            const rounds = assertRounds(c, 'test_input_required_result_multi_round', [['step1'], ['step2']]);
            const [s1, s2] = [rounds[0].response.result.requestState, rounds[1].response.result.requestState];
            assert.equal(typeof s1, 'string');
            assert.equal(typeof s2, 'string');
            assert.notEqual(s1, s2, 'the state changes between rounds');
          } finally {
            await c.close();
          }
        });

        test('a tool written with the blocking elicitation API', async () => {
          const { c, calls } = await mrtr();
          try {
            const res = await call(c, 'test_elicitation', { message: 'who?' });
            assert.deepEqual(body(res),
              { content: [{ type: 'text', text: 'User response: action=accept, content={"username":"ada","email":"ada@example.com"}' }] });
            assert.deepEqual(calls.map((x) => x.method), ['elicitation/create']);
            assert.equal(calls[0].params.message, 'who?');
            assert.deepEqual(calls[0].params.requestedSchema.required, ['username', 'email']);
            assertRounds(c, 'test_elicitation');
          } finally {
            await c.close();
          }
        });

        test('a tool written with the blocking sampling API', async () => {
          const { c, calls } = await mrtr();
          try {
            const res = await call(c, 'test_sampling', { prompt: 'hi' });
            assert.deepEqual(body(res), { content: [{ type: 'text', text: 'LLM response: echo: hi' }] });
            assert.deepEqual(calls.map((x) => x.method), ['sampling/createMessage']);
            assert.deepEqual(calls[0].params.messages, [{ role: 'user', content: { type: 'text', text: 'hi' } }]);
            assert.equal(calls[0].params.maxTokens, 100);
            assertRounds(c, 'test_sampling');
          } finally {
            await c.close();
          }
        });
      });

      test('subscriptions/listen: a tools listener hears the change, a prompts-only listener does not', async () => {
        const c = await connect(versionNegotiation, { fixtures: true });
        const subs = [];
        try {
          let toolsHeard;
          const toolsChanged = new Promise((resolve) => { toolsHeard = resolve; });
          let promptsHeard;
          const promptsChanged = new Promise((resolve) => { promptsHeard = resolve; });
          c.client.setNotificationHandler('notifications/tools/list_changed', () => toolsHeard());
          c.client.setNotificationHandler('notifications/prompts/list_changed', () => promptsHeard());

          const promptsOnly = await withWatchdog(c.client.listen({ promptsListChanged: true }), 'prompts-only listen');
          subs.push(promptsOnly);
          const tools = await withWatchdog(c.client.listen({ toolsListChanged: true }), 'tools listen');
          subs.push(tools);
          assert.deepEqual(promptsOnly.honoredFilter, { promptsListChanged: true });
          assert.deepEqual(tools.honoredFilter, { toolsListChanged: true });

          const listenId = (key) => c.sent.find((m) => m.method === 'subscriptions/listen' && m.params?.notifications?.[key]).id;
          const [promptsId, toolsId] = [listenId('promptsListChanged'), listenId('toolsListChanged')];
          const tagged = (method) => c.seen.filter((m) => m.method === method).map((m) => m.params?._meta?.[SUBSCRIPTION_ID]);

          await withWatchdog(c.client.callTool({ name: 'test_trigger_tool_change', arguments: {} }), 'trigger a tools change');
          await withWatchdog(toolsChanged, 'the tools list-changed notification');
          assert.deepEqual(tagged('notifications/prompts/list_changed'), [], 'no prompts change before one was caused');
          // A barrier: the prompts change reaches the prompts-only stream after anything the
          // server sent there before it, such as a tools change it should not have sent.
          await withWatchdog(c.client.callTool({ name: 'test_trigger_prompt_change', arguments: {} }), 'trigger a prompts change');
          await withWatchdog(promptsChanged, 'the prompts list-changed notification');
          assert.deepEqual(tagged('notifications/tools/list_changed'), [toolsId], 'one tools change, on the tools listen only');
          assert.deepEqual(tagged('notifications/prompts/list_changed'), [promptsId], 'one prompts change, on the prompts listen only');
          for (const id of [promptsId, toolsId]) {
            const first = c.seen.find((m) => m.params?._meta?.[SUBSCRIPTION_ID] === id);
            assert.equal(first.method, 'notifications/subscriptions/acknowledged', `the first message of listen ${id}`);
          }
        } finally {
          for (const s of subs) await withWatchdog(s.close(), 'closing a listen');
          await c.close();
        }
        for (const s of subs) assert.equal(await withWatchdog(s.closed, 'listen closed'), 'local');
      });

      test('subscriptions/listen opened by the client for its list-changed handler', async () => {
        let refreshed;
        const changed = new Promise((resolve, reject) => {
          refreshed = (err, tools) => (err ? reject(err) : resolve(tools));
        });
        const c = await connect(versionNegotiation, { fixtures: true, listChanged: { tools: { onChanged: refreshed } } });
        try {
          assert.deepEqual(c.client.autoOpenedSubscription?.honoredFilter, { toolsListChanged: true });
          await withWatchdog(c.client.callTool({ name: 'test_trigger_tool_change', arguments: {} }), 'trigger a tools change');
          const tools = await withWatchdog(changed, 'the refreshed tool list');
          assert.ok(tools.some((t) => t.name === 'test_trigger_tool_change'), 'the refreshed list');
        } finally {
          await c.close();
        }
      });

      test('an AbortSignal cancels the call and no answer for it ever arrives', async () => {
        const c = await connect(versionNegotiation);
        try {
          const ac = new AbortController();
          let running;
          const started = new Promise((resolve) => { running = resolve; });
          const call = c.client.callTool({ name: 'sleep', arguments: { ms: 600000 } }, { signal: ac.signal, onprogress: () => running() });
          await withWatchdog(started, 'first progress');
          const cancelledId = c.sent.find((m) => m.method === 'tools/call' && m.params.name === 'sleep').id;
          ac.abort('user gave up');
          await assert.rejects(withWatchdog(call, 'the cancelled call'), (err) => err instanceof SdkError && err.message.includes('user gave up'));

          await delay(300); // the window in which a late answer would show up
          const t0 = performance.now();
          const echoed = await withWatchdog(c.client.callTool({ name: 'echo', arguments: { text: 'still here' } }), 'echo after cancel');
          const elapsed = performance.now() - t0;
          assert.deepEqual(body(echoed), { content: [{ type: 'text', text: 'still here' }] });
          assert.ok(elapsed < 2000, `the next call took ${Math.round(elapsed)} ms`);

          assert.deepEqual(c.seen.filter((m) => m.id === cancelledId), [], 'no response for the cancelled call');
          // Progress sent before the server saw the cancellation may still be in flight; nothing
          // for the call may follow the answer to a later request.
          const echoAt = c.seen.findIndex((m) => m.id === exchanges(c, 'tools/call', 'echo')[0].request.id);
          const late = c.seen.slice(echoAt).filter((m) => m.params?.progressToken === cancelledId);
          assert.deepEqual(late, [], 'no progress after the cancellation was handled');
          assert.deepEqual(c.errors.filter((e) => /unknown message ID/.test(e.message)), [], 'no late response reported by the client');
        } finally {
          await c.close();
        }
      });
    });
  }
}
