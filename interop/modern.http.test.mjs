// The official TypeScript client 2.4 drives the server over Streamable HTTP in the 2026-07-28
// era: the shared scenarios against one demonstration server and one with the conformance
// fixtures, then what only HTTP has.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { MODES, connectModern, defineModernScenarios } from './modern-scenarios.mjs';
import { assertNoChildProcesses, startHTTPServer, withWatchdog } from './server.mjs';

let demo;
let fixtures;

before(async () => {
  demo = await startHTTPServer();
  fixtures = await startHTTPServer(['--fixtures', 'conformance']);
});

after(async () => {
  assert.equal(await demo.stop(), 0, 'SIGTERM exits 0');
  assert.equal(await fixtures.stop(), 0, 'SIGTERM exits 0');
  await assertNoChildProcesses();
});

defineModernScenarios(({ fixtures: withFixtures }) => new StreamableHTTPClientTransport((withFixtures ? fixtures : demo).url));

for (const [modeName, versionNegotiation] of MODES) {
  describe(modeName, () => {
    test('a list change caused on one connection reaches the listen stream of another', async () => {
      const connect = () => connectModern(new StreamableHTTPClientTransport(fixtures.url), versionNegotiation);
      const listener = await connect();
      try {
        const other = await connect();
        try {
          let heard;
          const changed = new Promise((resolve) => { heard = resolve; });
          listener.client.setNotificationHandler('notifications/tools/list_changed', (n) => heard(n));
          const sub = await withWatchdog(listener.client.listen({ toolsListChanged: true }), 'listen');
          await withWatchdog(other.client.callTool({ name: 'test_trigger_tool_change', arguments: {} }), 'trigger on the other connection');
          await withWatchdog(changed, 'the list-changed notification');
          const listenId = listener.sent.find((m) => m.method === 'subscriptions/listen').id;
          const tagged = listener.seen.filter((m) => m.method === 'notifications/tools/list_changed')
            .map((m) => m.params?._meta?.['io.modelcontextprotocol/subscriptionId']);
          assert.deepEqual(tagged, [listenId]);
          await withWatchdog(sub.close(), 'closing the listen');
        } finally {
          await other.close();
        }
      } finally {
        await listener.close();
      }
    });
  });
}
