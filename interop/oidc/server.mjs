// An OAuth 2.0 / OpenID Connect authorization server for tests: oidc-provider (OpenID
// certified), configured for machine clients. It issues access tokens by the client credentials
// grant for a resource indicator (RFC 8707): JWT access tokens (RFC 9068, typ at+jwt), or opaque
// ones for the clients named opaque-*; and answers token introspection (RFC 7662) and
// revocation.
//
//   node server.mjs KEYS.json [PORT]
//
// KEYS.json is the private JWK Set the server signs with, written by the test that starts it
// (so the test holds the keys the server publishes). PORT 0 or absent picks a free port.
// Once listening it prints one line: {"issuer":"http://127.0.0.1:PORT"}.
//
// It then reads commands on standard input, one a line, and answers each with "ok" (or
// "error: ..."):
//
//   stop          close the listener and every open connection: the issuer is down
//   start         listen again on the same port: the issuer is back
//   rotate PATH   sign with the JWK Set in PATH from now on and publish it instead (the
//                 issued tokens, clients and grants stay)
//
// Clients (client_secret_basic or client_secret_post):
//
//   mcp-client / mcp-secret        scopes tools:call admin read
//   narrow-client / narrow-secret  scope tools:call
//   es-client / es-secret          scopes tools:call admin, JWT access tokens signed ES256
//   opaque-client / opaque-secret  scopes tools:call admin read, opaque access tokens
//   resource-server / rs-secret    no grant: the MCP server's credentials for introspection
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';
import Provider from 'oidc-provider';

// Standard output carries this script's protocol only; oidc-provider's notices go to standard
// error.
const say = (line) => process.stdout.write(`${line}\n`);
console.log = console.info = console.warn = (...args) => console.error(...args);

const [keysPath, portArg] = process.argv.slice(2);
if (!keysPath) {
  console.error('usage: node server.mjs KEYS.json [PORT]');
  process.exit(2);
}

const clients = [
  { client_id: 'mcp-client', client_secret: 'mcp-secret', scope: 'tools:call admin read' },
  { client_id: 'narrow-client', client_secret: 'narrow-secret', scope: 'tools:call' },
  { client_id: 'es-client', client_secret: 'es-secret', scope: 'tools:call admin' },
  { client_id: 'opaque-client', client_secret: 'opaque-secret', scope: 'tools:call admin read' },
  { client_id: 'resource-server', client_secret: 'rs-secret' },
].map((c) => ({
  ...c,
  grant_types: c.scope ? ['client_credentials'] : [],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: 'client_secret_basic',
}));

// Every artifact lives in this one store, shared by the providers a rotation creates, so that
// tokens issued before a rotation or an outage stay valid (introspectable) after it.
const store = new Map();
class MemoryAdapter {
  constructor(name) {
    this.name = name;
  }
  key(id) {
    return `${this.name}:${id}`;
  }
  async upsert(id, payload, expiresIn) {
    store.set(this.key(id), { payload, expires: expiresIn ? Date.now() + expiresIn * 1000 : undefined });
  }
  async find(id) {
    const e = store.get(this.key(id));
    if (!e || (e.expires && e.expires < Date.now())) return undefined;
    return e.payload;
  }
  async findByUserCode() {
    return undefined;
  }
  async findByUid() {
    return undefined;
  }
  async consume(id) {
    const e = store.get(this.key(id));
    if (e) e.payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id) {
    store.delete(this.key(id));
  }
  async revokeByGrantId(grantId) {
    for (const [k, e] of store) if (e.payload.grantId === grantId) store.delete(k);
  }
}

let issuer;

function newProvider(keysFile) {
  const jwks = JSON.parse(readFileSync(keysFile, 'utf8'));
  const provider = new Provider(issuer, {
    adapter: MemoryAdapter,
    clients,
    jwks,
    scopes: ['tools:call', 'admin', 'read'],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        // Any authenticated client may introspect any token: the resource server does.
        allowedPolicy: (ctx, client) => client.clientAuthMethod !== 'none',
      },
      revocation: {
        enabled: true,
        allowedPolicy: (ctx, client, token) => token.clientId === client.clientId,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, client, oneOf) => oneOf,
        useGrantedResource: () => false,
        getResourceServerInfo: (ctx, resource, client) => ({
          scope: 'tools:call admin read',
          audience: resource,
          accessTokenTTL: 300,
          accessTokenFormat: client.clientId.startsWith('opaque') ? 'opaque' : 'jwt',
          jwt: { sign: { alg: client.clientId === 'es-client' ? 'ES256' : 'RS256' } },
        }),
      },
    },
    ttl: { ClientCredentials: 300 },
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));
  return provider;
}

let handler;
const sockets = new Set();
const server = createServer((req, res) => handler(req, res));
server.on('connection', (s) => {
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
});

function listen(port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve(server.address().port);
    });
  });
}

const port = await listen(Number(portArg || 0));
issuer = `http://127.0.0.1:${port}`;
handler = newProvider(keysPath).callback();
say(JSON.stringify({ issuer }));

const commands = createInterface({ input: process.stdin });
for await (const line of commands) {
  const [cmd, arg] = line.trim().split(/\s+/);
  try {
    switch (cmd) {
      case 'stop':
        await new Promise((resolve) => {
          server.close(resolve);
          for (const s of sockets) s.destroy();
        });
        break;
      case 'start':
        await listen(port);
        break;
      case 'rotate':
        handler = newProvider(arg).callback();
        break;
      default:
        throw new Error(`unknown command ${cmd}`);
    }
    say('ok');
  } catch (err) {
    say(`error: ${err.message}`);
  }
}
// Standard input closed: the test is done with the server.
process.exit(0);
