'use strict';
// The HTTP integrations over real HTTP (fetch) against a real redis-server:
// the examples as server processes sharing one limit, per-route limits,
// exempt routes, trusted proxies, 503 when Redis cannot answer, the
// express-rate-limit Store and the Fastify plugin.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const root = path.join(__dirname, '..', '..');
const packageDir = path.join(root, 'bindings', 'node');
const express = require(path.join(packageDir, 'node_modules', 'express'));
const expressRateLimit = require(path.join(packageDir, 'node_modules', 'express-rate-limit')).rateLimit;
const polylimit = require(packageDir);
const { rateLimit, PolylimitStore } = require(path.join(packageDir, 'lib', 'express'));
const { startRedis, uniquePrefix } = require('./redis');

let server;
let modules; // NODE_PATH for the examples: polylimit as an installed package, express, fastify
before(async () => {
  server = await startRedis();
  modules = fs.mkdtempSync(path.join(os.tmpdir(), 'polylimit-node-'));
  fs.symlinkSync(packageDir, path.join(modules, 'polylimit'));
});
after(async () => {
  if (server) await server.stop();
  if (modules) fs.rmSync(modules, { recursive: true, force: true });
});

// Starts an example server process; resolves with its base URL and a stop().
async function startExample(dir, env) {
  const proc = spawn(process.execPath, [path.join(root, 'examples', dir, 'server.js')], {
    env: {
      ...process.env,
      ...env,
      PORT: '0',
      PREFIX: env.PREFIX || uniquePrefix(dir),
      POLYLIMIT_URL: server.url,
      NODE_PATH: [modules, path.join(packageDir, 'node_modules')].join(path.delimiter),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise((resolve, reject) => {
    readline.createInterface({ input: proc.stdout }).once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`${dir}/server.js exited with ${code}`)));
  });
  const port = Number(/listening on (\d+)/.exec(line)[1]);
  return { base: `http://127.0.0.1:${port}`, stop: () => proc.kill('SIGKILL') };
}

// An app in this process on a free port.
async function listen(app) {
  const s = await new Promise((resolve) => {
    const srv = app.listen(0, '127.0.0.1', () => resolve(srv));
  });
  return {
    base: `http://127.0.0.1:${s.address().port}`,
    stop: () => {
      s.closeAllConnections();
      s.close();
    },
  };
}

async function statuses(urls, init) {
  const out = [];
  for (const url of urls) {
    const r = await fetch(url, init);
    await r.arrayBuffer();
    out.push(r.status);
  }
  return out;
}

const count = (xs, v) => xs.filter((x) => x === v).length;

test('two Express servers (examples/node-express) share one limit exactly', async () => {
  const env = { LIMIT: '20/minute', LOGIN_LIMIT: '3/minute', PREFIX: uniquePrefix('express') };
  const a = await startExample('node-express', env);
  const b = await startExample('node-express', env);
  try {
    const urls = Array.from({ length: 50 }, (_, i) => `${i % 2 ? a.base : b.base}/`);
    const got = await Promise.all(
      urls.map(async (url) => {
        const r = await fetch(url);
        await r.text();
        return r;
      }),
    );
    assert.equal(
      count(
        got.map((r) => r.status),
        200,
      ),
      20,
    );
    assert.equal(
      count(
        got.map((r) => r.status),
        429,
      ),
      30,
    );
    const denied = got.find((r) => r.status === 429);
    assert.equal(denied.headers.get('ratelimit-limit'), '20');
    assert.equal(denied.headers.get('ratelimit-remaining'), '0');
    assert.ok(Number(denied.headers.get('retry-after')) >= 1);
    assert.match(denied.headers.get('ratelimit-policy'), /q=20;w=60/);
    const admitted = got.find((r) => r.status === 200);
    assert.equal(admitted.headers.get('retry-after'), null);
    // /login has its own count; /healthz and /metrics are exempt.
    assert.deepEqual(
      await statuses([`${a.base}/login`, `${b.base}/login`, `${a.base}/login`, `${b.base}/login`], { method: 'POST' }),
      [200, 200, 200, 429],
    );
    const health = await fetch(`${a.base}/healthz`);
    assert.equal(health.status, 200);
    assert.equal(health.headers.get('ratelimit-limit'), null);
    const metrics = await (await fetch(`${a.base}/metrics`)).text();
    assert.match(metrics, /^polylimit_checks_total\{client="node-express"\} \d+$/m);
  } finally {
    a.stop();
    b.stop();
  }
});

test('Fastify plugin (examples/node-fastify)', async () => {
  const f = await startExample('node-fastify', { LIMIT: '5/minute' });
  try {
    const got = await statuses(Array.from({ length: 7 }, () => `${f.base}/`));
    assert.deepEqual(got, [200, 200, 200, 200, 200, 429, 429]);
    const r = await fetch(`${f.base}/`);
    assert.equal(r.status, 429);
    assert.equal(r.headers.get('ratelimit-limit'), '5');
    assert.equal(await r.text(), 'Too Many Requests\n');
    assert.deepEqual(await statuses([`${f.base}/healthz`, `${f.base}/healthz`]), [200, 200]);
  } finally {
    f.stop();
  }
});

test('X-Forwarded-For counts only from trusted proxies', async () => {
  const client = new polylimit.Client(server.url);
  const prefix = uniquePrefix('xff');
  const trusting = express();
  trusting.use(rateLimit(client.limiter('2/minute', { prefix }), { trustedProxies: ['127.0.0.1', '10.0.0.0/8'] }));
  trusting.get('/', (_req, res) => res.send('ok'));
  const ignoring = express();
  ignoring.use(rateLimit(client.limiter('2/minute', { prefix: `${prefix}-ignoring` })));
  ignoring.get('/', (_req, res) => res.send('ok'));
  const t = await listen(trusting);
  const i = await listen(ignoring);
  try {
    const from = (ip) => ({ headers: { 'X-Forwarded-For': ip } });
    // Behind a trusted peer, each forwarded client has its own count...
    assert.deepEqual(await statuses([t.base, t.base, t.base], from('192.0.2.1')), [200, 200, 429]);
    assert.deepEqual(await statuses([t.base], from('192.0.2.2')), [200]);
    // ... read from the right past trusted hops: the left-most entry is the client's own claim.
    assert.deepEqual(await statuses([t.base, t.base], from('6.6.6.6, 192.0.2.3, 10.1.2.3')), [200, 200]);
    assert.deepEqual(await statuses([t.base], from('7.7.7.7, 192.0.2.3')), [429]);
    // An untrusted peer's header is ignored: every request is 127.0.0.1's.
    assert.deepEqual(await statuses([i.base, i.base, i.base], from('192.0.2.9')), [200, 200, 429]);
    assert.deepEqual(await statuses([i.base], from('192.0.2.10')), [429]);
  } finally {
    t.stop();
    i.stop();
    client.close();
  }
});

test('Redis unreachable: 503 with the default policy, admitted with failurePolicy open', async () => {
  const client = new polylimit.Client('redis://127.0.0.1:1', { connectTimeoutMs: 200 });
  const app = express();
  app.use('/strict', rateLimit(client.limiter('5/s')));
  app.use('/open', rateLimit(client.limiter('5/s', { failurePolicy: 'open' })));
  app.get(['/strict', '/open'], (req, res) => res.send(req.polylimit?.degraded ? 'degraded' : 'ok'));
  const s = await listen(app);
  try {
    const strict = await fetch(`${s.base}/strict`);
    assert.equal(strict.status, 503);
    assert.equal(await strict.text(), 'Rate limiter unavailable\n');
    const open = await fetch(`${s.base}/open`);
    assert.equal(open.status, 200);
    assert.equal(await open.text(), 'degraded');
  } finally {
    s.stop();
    client.close();
  }
});

test('express-rate-limit with a PolylimitStore: one line, one shared limit', async () => {
  const client = new polylimit.Client(server.url);
  const prefix = uniquePrefix('erl');
  // Two apps (as two processes would be), each with its own express-rate-limit.
  const apps = [0, 1].map(() => {
    const app = express();
    app.use(
      expressRateLimit({
        windowMs: 60000,
        limit: 5,
        standardHeaders: 'draft-8',
        legacyHeaders: false,
        store: new PolylimitStore(client.limiter('5/minute', { prefix })),
      }),
    );
    app.get('/', (_req, res) => res.send('ok'));
    return app;
  });
  const servers = await Promise.all(apps.map(listen));
  try {
    const got = await statuses(Array.from({ length: 9 }, (_, i) => servers[i % 2].base));
    assert.equal(count(got, 200), 5);
    assert.equal(count(got, 429), 4);
    // A reset through the store frees the key for both.
    await new PolylimitStore(client.limiter('5/minute', { prefix })).resetKey('127.0.0.1');
    assert.deepEqual(await statuses([servers[1].base]), [200]);
  } finally {
    for (const s of servers) s.stop();
    client.close();
  }
});

// The missing-key rule (docs/integrations/README.md): a request whose key
// function finds no key is refused by default — 400, or 401 for a credential —
// and goes through unlimited only with onMissingKey: 'skip'.
test('a request without a key is refused by default in Express and Fastify', async () => {
  const fastify = require(path.join(packageDir, 'node_modules', 'fastify'));
  const fastifyPlugin = require(path.join(packageDir, 'lib', 'fastify'));
  const { apiKey, credential } = require(path.join(packageDir, 'lib', 'express'));
  const client = new polylimit.Client(server.url);
  const tenant = (req) => req.headers['x-tenant'] || null;
  const handled = [];
  const expressApp = (options) => {
    const app = express();
    app.use(rateLimit(client.limiter('2/minute', { prefix: uniquePrefix('mk') }), options));
    app.get('/', (req, res) => {
      handled.push(req.polylimit ? 'checked' : 'unchecked');
      res.send('ok');
    });
    return app;
  };
  const fastifyApp = async (options) => {
    const app = fastify();
    app.register(fastifyPlugin, { limiter: client.limiter('2/minute', { prefix: uniquePrefix('mkf') }), ...options });
    app.get('/', async () => 'ok');
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { base: `http://127.0.0.1:${app.server.address().port}`, stop: () => app.close() };
  };
  const servers = {
    byDefault: await listen(expressApp({ key: tenant })),
    credential: await listen(expressApp({ key: apiKey('X-API-Key') })),
    marked: await listen(expressApp({ key: credential(tenant) })),
    skip: await listen(expressApp({ key: tenant, onMissingKey: 'skip' })),
    fastifyDefault: await fastifyApp({ key: tenant }),
    fastifyCredential: await fastifyApp({ key: apiKey() }),
    fastifySkip: await fastifyApp({ key: tenant, onMissingKey: 'skip' }),
  };
  try {
    for (const name of ['byDefault', 'fastifyDefault']) {
      const r = await fetch(servers[name].base);
      assert.equal(r.status, 400, name);
      assert.equal(await r.text(), 'no rate-limit key in the request\n', name);
      assert.equal(r.headers.get('ratelimit-limit'), null, `${name}: no rate-limit headers`);
    }
    for (const name of ['credential', 'marked', 'fastifyCredential']) {
      const r = await fetch(servers[name].base);
      assert.equal(r.status, 401, name);
      assert.equal(await r.text(), 'no credential to rate-limit the request by\n', name);
    }
    // Keyless requests never reached a handler above; with skip they all do.
    assert.deepEqual(handled, []);
    assert.deepEqual(await statuses(Array(4).fill(servers.skip.base)), [200, 200, 200, 200]);
    assert.deepEqual(handled, ['unchecked', 'unchecked', 'unchecked', 'unchecked']);
    assert.deepEqual(await statuses(Array(4).fill(servers.fastifySkip.base)), [200, 200, 200, 200]);
    // With a key, the limit applies as usual (2/minute) in each mode.
    for (const name of ['byDefault', 'skip', 'fastifyDefault']) {
      const got = await statuses(Array(3).fill(servers[name].base), { headers: { 'x-tenant': 't1' } });
      assert.deepEqual(got, [200, 200, 429], name);
    }
    const keyed = await statuses(Array(3).fill(servers.credential.base), { headers: { 'x-api-key': 'k-1' } });
    assert.deepEqual(keyed, [200, 200, 429]);
    assert.throws(() => rateLimit(client.limiter('1/s'), { onMissingKey: 'allow' }), TypeError);
  } finally {
    for (const s of Object.values(servers)) await s.stop();
    client.close();
  }
});

test('the path goes to the policy percent-decoded, as routers match it', () => {
  const { pathOf } = require(path.join(packageDir, 'lib', 'http'));
  const text = (p) => (typeof p === 'string' ? p : Buffer.from(p).toString('latin1'));
  assert.equal(pathOf('/a/b?x=%20'), '/a/b', 'no escape: the string as it is, without the query');
  assert.equal(text(pathOf('/a%20b')), '/a b');
  assert.equal(text(pathOf('/a%2Fb?q=1')), '/a/b', '%2F is decoded too');
  assert.equal(text(pathOf('/a%2fb')), '/a/b');
  assert.equal(text(pathOf('/a%zz')), '/a%zz', 'an invalid escape stays');
  assert.equal(text(pathOf('/%')), '/%');
  assert.equal(text(pathOf('/a%2')), '/a%2');
  assert.equal(text(pathOf('/%%41')), '/%A');
  assert.equal(text(pathOf('/%2541')), '/%41', 'decoded once');
  // Bytes, not text: an escape of a byte that is not UTF-8 reaches the core as that byte.
  assert.deepEqual([...pathOf('/%FF%c3%A9')], [0x2f, 0xff, 0xc3, 0xa9]);
  // Node gives the request line's bytes as Latin-1 characters: each is its byte.
  assert.deepEqual([...pathOf('/\u00c3\u00a9%20')], [0x2f, 0xc3, 0xa9, 0x20]);
});

test('a percent-encoded path matches path globs in its decoded form (Express, Fastify)', async () => {
  const fastify = require(path.join(packageDir, 'node_modules', 'fastify'));
  const fastifyPlugin = require(path.join(packageDir, 'lib', 'fastify'));
  const client = new polylimit.Client(server.url);
  const prefix = uniquePrefix('enc');
  const limiters = [client.limiter('2/minute', { prefix }), client.limiter('2/minute', { prefix: `${prefix}-slash` })];
  const document = {
    rules: [
      { name: 'enc', paths: ['/enc/a b*'], limiter: 0 },
      { name: 'slash', paths: ['/enc/x/y'], limiter: 1 },
      { name: 'rest', limiter: null },
    ],
  };
  const policy = polylimit.policyFromDocument(document, limiters);
  const app = express();
  app.use(rateLimit(policy));
  app.use((_req, res) => res.send('ok'));
  const e = await listen(app);
  const f = fastify();
  f.register(fastifyPlugin, { policy });
  f.all('/*', async () => 'ok');
  await f.listen({ port: 0, host: '127.0.0.1' });
  const fb = `http://127.0.0.1:${f.server.address().port}`;
  try {
    // One budget (2) over both servers for /enc/a%20b..., whatever the spelling.
    const got = await statuses([`${e.base}/enc/a%20b`, `${fb}/enc/a%20b`, `${e.base}/enc/a%20bc?q=1`]);
    assert.deepEqual(got, [200, 200, 429]);
    // Outside the glob: not limited by it (the raw spelling does not match it either).
    assert.deepEqual(
      await statuses([`${e.base}/enc/a%2520b`, `${fb}/enc/a%2520b`, `${e.base}/enc/ab`]),
      [200, 200, 200],
    );
    // %2F is a '/' to the glob.
    assert.deepEqual(await statuses([`${e.base}/enc/x%2Fy`, `${fb}/enc/x%2fy`, `${e.base}/enc/x/y`]), [200, 200, 429]);
  } finally {
    e.stop();
    await f.close();
    client.close();
  }
});
