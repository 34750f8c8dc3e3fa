'use strict';
// Coalescing (docs/limiter.md, "Hot keys: coalescing"): promises in flight on
// one key are decided exactly, in far fewer round trips than checks; with
// { coalesce: false } every check is its own round trip.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');

const polylimit = require('../../bindings/node');
const { startRedis, uniquePrefix } = require('./redis');

const LOOPS = 32; // concurrent check loops, each with one promise in flight
const LIMIT = 300;
const DENIALS = 3; // each loop checks until it has seen this many

let server;
before(async () => {
  server = await startRedis();
});
after(async () => {
  if (server) await server.stop();
});

for (const coalesce of [true, false]) {
  test(`coalesced hammer of one key (coalesce: ${coalesce})`, async () => {
    const client = new polylimit.Client(server.url, { poolSize: 8, coalesce });
    try {
      const limiter = client.limiter(`${LIMIT}/hour`, { prefix: uniquePrefix('coalesce') });
      await limiter.check('warm'); // connected, script loaded
      const before = client.stats();
      let admitted = 0;
      let checks = 0;
      const loop = async () => {
        for (let denied = 0; denied < DENIALS; ) {
          const d = await limiter.check('hot');
          checks++;
          if (d.allowed) admitted++;
          else denied++;
        }
      };
      await Promise.all(Array.from({ length: LOOPS }, loop));
      const after = client.stats();
      assert.equal(admitted, LIMIT, `admitted of ${checks} checks`);
      assert.equal(after.checks - before.checks, checks);
      const trips = after.round_trips - before.round_trips;
      if (coalesce) assert.ok(trips * 2 < checks, `${trips} round trips for ${checks} checks`);
      else assert.equal(trips, checks, 'one round trip per check');
    } finally {
      client.close();
    }
  });
}

test('coalesce must be a boolean', () => {
  for (const bad of [0, 1, 'no', null]) {
    assert.throws(() => new polylimit.Client('memory://', { coalesce: bad }), {
      name: 'TypeError',
      message: /^coalesce must be a boolean/,
    });
  }
  new polylimit.Client('memory://', { coalesce: false }).close();
});
