'use strict';
// The HTTP integrations over the core's request policy, over real HTTP
// against a real redis-server: a policy document in Express and Fastify
// (route templates, methods, count_when, lists, costs, the application's
// keys, on_error, send_headers), the options as a document, and the
// per-rule metrics in prom-client.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const packageDir = path.join(root, 'bindings', 'node');
const express = require(path.join(packageDir, 'node_modules', 'express'));
const fastify = require(path.join(packageDir, 'node_modules', 'fastify'));
const promClient = require(path.join(packageDir, 'node_modules', 'prom-client'));
const polylimit = require(packageDir);
const { rateLimit, documentOf, apiKey, compose, firstOf, user, route } = require(
  path.join(packageDir, 'lib', 'express'),
);
const fastifyPlugin = require(path.join(packageDir, 'lib', 'fastify'));
const { registerPolylimit } = require(path.join(packageDir, 'lib', 'prom-client'));
const { startRedis, uniquePrefix } = require('./redis');

let server;
before(async () => {
  server = await startRedis();
});
after(async () => {
  if (server) await server.stop();
});

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

async function get(url, init = {}) {
  const r = await fetch(url, init);
  return { status: r.status, body: await r.text(), headers: r.headers };
}

async function statuses(n, url, init) {
  const out = [];
  for (let i = 0; i < n; i++) out.push((await get(url, init)).status);
  return out;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const from = (address, headers = {}) => ({ headers: { 'X-Forwarded-For': address, ...headers } });

// The document of a service: every feature the contract names.
function serviceDocument() {
  return {
    trusted_proxies: ['127.0.0.1', '::1'],
    deny: { ips: ['198.51.100.0/24'] },
    allow: { users: ['vip'] },
    exempt: ['/healthz'],
    rules: [
      { name: 'login', paths: ['/login'], methods: ['POST'], limiter: 0, key: 'ip', count_when: 'failures' },
      { name: 'account', routes: ['/users/:id'], limiter: 0, key: 'user+route' },
      { name: 'search', paths: ['/search'], limiter: 1, cost: { header: 'X-Cost', default: 2, max: 10 } },
      { name: 'app', paths: ['/app'], limiter: 0, key: 'app' },
      { name: 'api', paths: ['/api/*'], limiter: 0, key: ['api_key', 'ip'] },
      { name: 'default', limiter: 0 },
    ],
  };
}

test('Express with a policy document: rules, templates, lists, costs, count_when', async () => {
  const client = new polylimit.Client(server.url);
  const prefix = uniquePrefix('doc');
  const limiters = [client.limiter('2/minute', { prefix }), client.limiter('10/minute', { prefix: `${prefix}-s` })];
  const policy = polylimit.policyFromDocument(JSON.stringify(serviceDocument()), limiters);
  const appKeys = [];
  const hooks = {
    user: (req) => req.headers['x-user'],
    appKey: (req, rule) => {
      appKeys.push(rule);
      return req.headers['x-app-key'];
    },
  };
  const limit = rateLimit(policy, hooks);
  assert.equal(limit.policy, policy);
  const app = express();
  app.get('/users/:id', limit, (_req, res) => res.send('ok\n'));
  app.use(limit);
  app.all('/{*rest}', (req, res) => res.status(Number(req.headers['x-status'] || 200)).send('ok\n'));
  const s = await listen(app);
  try {
    // The default rule, by the forwarded client's address, with the contract's headers.
    const ok = await get(s.base, from('203.0.113.7'));
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('ratelimit-policy'), '"default";q=2;w=60');
    assert.equal((await get(s.base, from('203.0.113.7'))).status, 200);
    const denied = await get(s.base, from('203.0.113.7'));
    assert.equal(denied.status, 429);
    assert.equal(denied.body, 'Too Many Requests\n');
    assert.equal(denied.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(denied.headers.get('ratelimit'), '"default";r=0;t=60');
    assert.ok(Number(denied.headers.get('retry-after')) >= 1);
    // deny before anything; allow unchecked; exempt paths.
    const forbidden = await get(s.base, from('198.51.100.9'));
    assert.deepEqual([forbidden.status, forbidden.body], [403, 'Forbidden\n']);
    assert.deepEqual(await statuses(4, s.base, from('203.0.113.7', { 'X-User': 'vip' })), [200, 200, 200, 200]);
    assert.deepEqual(await statuses(3, `${s.base}/healthz`, from('203.0.113.7')), [200, 200, 200]);
    // count_when failures: the logins answered 200 are refunded, the 401s count.
    const login = (status) => ({ method: 'POST', ...from('203.0.113.8', { 'X-Status': String(status) }) });
    for (let i = 0; i < 4; i++) {
      assert.equal((await get(`${s.base}/login`, login(200))).status, 200);
      await sleep(20); // the refund follows the response
    }
    assert.deepEqual(await statuses(3, `${s.base}/login`, login(401)), [401, 401, 429]);
    // A GET of /login is not the login rule's: the default's, for another client.
    assert.equal((await get(`${s.base}/login`, from('203.0.113.9'))).status, 200);
    // The route template (Express's req.route.path): one budget per user for every id.
    const alice = from('203.0.113.10', { 'X-User': 'alice' });
    assert.deepEqual(
      [(await get(`${s.base}/users/1`, alice)).status, (await get(`${s.base}/users/2`, alice)).status],
      [200, 200],
    );
    const third = await get(`${s.base}/users/3`, alice);
    assert.equal(third.status, 429);
    assert.equal(third.headers.get('ratelimit-policy'), '"account";q=2;w=60');
    const anonymous = await get(`${s.base}/users/1`, from('203.0.113.10'));
    assert.deepEqual([anonymous.status, anonymous.body], [401, 'no credential to rate-limit the request by\n']);
    // Costs: the header's (within max), else the rule's default (2 of 10).
    const cost = (c) => from('203.0.113.11', c === undefined ? {} : { 'X-Cost': c });
    assert.equal((await get(`${s.base}/search`, cost('7'))).headers.get('ratelimit-remaining'), '3');
    const bad = await get(`${s.base}/search`, cost('11'));
    assert.deepEqual([bad.status, bad.body], [400, 'invalid request cost\n']);
    assert.equal((await get(`${s.base}/search`, cost())).headers.get('ratelimit-remaining'), '1');
    assert.equal((await get(`${s.base}/search`, cost())).status, 429);
    // The application's key: asked for only where a rule keys by 'app'.
    assert.deepEqual(appKeys, []);
    assert.deepEqual(await statuses(3, `${s.base}/app`, from('203.0.113.12', { 'X-App-Key': 'k1' })), [200, 200, 429]);
    assert.equal((await get(`${s.base}/app`, from('203.0.113.12', { 'X-App-Key': 'k2' }))).status, 200);
    const noKey = await get(`${s.base}/app`, from('203.0.113.12'));
    assert.deepEqual([noKey.status, noKey.body], [400, 'no rate-limit key in the request\n']);
    assert.deepEqual(new Set(appKeys), new Set(['app']));
    // Alternatives: the API key when given, else the address.
    assert.deepEqual(await statuses(3, `${s.base}/api/x`, from('203.0.113.13', { 'X-API-Key': 'a' })), [200, 200, 429]);
    assert.equal((await get(`${s.base}/api/x`, from('203.0.113.13'))).status, 200);
    // Every outcome counted per rule.
    const m = policy.metrics();
    assert.match(m, /^polylimit_http_requests_total\{rule="login",outcome="allowed"\} 6$/m);
    assert.match(m, /^polylimit_http_requests_total\{rule="login",outcome="denied"\} 1$/m);
    assert.match(m, /^polylimit_http_requests_total\{rule="account",outcome="missing_key"\} 1$/m);
    assert.match(m, /^polylimit_http_requests_total\{rule="search",outcome="invalid"\} 1$/m);
    assert.match(m, /^polylimit_http_requests_total\{rule="\(lists\)",outcome="forbidden"\} 1$/m);
  } finally {
    s.stop();
    await client.close();
  }
});

test('on_error allow, send_headers false, and a cost function', async () => {
  const down = new polylimit.Client('redis://127.0.0.1:1', { connectTimeoutMs: 200 });
  const client = new polylimit.Client(server.url);
  const open = polylimit.policyFromDocument({ on_error: 'allow', rules: [{ name: 'all', limiter: 0 }] }, [
    down.limiter('5/s'),
  ]);
  const quiet = polylimit.policyFromDocument({ send_headers: false, rules: [{ name: 'all', limiter: 0 }] }, [
    client.limiter('3/minute', { prefix: uniquePrefix('quiet') }),
  ]);
  const openApp = express();
  openApp.use(rateLimit(open));
  openApp.get('/', (_req, res) => res.send('ok\n'));
  const quietApp = express();
  quietApp.use(rateLimit(quiet, { cost: (req) => Number(req.headers['x-units'] || 1) }));
  quietApp.get('/', (_req, res) => res.send('ok\n'));
  const a = await listen(openApp);
  const b = await listen(quietApp);
  try {
    const r = await get(a.base);
    assert.deepEqual([r.status, r.headers.get('ratelimit-limit')], [200, null]);
    const admitted = await get(b.base, { headers: { 'X-Units': '2' } });
    assert.deepEqual([admitted.status, admitted.headers.get('ratelimit-limit')], [200, null]);
    const refused = await get(b.base, { headers: { 'X-Units': '2' } });
    assert.deepEqual([refused.status, refused.headers.get('ratelimit-remaining')], [429, '1']);
  } finally {
    a.stop();
    b.stop();
    await down.close();
    await client.close();
  }
});

test('Fastify with a policy document: route templates and count_when', async () => {
  const client = new polylimit.Client(server.url);
  const prefix = uniquePrefix('fdoc');
  const policy = polylimit.policyFromDocument(
    {
      rules: [
        { name: 'items', routes: ['/items/:id'], limiter: 0, key: 'route' },
        { name: 'rest', limiter: 0, count_when: ['4xx'] },
      ],
    },
    [client.limiter('2/minute', { prefix })],
  );
  const app = fastify();
  app.register(fastifyPlugin, { policy });
  app.get('/items/:id', async () => 'ok\n');
  app.get('/other', async (_request, reply) => reply.code(500).send('broken\n'));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${app.server.address().port}`;
  try {
    // One budget for the route, whatever the id.
    const got = [];
    for (const id of [1, 2, 3]) got.push((await get(`${base}/items/${id}`)).status);
    assert.deepEqual(got, [200, 200, 429]);
    assert.equal((await get(`${base}/items/4`)).headers.get('ratelimit-policy'), '"items";q=2;w=60');
    // 500s do not count (count_when 4xx): refunded after each response.
    for (let i = 0; i < 4; i++) {
      assert.equal((await get(`${base}/other`)).status, 500);
      await sleep(20);
    }
    // An unknown route (404) counts.
    assert.deepEqual(await statuses(3, `${base}/missing`), [404, 404, 429]);
  } finally {
    await app.close();
    await client.close();
  }
});

test('the options as a policy document', async () => {
  const client = new polylimit.Client('memory://');
  const main = client.limiter('10/minute');
  const login = client.limiter('3/minute');
  const byTenant = (req) => req.headers['x-tenant'];
  const t = documentOf(main, {
    key: firstOf(apiKey(), compose(user(), route()), byTenant),
    trustedProxies: ['10.0.0.0/8'],
    ipv6Prefix: 56,
    exempt: ['/healthz', '/static/'],
    routes: { '/login': { limiter: login, methods: ['POST'], key: 'ip', countWhen: 'failures' }, '/api/': main },
    rules: [{ name: 'account', routes: ['/users/:id'], limiter: null }],
    deny: { apiKeys: ['leaked'] },
    allow: { ips: ['192.0.2.1'] },
    cost: 2,
    onMissingKey: 'skip',
    sendHeaders: false,
    onError: 'allow',
  });
  assert.deepEqual(t.document, {
    trusted_proxies: ['10.0.0.0/8'],
    ipv6_prefix: 56,
    deny: { api_keys: ['leaked'] },
    allow: { ips: ['192.0.2.1'] },
    exempt: ['/healthz', '/static/*'],
    send_headers: false,
    on_error: 'allow',
    rules: [
      {
        name: 'login',
        paths: ['/login'],
        methods: ['POST'],
        limiter: 1,
        key: 'ip',
        cost: 2,
        on_missing_key: 'skip',
        count_when: 'failures',
      },
      {
        name: 'api',
        paths: ['/api/*'],
        limiter: 0,
        key: ['api_key:X-API-Key', 'user+route', 'app'],
        cost: 2,
        on_missing_key: 'skip',
      },
      { name: 'account', routes: ['/users/:id'], limiter: null },
      {
        name: 'default',
        limiter: 0,
        key: ['api_key:X-API-Key', 'user+route', 'app'],
        cost: 2,
        on_missing_key: 'skip',
      },
    ],
  });
  assert.deepEqual(t.limiters, [main, login]);
  assert.equal(t.appKey, byTenant);
  // The core reads it; what it refuses is refused with the field named.
  assert.ok(polylimit.policyFromDocument(t.document, t.limiters) instanceof polylimit.HttpPolicy);
  assert.throws(
    () => rateLimit(main, { key: 'ipv7' }),
    (e) =>
      e instanceof polylimit.InvalidArgumentError &&
      /rules\[0\] \("default"\)\.key: unknown key part "ipv7"/.test(e.message),
  );
  assert.throws(() => rateLimit(main, { countWhen: () => true }), TypeError);
  await client.close();
});

test('per-rule metrics in prom-client, never per key', async () => {
  const client = new polylimit.Client('memory://', { name: 'http-metrics' });
  const limit = rateLimit(client.limiter('1/minute', { prefix: 'm' }), {
    routes: { '/login': { limiter: client.limiter('1/minute', { prefix: 'm-login' }), name: 'login' } },
  });
  const app = express();
  app.use(limit);
  app.all('/{*rest}', (_req, res) => res.send('ok\n'));
  const s = await listen(app);
  const registry = new promClient.Registry();
  registerPolylimit(registry, client, limit);
  try {
    await statuses(2, `${s.base}/login`);
    await statuses(3, `${s.base}/secret-path-x`);
    const text = await registry.metrics();
    assert.match(text, /^polylimit_http_requests_total\{rule="login",outcome="allowed"\} 1$/m);
    assert.match(text, /^polylimit_http_requests_total\{rule="login",outcome="denied"\} 1$/m);
    assert.match(text, /^polylimit_http_requests_total\{rule="default",outcome="denied"\} 2$/m);
    assert.match(text, /^polylimit_checks_total\{client="http-metrics"\} 5$/m);
    assert.doesNotMatch(text, /secret-path-x|127\.0\.0\.1/);
  } finally {
    s.stop();
    await client.close();
  }
});
