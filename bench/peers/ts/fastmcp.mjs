// The demonstration tool set (echo, greet, sleep, spin, fail) on FastMCP for
// TypeScript (the npm package fastmcp), written the way its documentation
// teaches: server.addTool with zod parameters and an outputSchema, execute
// returning a string or a content result, UserError for an error meant for the
// user, context.reportProgress and context.signal; server.start with the stdio
// or the httpStream transport (endpoint /mcp, sessions kept by FastMCP).
//
//   node fastmcp.mjs --transport stdio
//   node fastmcp.mjs --transport http --addr 127.0.0.1:8080   (endpoint /mcp)
//
// FastMCP serves the legacy era only (it sits on @modelcontextprotocol/sdk
// 1.x): the modern era is not applicable.

import { setTimeout as delay } from 'node:timers/promises';
import { FastMCP, UserError } from 'fastmcp';
import { z } from 'zod';
import * as demo from './demo.mjs';

const server = new FastMCP({ name: 'fastmcp-peer', version: '1.0.0' });

server.addTool({
  name: 'echo',
  description: 'Returns its text.',
  parameters: z.object({ text: z.string() }),
  execute: async ({ text }) => text,
});

server.addTool({
  name: 'greet',
  description: 'Greets someone by name.',
  parameters: z.object({ name: z.string() }),
  outputSchema: z.object({ greeting: z.string() }),
  execute: async ({ name }) => ({ greeting: demo.greeting(name) }),
});

server.addTool({
  name: 'sleep',
  description: 'Waits ms milliseconds, honouring cancellation; progress when asked.',
  parameters: z.object({ ms: z.number().int().min(0).max(demo.MAX_SLEEP_MS) }),
  execute: async ({ ms }, { reportProgress, signal }) => {
    const start = Date.now();
    // reportProgress sends nothing when the call has no progressToken.
    const ticker = setInterval(() => {
      reportProgress({ progress: Math.min(Date.now() - start, ms), total: ms }).catch(() => {});
    }, demo.PROGRESS_EVERY_MS);
    try {
      await delay(ms, undefined, { signal });
    } finally {
      clearInterval(ticker);
    }
    return demo.SLEPT;
  },
});

server.addTool({
  name: 'spin',
  description: 'Keeps a CPU busy for ms milliseconds, honouring cancellation.',
  parameters: z.object({ ms: z.number().int().min(0).max(demo.MAX_SLEEP_MS) }),
  execute: async ({ ms }, { signal }) => {
    if (!await demo.spin(ms, signal)) throw signal.reason ?? new Error('cancelled');
    return demo.SPUN;
  },
});

server.addTool({
  name: 'fail',
  description: 'Fails in the chosen way.',
  parameters: z.object({ mode: z.enum(demo.MODES) }),
  outputSchema: z.object({ value: z.number() }),
  execute: async ({ mode }) => {
    switch (mode) {
      case 'result':
        throw new UserError(demo.PUBLIC_FAILURE);
      case 'error':
        throw new Error(demo.INTERNAL_ERROR);
      case 'panic':
        // The nearest thing to a Go panic: an unexpected exception.
        throw new TypeError(demo.PANIC_VALUE);
      case 'bad-output':
        return demo.badOutput();
      case 'provider':
        await demo.provider();
    }
    throw new Error(`unknown mode ${mode}`);
  },
});

const opts = demo.options(process.argv.slice(2), 'fastmcp-peer');
if (opts.transport === 'stdio') {
  await server.start({ transportType: 'stdio' });
  process.stdin.on('end', () => process.exit(0));
} else {
  await server.start({
    transportType: 'httpStream',
    httpStream: { host: opts.host, port: opts.port, endpoint: '/mcp' },
  });
  process.stderr.write(`listening on ${opts.host}:${opts.port}\n`);
  const stop = () => server.stop().finally(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
