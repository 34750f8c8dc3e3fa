'use strict';
// The HTTP contract's golden vectors (tests/http/vectors.json) through the
// binding's public API: policyFromDocument, prepare, answer, refundDue. The
// same file is checked by every language's suite (tests/cpp/http_vectors_test.cpp
// through the C ABI).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const polylimit = require(path.join(root, 'bindings', 'node'));
const vectors = JSON.parse(fs.readFileSync(path.join(root, 'tests', 'http', 'vectors.json'), 'utf8'));

// A suite's limiters (memory://) and its policy, through the public API.
function build(suite) {
  const client = new polylimit.Client('memory://');
  const limiters = suite.limiters.map((spec) => client.limiter(spec));
  return { client, limiters, policy: polylimit.policyFromDocument(suite.policy, limiters) };
}

// A request of the vectors as prepare() takes it.
function request(r) {
  return {
    method: r.method,
    path: r.path,
    route: r.route,
    peer: r.peer,
    headers: r.headers,
    user: r.user,
    tenant: r.tenant,
    appKey: r.app_key,
    cost: r.cost,
  };
}

// A decision of the vectors as a Decision's fields.
function decision(d) {
  return {
    allowed: d.allowed === true,
    limit: d.limit || 0,
    remaining: d.remaining || 0,
    retryAfterMs: d.retry_after_ms || 0,
    resetAfterMs: d.reset_after_ms || 0,
    granted: d.allowed ? 1 : 0,
    degraded: d.degraded === true,
    cached: false,
    shadowed: d.shadowed === true,
  };
}

test('every case of every suite: step, answers, counts', async () => {
  let cases = 0;
  for (const suite of vectors.suites) {
    const { client, policy } = build(suite);
    try {
      for (const c of suite.cases) {
        cases += 1;
        const where = `${suite.name} / ${c.name}`;
        const step = policy.prepare(request(c.request));
        const want = c.step;
        assert.equal(step.action, want.action, `${where}: action`);
        assert.equal(step.rule, want.rule === undefined ? null : want.rule, `${where}: rule`);
        if (step.action === 'check') {
          assert.equal(step.key, want.key, `${where}: key`);
          assert.equal(step.cost, want.cost, `${where}: cost`);
        }
        if (want.answer !== undefined) assert.deepEqual(policy.answer(step), want.answer, `${where}: answer`);
        for (const a of c.answers || [])
          assert.deepEqual(
            policy.answer(step, a.decision === null ? null : decision(a.decision)),
            a.answer,
            `${where}: answer to ${JSON.stringify(a.decision)}`,
          );
        for (const [status, counts] of Object.entries(c.counts || {}))
          assert.equal(
            policy.refundDue(step, decision({ allowed: true }), Number(status)),
            !counts,
            `${where}: counts ${status}`,
          );
      }
    } finally {
      await client.close();
    }
  }
  assert.ok(cases >= 40, `${cases} cases`);
});

test('refunds', async () => {
  for (const r of vectors.refunds) {
    const suite = vectors.suites[r.suite];
    const { client, policy } = build(suite);
    try {
      const c = suite.cases.find((x) => x.name === r.case);
      assert.ok(c, r.case);
      const step = policy.prepare(request(c.request));
      assert.equal(policy.refundDue(step, decision(r.decision), r.status), r.refund, r.name);
    } finally {
      await client.close();
    }
  }
});

test('invalid documents are refused, naming the line and the field', async () => {
  const client = new polylimit.Client('memory://');
  const limiters = [client.limiter('5/minute'), client.limiter('10/second')];
  try {
    for (const v of vectors.invalid) {
      assert.throws(
        () => polylimit.policyFromDocument(v.document, limiters),
        (e) => {
          assert.ok(e instanceof polylimit.InvalidArgumentError, `${v.document}: ${e}`);
          assert.ok(e.message.includes(v.error), `message: ${e.message}\nwanted: ${v.error}`);
          return true;
        },
      );
    }
  } finally {
    await client.close();
  }
});
