// The demonstration tool contract the TypeScript peers share with the Go peers
// (bench/peers/internal/demo): names, limits, public and private texts, and the
// process plumbing every peer needs. The tools themselves live in each peer's
// file, written with that framework's own idioms.

import { setImmediate as yieldToLoop } from 'node:timers/promises';

// MARKER appears in every internal failure message of the fail tool. A client
// that ever sees it has been shown a private detail.
export const MARKER = 'SECRET-internal-detail';
export const PUBLIC_FAILURE = 'public failure message';
export const MAX_SLEEP_MS = 600000;
export const SLEPT = 'slept';
export const SPUN = 'spun';
export const MODES = ['result', 'error', 'panic', 'bad-output', 'provider'];
export const INTERNAL_ERROR = `database rejected query: ${MARKER} password=hunter2`;
export const PANIC_VALUE = `nil map write in handler: ${MARKER}`;
// The sleep tool's progress interval, when the call has a progressToken.
export const PROGRESS_EVERY_MS = 100;

export const greeting = (name) => `Hello, ${name}!`;

// badOutput is structured content that violates the fail tool's output schema
// (value must be a number).
export const badOutput = () => ({ value: MARKER });

// provider stands for a dependency the fail tool needs (a credentials store, a
// database pool); in mode "provider" it is down.
export async function provider() {
  throw new Error(`credentials provider unreachable at 10.0.0.7:5432: ${MARKER}`);
}

// spin keeps the CPU busy for ms milliseconds. Node runs every handler on one
// thread, so the only way a CPU-bound handler can honour cancellation is to
// work in slices and give the event loop a turn between them: the loop then
// reads the cancellation (a notification, a closed connection), the framework
// aborts the signal, and the next slice sees it. It returns false when it was
// aborted.
export async function spin(ms, signal) {
  const end = performance.now() + ms;
  let x = 1;
  while (performance.now() < end) {
    const slice = Math.min(end, performance.now() + 2);
    while (performance.now() < slice) {
      for (let i = 0; i < 1000; i++) x = (x * 1103515245 + 12345) % 2147483648;
    }
    await yieldToLoop();
    if (signal?.aborted) return false;
  }
  return x >= 0;
}

// options reads --transport stdio|http and --addr HOST:PORT (endpoint /mcp).
export function options(argv, name) {
  const o = { transport: 'stdio', host: '127.0.0.1', port: 8080 };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].replace(/^--?/, '').split('=', 2);
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case 'transport': o.transport = value(); break;
      case 'addr': {
        const v = value();
        const at = v.lastIndexOf(':');
        o.host = v.slice(0, at) || '127.0.0.1';
        o.port = Number(v.slice(at + 1));
        break;
      }
      case 'h': case 'help':
        process.stderr.write(`usage: ${name} [--transport stdio|http] [--addr HOST:PORT]\n`);
        process.exit(0);
        break;
      default:
        process.stderr.write(`${name}: unknown flag ${argv[i]}\n`);
        process.exit(2);
    }
  }
  if (o.transport !== 'stdio' && o.transport !== 'http') {
    process.stderr.write(`${name}: unknown --transport ${o.transport} (want stdio or http)\n`);
    process.exit(2);
  }
  if (!Number.isInteger(o.port) || o.port < 0 || o.port > 65535) {
    process.stderr.write(`${name}: --addr wants HOST:PORT\n`);
    process.exit(2);
  }
  return o;
}
