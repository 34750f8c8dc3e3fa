'use strict';
// Cluster and Sentinel deployments (tests/fixture/redisfix): the same exact
// totals as standalone, keys spread over every slot, batches across nodes.
const { test } = require('node:test');
const assert = require('node:assert/strict');

const polylimit = require('../../bindings/node');
const { startRedis, uniquePrefix } = require('./redis');

async function exactTotals(url) {
  const client = new polylimit.Client(url);
  try {
    const limiter = client.limiter('100/minute', { prefix: uniquePrefix('deploy') });
    // 20 keys (spread over the slots) x 150 checks, all in flight at once.
    const keys = Array.from({ length: 20 }, (_, i) => `user:${i}`);
    const decisions = await Promise.all(keys.flatMap((k) => Array.from({ length: 150 }, () => limiter.check(k))));
    assert.equal(decisions.filter((d) => d.allowed).length, 20 * 100);
    const batch = await limiter.checkMany(keys);
    assert.equal(batch.length, 20);
    for (const d of batch) {
      assert.ok(d instanceof polylimit.Decision, String(d));
      assert.equal(d.allowed, false);
    }
    await limiter.reset('user:3');
    assert.equal((await limiter.peek('user:3')).remaining, 100);
  } finally {
    client.close();
  }
}

test('Redis Cluster: exact totals over every node', async () => {
  const cluster = await startRedis(['cluster', '--masters', '3', '--replicas', '0']);
  try {
    assert.match(cluster.url, /^redis\+cluster:\/\//);
    await exactTotals(cluster.url);
  } finally {
    await cluster.stop();
  }
});

test('Sentinel: exact totals on the master', async () => {
  const sentinel = await startRedis(['sentinel', '--replicas', '1', '--sentinels', '3']);
  try {
    assert.match(sentinel.url, /^redis\+sentinel:\/\//);
    await exactTotals(sentinel.url);
  } finally {
    await sentinel.stop();
  }
});
