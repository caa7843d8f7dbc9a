// The demonstration tool set (echo, greet, sleep, spin, fail) on the official
// MCP TypeScript SDK (@modelcontextprotocol/sdk), written the way its
// documentation teaches: McpServer.registerTool with zod shapes for input and
// output, handlers that read extra.signal and send progress with
// extra.sendNotification; over Streamable HTTP, one transport and one server
// per session, kept in a map by session id.
//
//   node sdk.mjs --transport stdio
//   node sdk.mjs --transport http --addr 127.0.0.1:8080   (endpoint /mcp)
//
// The SDK speaks the legacy era only (initialize; 2025-11-25 and older): it
// answers server/discover with -32601, so mcpbench records the modern era as
// not applicable.

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import * as demo from './demo.mjs';

const text = (t) => [{ type: 'text', text: t }];

function newServer() {
  const server = new McpServer({ name: 'ts-sdk-peer', version: '1.0.0' });

  server.registerTool('echo', {
    description: 'Returns its text.',
    inputSchema: { text: z.string() },
  }, async ({ text: t }) => ({ content: text(t) }));

  server.registerTool('greet', {
    description: 'Greets someone by name.',
    inputSchema: { name: z.string() },
    outputSchema: { greeting: z.string() },
  }, async ({ name }) => {
    const out = { greeting: demo.greeting(name) };
    return { content: text(JSON.stringify(out)), structuredContent: out };
  });

  server.registerTool('sleep', {
    description: 'Waits ms milliseconds, honouring cancellation; progress when asked.',
    inputSchema: { ms: z.number().int().min(0).max(demo.MAX_SLEEP_MS) },
  }, async ({ ms }, extra) => {
    const token = extra._meta?.progressToken;
    const start = Date.now();
    let ticker;
    if (token !== undefined) {
      ticker = setInterval(() => {
        extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken: token, progress: Math.min(Date.now() - start, ms), total: ms },
        }).catch(() => {});
      }, demo.PROGRESS_EVERY_MS);
    }
    try {
      await delay(ms, undefined, { signal: extra.signal });
    } finally {
      clearInterval(ticker);
    }
    return { content: text(demo.SLEPT) };
  });

  server.registerTool('spin', {
    description: 'Keeps a CPU busy for ms milliseconds, honouring cancellation.',
    inputSchema: { ms: z.number().int().min(0).max(demo.MAX_SLEEP_MS) },
  }, async ({ ms }, extra) => {
    if (!await demo.spin(ms, extra.signal)) throw extra.signal.reason ?? new Error('cancelled');
    return { content: text(demo.SPUN) };
  });

  server.registerTool('fail', {
    description: 'Fails in the chosen way.',
    inputSchema: { mode: z.enum(demo.MODES) },
    outputSchema: { value: z.number() },
  }, async ({ mode }) => {
    switch (mode) {
      case 'result':
        return { content: text(demo.PUBLIC_FAILURE), isError: true };
      case 'error':
        throw new Error(demo.INTERNAL_ERROR);
      case 'panic':
        // The nearest thing to a Go panic: an unexpected exception.
        throw new TypeError(demo.PANIC_VALUE);
      case 'bad-output':
        return { content: text('bad output'), structuredContent: demo.badOutput() };
      case 'provider':
        await demo.provider();
    }
    throw new Error(`unknown mode ${mode}`);
  });
  return server;
}

async function serveHTTP(host, port) {
  const transports = new Map(); // by session id
  const readBody = async (req) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString('utf8');
    return raw === '' ? undefined : JSON.parse(raw);
  };
  const httpServer = createServer(async (req, res) => {
    try {
      if (new URL(req.url, 'http://x').pathname !== '/mcp') {
        res.writeHead(404).end();
        return;
      }
      const sid = req.headers['mcp-session-id'];
      let body;
      if (req.method === 'POST') {
        try {
          body = await readBody(req);
        } catch {
          res.writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
          return;
        }
      }
      let transport = sid ? transports.get(sid) : undefined;
      if (!transport) {
        if (sid || req.method !== 'POST' || !isInitializeRequest(body)) {
          res.writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: No valid session ID provided' } }));
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => transports.set(id, transport),
        });
        transport.onclose = () => {
          if (transport.sessionId) transports.delete(transport.sessionId);
        };
        await newServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (err) {
      process.stderr.write(`ts-sdk-peer: ${err?.stack ?? err}\n`);
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
  httpServer.maxConnections = 100000;
  await new Promise((resolve) => httpServer.listen(port, host, resolve));
  process.stderr.write(`listening on ${host}:${httpServer.address().port}\n`);
  const stop = () => {
    for (const t of transports.values()) t.close().catch(() => {});
    httpServer.close();
    httpServer.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

const opts = demo.options(process.argv.slice(2), 'ts-sdk-peer');
if (opts.transport === 'stdio') {
  const server = newServer();
  await server.connect(new StdioServerTransport());
  // End with the input, as a stdio server should.
  process.stdin.on('end', () => process.exit(0));
} else {
  await serveHTTP(opts.host, opts.port);
}
