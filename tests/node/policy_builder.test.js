'use strict';
// A policy document in code (definePolicy) against the same policy in TOML
// (docs/examples/policy.toml): every request gives the same step, the same
// limit and the same answer; a document in code with an error is refused
// with the core's message. On memory:// (no Redis needed).
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const polylimit = require(path.join(root, 'bindings', 'node'));
const { definePolicy } = polylimit;

// docs/examples/policy.toml, in code.
function shop() {
  return definePolicy({
    version: 1,
    prefix: 'shop',
    trusted_proxies: ['10.0.0.0/8'],
    default_plan: 'free',
    plans: {
      free: { api: '10/minute', search: '2/second' },
      pro: { api: '100/minute', search: '10/second' },
      enterprise: { api: '1000/minute; 50/second', search: '100/second' },
    },
    tenants: { acme: 'pro', initech: 'enterprise' },
    deny: { ips: ['203.0.113.0/24'] },
    rules: [
      { name: 'health', paths: ['/healthz'], limit: 'none' },
      { name: 'login', paths: ['/login'], methods: ['POST'], key: 'ip', limit: '5/minute', count_when: 'failures' },
      { name: 'search', paths: ['/api/search*'], key: 'tenant', limit: 'plan', algorithm: 'gcra' },
      { name: 'api', paths: ['/api/*'], key: 'tenant', limit: 'plan' },
    ],
  });
}

const toml = fs.readFileSync(path.join(root, 'docs', 'examples', 'policy.toml'), 'utf8');

// The requests: each tenant on the API, a login through the trusted proxy,
// the health check, a denied address, a method no rule takes.
function requests() {
  const all = [];
  for (const tenant of ['acme', 'initech', 'globex', undefined])
    for (const p of ['/api/orders', '/api/search']) all.push({ method: 'GET', path: p, peer: '127.0.0.1', tenant });
  const proxied = (ip, extra) => ({ peer: '10.0.0.1', headers: { 'X-Forwarded-For': ip }, ...extra });
  all.push(proxied('198.51.100.7', { method: 'POST', path: '/login' }));
  all.push(proxied('198.51.100.7', { method: 'GET', path: '/login' }));
  all.push({ method: 'GET', path: '/healthz', peer: '127.0.0.1' });
  all.push(proxied('203.0.113.9', { method: 'GET', path: '/api/orders', tenant: 'acme' }));
  return all.map((r) => ({ plan: '', ...r }));
}

// What one policy does with a request: the step, the limit of its
// limiter (a peek: nothing is consumed) and the answer to that decision.
async function outcome(policy, request) {
  const step = policy.prepare(request);
  const got = {
    action: step.action,
    rule: step.rule,
    status: step.status,
    key: step.action === 'check' ? Buffer.from(step.key).toString() : null,
    cost: step.action === 'check' ? step.cost : null,
  };
  if (step.action === 'check') {
    const decision = await policy.limiterOf(step).peek(step.key);
    assert.equal(decision.allowed, true);
    got.limit = decision.limit;
    got.answer = policy.answer(step, decision);
  } else if (step.action === 'respond') {
    got.answer = policy.answer(step);
  }
  return got;
}

let client;
before(() => {
  client = new polylimit.Client('memory://');
});
after(async () => {
  await client.close();
});

test('the example policy in code decides every request as the TOML file does', async () => {
  const fromFile = client.livePolicy(toml);
  const fromCode = client.livePolicy(shop());
  try {
    const seen = new Set();
    for (const request of requests()) {
      const want = await outcome(fromFile.current(), request);
      const got = await outcome(fromCode.current(), request);
      assert.deepEqual(got, want, JSON.stringify(request));
      seen.add(`${want.action} ${want.rule} ${want.limit ?? ''}`);
    }
    // The requests cover every rule, every plan's limit, a denial and a missing tenant.
    for (const s of [
      'check api 100',
      'check api 50', // enterprise: 1000/minute; 50/second, the tighter one
      'check api 10',
      'check search 10',
      'check search 100',
      'check search 2',
      'check login 5',
      'proceed health ',
      'proceed null ',
      'respond null ',
      'respond api ',
    ])
      assert.ok(seen.has(s), `${s} in ${[...seen].join(', ')}`);
    // The same document from code is accepted by reload and policyFromDocument.
    fromFile.reload(shop());
    assert.equal(fromFile.generation, 2);
    const fixed = polylimit.policyFromDocument(shop(), [], { client });
    assert.deepEqual(
      fixed.rules.map((r) => r.name),
      ['health', 'login', 'search', 'api'],
    );
  } finally {
    fromFile.close();
    fromCode.close();
  }
});

test('a document in code with an error is refused with the core message', () => {
  const wrong = { ...shop(), default_plan: 'gold' };
  const refused = (e) =>
    e instanceof polylimit.InvalidArgumentError && /default_plan: must name one of the plans/.test(e.message);
  assert.throws(() => client.livePolicy(wrong), refused);
  assert.throws(() => polylimit.policyFromDocument(wrong, [], { client }), refused);
  const live = client.livePolicy(shop());
  try {
    const badRule = shop();
    badRule.rules[1] = { ...badRule.rules[1], key: 'ipv7' };
    assert.throws(
      () => live.reload(badRule),
      (e) =>
        e instanceof polylimit.InvalidArgumentError &&
        /rules\[1\] \("login"\)\.key: unknown key part "ipv7"/.test(e.message),
    );
    assert.equal(live.generation, 1);
  } finally {
    live.close();
  }
  assert.throws(() => definePolicy('version = 1'), TypeError);
  assert.throws(() => definePolicy([]), TypeError);
});
