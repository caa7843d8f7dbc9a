// The official TypeScript SDK client drives the server over stdio.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { defineScenarios, recording } from './scenarios.mjs';
import { serverBinary, withWatchdog } from './server.mjs';

defineScenarios(async () => {
  const rec = recording(new StdioClientTransport({
    command: serverBinary(),
    args: ['--log-level', 'error'],
    stderr: 'ignore', // the fail modes log their internal errors there, for the operator
  }));
  const client = new Client({ name: 'toolgrain-interop', version: '1.0.0' });
  await withWatchdog(client.connect(rec.transport), 'connect over stdio');
  return { ...rec, client, close: () => client.close() };
});
