// Starting the Toolgrain server binary for the interoperability tests.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
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
//
// With TOOLGRAIN_CLUSTER=N in the environment it starts a local cluster of N members instead
// (--cluster-local N) and resolves with the URL of a round-robin reverse proxy in front of them,
// which sends every request to the next member: every suite then runs against the cluster.
export async function startHTTPServer(args = []) {
  const members = Number(process.env.TOOLGRAIN_CLUSTER || 0);
  if (members > 0) return startCluster(members, args);
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

// childProcesses lists the live child processes of this test process (Linux: from /proc), as
// "pid command" strings; undefined where /proc is not available. node --test runs every test
// file in a process of its own, so after a file's tests these are processes the tests left.
export function childProcesses() {
  let entries;
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return undefined;
  }
  const children = [];
  for (const pid of entries) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid ...: comm may contain spaces and parentheses.
    const close = stat.lastIndexOf(')');
    const [state, ppid] = stat.slice(close + 2).split(' ');
    if (Number(ppid) === process.pid && state !== 'Z') children.push(`${pid} ${stat.slice(stat.indexOf('(') + 1, close)}`);
  }
  return children;
}

// assertNoChildProcesses fails when child processes of this test process are still alive after a
// grace period (a client that closed its stdio transport may still be reaping the server it
// killed). No event announces a process's end to a non-parent, so this polls.
export async function assertNoChildProcesses(graceMs = 3000) {
  const deadline = Date.now() + graceMs;
  let left = childProcesses();
  while (left?.length && Date.now() < deadline) {
    await delay(50);
    left = childProcesses();
  }
  assert.deepEqual(left ?? [], [], 'server processes left behind');
}

// consecutivePorts resolves with the first of n consecutive loopback ports free now.
async function consecutivePorts(n) {
  const free = (port) => new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20000 + Math.floor(Math.random() * 20000);
    let ok = true;
    for (let i = 0; i < n && ok; i++) ok = await free(base + i);
    if (ok) return base;
  }
  throw new Error('no consecutive free ports');
}

// startCluster runs the binary with --cluster-local n and a round-robin proxy in front of the
// members; it resolves once every member serves in a formed cluster. The members list the
// proxy's host and port (--allowed-host): with auth, the endpoint's URI (the tokens' audience,
// the metadata's resource) is then the proxy's, which is the one clients use; a loopback name
// with another port would otherwise be taken as the member's own.
async function startCluster(n, args) {
  const base = await consecutivePorts(n);
  const agent = new http.Agent({ keepAlive: true });
  let next = 0;
  const proxy = http.createServer((req, res) => {
    const port = base + (next++ % n);
    const out = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers, agent }, (back) => {
      res.writeHead(back.statusCode, back.headers);
      back.pipe(res);
    });
    out.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on('close', () => out.destroy());
    req.pipe(out);
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const front = `127.0.0.1:${proxy.address().port}`;
  const proc = spawn(serverBinary(), ['--transport', 'http', '--cluster-local', String(n), '--addr', `127.0.0.1:${base}`,
    '--allowed-host', front, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderr = [];
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal)));
  await withWatchdog(new Promise((resolve, reject) => {
    let buf = '';
    let serving = 0;
    let formed = 0;
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
          if (rec.msg === 'serving') serving++;
          if (rec.msg === 'topology' && rec.members === n) formed++;
          if (serving >= n && formed >= n) resolve();
        } catch { /* not a log line */ }
      }
    });
    proc.on('exit', (code) => reject(new Error(`cluster exited with ${code} before serving:\n${stderr.join('\n')}`)));
  }), 'cluster start').catch((err) => {
    proc.kill('SIGKILL');
    proxy.close();
    agent.destroy();
    throw err;
  });
  return {
    url: new URL(`http://${front}/mcp`),
    stderr,
    async stop() {
      proxy.closeAllConnections();
      proxy.close();
      agent.destroy();
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      return withWatchdog(exited, 'cluster exit');
    },
  };
}
