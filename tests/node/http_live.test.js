'use strict';
// The live policy over real HTTP against a real redis-server: limits and
// plans in a TOML document, reload (accepted and refused), the plan
// resolver (its cache, a failing one and a slow one), and a watched file.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const packageDir = path.join(root, 'bindings', 'node');
const express = require(path.join(packageDir, 'node_modules', 'express'));
const fastify = require(path.join(packageDir, 'node_modules', 'fastify'));
const polylimit = require(packageDir);
const { rateLimit } = require(path.join(packageDir, 'lib', 'express'));
const fastifyPlugin = require(path.join(packageDir, 'lib', 'fastify'));
const { startRedis, uniquePrefix } = require('./redis');

let server;
let client;
before(async () => {
  server = await startRedis();
  client = new polylimit.Client(server.url);
});
after(async () => {
  if (client) await client.close();
  if (server) await server.stop();
});

// The plans document: free 10/minute, pro 100/minute, acme on pro.
function plans(prefix, { free = '10/minute', resolver = '' } = {}) {
  return `# plans
version = 1
prefix = "${prefix}"
default_plan = "free"

[plans.free]
api = "${free}"
[plans.pro]
api = "100/minute"

[tenants]
acme = "pro"
globex = "free"

[[rules]]
name = "api"
paths = ["/api/*"]
key = "tenant"
limit = "plan"
${resolver}`;
}

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

function expressApp(live) {
  const app = express();
  app.use(rateLimit(live, { tenant: (req) => req.headers['x-tenant'] }));
  app.use((_req, res) => res.send('ok'));
  return listen(app);
}

// How many of n sequential requests as `tenant` went on (200).
async function admitted(base, tenant, n, where = '/api/x') {
  let ok = 0;
  for (let i = 0; i < n; i++) {
    const r = await fetch(`${base}${where}`, { headers: { 'X-Tenant': tenant } });
    await r.text();
    if (r.status === 200) ok++;
    else assert.equal(r.status, 429);
  }
  return ok;
}

test('plans in a TOML document: free 10, pro 100; a reload raises free to 20', async () => {
  const prefix = uniquePrefix('live-plans');
  const live = client.livePolicy(plans(prefix));
  assert.equal(live.generation, 1);
  const s = await expressApp(live);
  try {
    assert.equal(await admitted(s.base, 'globex', 15), 10);
    assert.equal(await admitted(s.base, 'acme', 110), 100);
    assert.equal(await admitted(s.base, 'initech', 12), 10); // not in the table: the default plan
    live.reload(plans(prefix, { free: '20/minute' }));
    assert.equal(live.generation, 2);
    assert.equal(live.lastError, '');
    // The key's use is kept: 10 more in the window, then denied.
    assert.equal(await admitted(s.base, 'globex', 15), 10);
    assert.match(live.metrics(), /polylimit_http_policy_reloads_total\{result="accepted"\} 2/);
    assert.match(live.metrics(), /polylimit_http_requests_total\{rule="api",outcome="allowed"\} 130/);
  } finally {
    s.stop();
    live.close();
  }
});

test('a broken document is refused with its line; the old limits stay', async () => {
  const prefix = uniquePrefix('live-broken');
  const live = client.livePolicy(plans(prefix));
  const s = await expressApp(live);
  try {
    const broken = plans(prefix).replace('api = "100/minute"', 'api = "100/fortnight"');
    assert.throws(
      () => live.reload(broken),
      (e) => e instanceof polylimit.InvalidArgumentError && /line 9: plans\.pro\.api/.test(e.message),
    );
    assert.throws(() => live.reload('[[rules]]\nname = \n'), /line 2/);
    assert.equal(live.generation, 1);
    assert.match(live.lastError, /line 2/);
    assert.equal(await admitted(s.base, 'acme', 105), 100);
    assert.equal(await admitted(s.base, 'globex', 12), 10);
  } finally {
    s.stop();
    live.close();
  }
});

test('the resolver: its plan is cached; one that throws gives the default plan', async () => {
  const prefix = uniquePrefix('live-resolver');
  const section = '\n[resolver]\ntimeout_ms = 200\ncache_ttl_ms = 60000\ncache_size = 100\n';
  // Without a resolver, a document with a [resolver] section is refused.
  assert.throws(() => client.livePolicy(plans(prefix, { resolver: section })), /resolver/);
  const asked = [];
  const live = client.livePolicy(plans(prefix, { resolver: section }), {
    resolver: async (tenant) => {
      asked.push(tenant);
      if (tenant === 'broken') throw new Error('the plans service is down');
      return tenant.startsWith('big') ? 'pro' : 'free';
    },
  });
  const s = await expressApp(live);
  try {
    assert.equal(await admitted(s.base, 'bigcorp', 105), 100);
    assert.equal(await admitted(s.base, 'smallco', 12), 10);
    assert.equal(await admitted(s.base, 'acme', 3), 3); // in the table: not asked
    assert.equal(await admitted(s.base, 'broken', 12), 10); // default plan
    assert.deepEqual(
      asked.filter((t) => t !== 'broken'),
      ['bigcorp', 'smallco'],
    ); // cached after the first
    assert.ok(asked.filter((t) => t === 'broken').length >= 1);
  } finally {
    s.stop();
    live.close();
  }
});

test('a resolver slower than timeout_ms gives the default plan, without blocking the loop', async () => {
  const prefix = uniquePrefix('live-slow');
  const section = '\n[resolver]\ntimeout_ms = 50\ncache_ttl_ms = 60000\ncache_size = 100\n';
  const timers = [];
  const live = client.livePolicy(plans(prefix, { resolver: section }), {
    resolver: (tenant) =>
      new Promise((resolve) => {
        timers.push(setTimeout(() => resolve(tenant === 'slowpro' ? 'pro' : 'free'), 2000));
      }),
  });
  const app = fastify();
  app.register(fastifyPlugin, { policy: live, tenant: (req) => req.headers['x-tenant'] });
  app.get('/api/x', async () => 'ok');
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${app.server.address().port}`;
  try {
    // The event loop keeps turning while the resolver runs: a 5 ms interval ticks.
    let ticks = 0;
    const tick = setInterval(() => ticks++, 5);
    const started = performance.now();
    const first = await fetch(`${base}/api/x`, { headers: { 'X-Tenant': 'slowpro' } });
    const elapsed = performance.now() - started;
    clearInterval(tick);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('ratelimit-limit') ?? first.headers.get('x-ratelimit-limit'), '10');
    assert.ok(elapsed >= 45 && elapsed < 500, `the request took ${elapsed} ms`);
    assert.ok(ticks >= 3, `the loop ticked ${ticks} times`);
    // The default plan: 10 in all (the late answer is not cached).
    assert.equal(await admitted(base, 'slowpro', 12), 9);
  } finally {
    for (const t of timers) clearTimeout(t);
    await app.close();
    live.close();
  }
});

test('a watched file rewritten (renamed over) is reloaded within a second', async () => {
  const prefix = uniquePrefix('live-watch');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'polylimit-live-'));
  const file = path.join(dir, 'policy.toml');
  fs.writeFileSync(file, plans(prefix));
  const live = client.openPolicy(file, { watchMs: 50 });
  const s = await expressApp(live);
  try {
    assert.equal(live.generation, 1);
    assert.equal(await admitted(s.base, 'globex', 12), 10);
    const tmp = path.join(dir, 'policy.toml.tmp');
    fs.writeFileSync(tmp, plans(prefix, { free: '20/minute' }));
    fs.renameSync(tmp, file);
    const started = Date.now();
    while (live.generation < 2 && Date.now() - started < 1000) await new Promise((r) => setTimeout(r, 10));
    assert.equal(live.generation, 2, 'reloaded within 1 s');
    assert.equal(await admitted(s.base, 'globex', 12), 10);
    // A broken file is refused: the policy stays, lastError says why.
    fs.writeFileSync(tmp, '[[rules]]\nname = \n');
    fs.renameSync(tmp, file);
    const t2 = Date.now();
    while (live.lastError === '' && Date.now() - t2 < 1000) await new Promise((r) => setTimeout(r, 10));
    assert.match(live.lastError, /line 2/);
    assert.equal(live.generation, 2);
    assert.throws(() => live.reloadFile(), /line 2/);
  } finally {
    s.stop();
    live.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('an application limiter still works with a live policy; the old constructor too', async () => {
  const prefix = uniquePrefix('live-app');
  const perIp = client.limiter('2/minute', { prefix: `${prefix}:ip` });
  const doc = { version: 1, rules: [{ name: 'all', paths: ['/*'], key: 'ip', limiter: 0 }] };
  const live = client.livePolicy(doc, { limiters: [perIp] });
  const s = await expressApp(live);
  try {
    assert.equal(await admitted(s.base, 'x', 4, '/a'), 2);
  } finally {
    s.stop();
    live.close();
  }
  assert.throws(() => live.current(), polylimit.ClosedError);
  // A document's own limits in a policy that never reloads, on a client.
  const fixed = polylimit.policyFromDocument(plans(uniquePrefix('live-fixed')), [], { client });
  const s2 = await expressApp(fixed);
  try {
    assert.equal(await admitted(s2.base, 'globex', 12), 10);
  } finally {
    s2.stop();
  }
});
