// The script of the browser test's page, bundled for the browser with esbuild when the test
// runs: the official TypeScript client, used from a page of another origin than the server's.
// window.mcpTest(serverURL, token) runs everything and resolves with what it saw.
import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// session connects over transport, lists, calls and collects the error model's answers.
async function session(transport) {
  const client = new Client({ name: 'toolgrain-browser', version: '1.0.0' });
  await client.connect(transport);
  const out = {};
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  out.echo = await client.callTool({ name: 'echo', arguments: { text: 'from the browser' } });
  out.invalid = await client.callTool({ name: 'sleep', arguments: { ms: 700000 } });
  out.fail = await client.callTool({ name: 'fail', arguments: { mode: 'panic' } });
  try {
    await client.callTool({ name: 'nope', arguments: {} });
  } catch (err) {
    out.unknown = { code: err.code, message: err.message };
  }
  return { client, out };
}

window.mcpTest = async (serverURL, token) => {
  const url = new URL(serverURL);
  const res = {};

  // The 401 and its challenge are readable by the page, and lead to the metadata (OAuth
  // discovery from the browser).
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
  });
  const { resourceMetadataUrl } = extractWWWAuthenticateParams(r);
  res.unauthorized = { status: r.status, resourceMetadataUrl: resourceMetadataUrl?.href };
  const meta = await discoverOAuthProtectedResourceMetadata(url, { resourceMetadataUrl });
  res.metadata = { resource: meta.resource, bearer: meta.bearer_methods_supported };

  // Streamable HTTP: a session, then its DELETE.
  const headers = { Authorization: `Bearer ${token}` };
  const t = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  const s = await session(t);
  res.streamable = s.out;
  res.sessionId = t.sessionId;
  res.protocolVersion = t.protocolVersion;
  await t.terminateSession();
  res.terminated = t.sessionId === undefined;
  const after = await fetch(url, {
    method: 'POST',
    headers: {
      ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream',
      'mcp-session-id': res.sessionId, 'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
  });
  res.afterDelete = after.status;
  await s.client.close();

  // The HTTP+SSE transport, from the same page.
  const sse = await session(new SSEClientTransport(new URL('/sse', url), { requestInit: { headers } }));
  res.sse = sse.out;
  await sse.client.close();
  return res;
};

// window.mcpRefused(serverURL) tries to connect from an origin the server does not allow.
window.mcpRefused = async (serverURL) => {
  const client = new Client({ name: 'toolgrain-browser', version: '1.0.0' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(serverURL)));
    return 'connected';
  } catch (err) {
    return String(err);
  }
};

window.mcpReady = true;
