// A real browser: headless Chromium (the system's, /usr/bin/chromium or $CHROMIUM) loads a page
// from one origin whose script, the official TypeScript client bundled here with esbuild,
// connects to the server on another origin (CORS): it lists and calls tools, gets the error
// model's answers, reads the protected-resource metadata with auth on and deletes its session,
// over Streamable HTTP and then over HTTP+SSE. A page of an origin the server does not allow
// cannot connect.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';
import puppeteer from 'puppeteer-core';

import { MARKER, startHTTPServer, withWatchdog } from '../server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const TOKEN = 'browser-token';
const FAILED = 'Tool execution failed';

let bundle;
let pages = [];
let server;
let browser;
let profile;

// servePage serves the test page and its script on a loopback port: an origin of its own.
async function servePage() {
  const srv = http.createServer((req, res) => {
    if (req.url === '/client.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' });
      res.end(bundle);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><meta charset="utf-8"><title>toolgrain browser test</title><script type="module" src="/client.js"></script>');
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  pages.push(srv);
  return `http://127.0.0.1:${srv.address().port}`;
}

let allowed;
let refused;

before(async () => {
  const built = await esbuild.build({
    entryPoints: [path.join(here, 'page.mjs')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'warning',
  });
  bundle = built.outputFiles[0].text;
  allowed = await servePage();
  refused = await servePage();
  server = await startHTTPServer(['--auth-token', TOKEN, '--allowed-origin', allowed]);
  profile = mkdtempSync(path.join(tmpdir(), 'toolgrain-chromium-'));
  browser = await withWatchdog(puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    userDataDir: profile,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  }), 'Chromium start');
});

after(async () => {
  await browser?.close();
  for (const p of pages) p.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  if (server) assert.equal(await server.stop(), 0, 'SIGTERM exits 0');
});

// open loads the page of origin and waits for its script.
async function open(origin) {
  const page = await browser.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (err) => logs.push(`pageerror: ${err.message}`));
  await withWatchdog(page.goto(origin + '/'), 'page load');
  await withWatchdog(page.waitForFunction(() => window.mcpReady === true), 'page script');
  return { page, logs };
}

test('a page of an allowed origin runs the TypeScript client against the server', async () => {
  const { page, logs } = await open(allowed);
  let res;
  try {
    res = await withWatchdog(page.evaluate((url, token) => window.mcpTest(url, token), server.url.href, TOKEN), 'the page\'s client');
  } catch (err) {
    assert.fail(`${err}\npage log:\n${logs.join('\n')}`);
  }
  assert.deepEqual(res.unauthorized, {
    status: 401,
    resourceMetadataUrl: new URL('/.well-known/oauth-protected-resource/mcp', server.url).href,
  });
  assert.deepEqual(res.metadata, { resource: server.url.href, bearer: ['header'] });
  assert.match(res.sessionId, /^[\x21-\x7E]{22,}$/, 'the page reads Mcp-Session-Id');
  assert.equal(res.protocolVersion, '2025-11-25', 'the page reads MCP-Protocol-Version');
  assert.equal(res.terminated, true);
  assert.equal(res.afterDelete, 404, 'the deleted session is gone');
  for (const [name, out] of [['Streamable HTTP', res.streamable], ['HTTP+SSE', res.sse]]) {
    assert.deepEqual(out.tools, ['echo', 'greet', 'sleep', 'fail', 'spin'], name);
    assert.deepEqual(out.echo, { content: [{ type: 'text', text: 'from the browser' }] }, name);
    assert.deepEqual(out.invalid, { content: [{ type: 'text', text: 'invalid arguments: ms: must be <= 600000' }], isError: true }, name);
    assert.deepEqual(out.fail, { content: [{ type: 'text', text: FAILED }], isError: true }, name);
    assert.equal(out.unknown.code, -32602, name);
    assert.match(out.unknown.message, /unknown tool "nope"/, name);
    assert.ok(!JSON.stringify(out).includes(MARKER), `${name}: no internal detail`);
  }
  await page.close();
});

test('a page of another origin cannot connect', async () => {
  const { page } = await open(refused);
  const err = await withWatchdog(page.evaluate((url) => window.mcpRefused(url), server.url.href), 'the refused client');
  assert.match(err, /Failed to fetch/);
  await page.close();
});
