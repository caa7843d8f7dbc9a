// Starting the Toolgrain server binary for the interoperability tests.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// The marker contained in every internal failure text of the demonstration server; it must
// never reach a client.
export const MARKER = 'SECRET-internal-detail';

// watchdog bounds every wait: it only turns a hang into a failure.
export const WATCHDOG_MS = 20_000;

let built;

// serverBinary returns the path of the server binary: $TOOLGRAIN_SERVER, or one built once per
// test process from ../cmd/server.
export function serverBinary() {
  if (process.env.TOOLGRAIN_SERVER) return process.env.TOOLGRAIN_SERVER;
  if (!built) {
    built = path.join(mkdtempSync(path.join(tmpdir(), 'toolgrain-interop-')), 'server');
    execFileSync('go', ['build', '-o', built, './cmd/server'], { cwd: repoRoot, stdio: 'inherit' });
  }
  return built;
}

// withWatchdog rejects when promise takes longer than WATCHDOG_MS.
export function withWatchdog(promise, what) {
  let timer;
  const watchdog = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`watchdog: ${what} took longer than ${WATCHDOG_MS} ms`)), WATCHDOG_MS);
  });
  return Promise.race([promise, watchdog]).finally(() => clearTimeout(timer));
}

// startHTTPServer runs the binary with --transport http on a free loopback port and resolves
// once it serves (it reads the address from the info-level "serving" log line, so args must not
// raise the log level above info). stop() sends SIGTERM and resolves with the exit code.
export async function startHTTPServer(args = []) {
  const proc = spawn(serverBinary(), ['--transport', 'http', '--addr', '127.0.0.1:0', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderr = [];
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal)));
  const url = await withWatchdog(new Promise((resolve, reject) => {
    let buf = '';
    proc.stderr.setEncoding('utf8');
    proc.stderr.on('data', (chunk) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        stderr.push(line);
        try {
          const rec = JSON.parse(line);
          if (rec.msg === 'serving' && rec.url) resolve(rec.url);
        } catch { /* not a log line */ }
      }
    });
    proc.on('exit', (code) => reject(new Error(`server exited with ${code} before serving:\n${stderr.join('\n')}`)));
  }), 'server start').catch((err) => {
    proc.kill('SIGKILL');
    throw err;
  });
  return {
    url: new URL(url),
    stderr,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return withWatchdog(exited, 'server exit');
    },
  };
}
