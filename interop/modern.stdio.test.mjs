// The official TypeScript client 2.4 drives the server over stdio in the 2026-07-28 era. In its
// pinned and 'auto' modes the client probes with server/discover on a short-lived sibling
// process of the same command before it starts the session's own process.
import { after } from 'node:test';

import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { defineModernScenarios } from './modern-scenarios.mjs';
import { assertNoChildProcesses, serverBinary } from './server.mjs';

defineModernScenarios(({ fixtures }) => new StdioClientTransport({
  command: serverBinary(),
  args: [...(fixtures ? ['--fixtures', 'conformance'] : []), '--log-level', 'error'],
  stderr: 'ignore', // the fail modes log their internal errors there, for the operator
}));

after(() => assertNoChildProcesses());
