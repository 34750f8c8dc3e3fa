'use strict';
// The Node binding against a real redis-server: exact totals with many
// promises in flight, errors as PolylimitError / TypeError, close() settling
// everything, an idle client not holding the event loop, worker_threads.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { Worker } = require('node:worker_threads');

const polylimit = require('../../bindings/node');
const { startRedis, uniquePrefix } = require('./redis');

let server;
before(async () => {
  server = await startRedis();
});
after(async () => {
  if (server) await server.stop();
});

test('1000 promises in flight admit exactly the limit', async () => {
  const client = new polylimit.Client(server.url);
  try {
    const limiter = client.limiter('500/minute', { prefix: uniquePrefix('exact') });
    const decisions = await Promise.all(Array.from({ length: 1000 }, () => limiter.check('user:1')));
    assert.equal(decisions.filter((d) => d.allowed).length, 500);
    for (const d of decisions) {
      assert.ok(d instanceof polylimit.Decision);
      assert.equal(d.limit, 500);
      assert.equal(d.granted, d.allowed ? 1 : 0);
      assert.equal(d.degraded, false);
    }
    const denied = decisions.find((d) => !d.allowed);
    assert.ok(denied.retryAfterMs > 0);
    const headers = denied.headers();
    assert.equal(headers['RateLimit-Limit'], '500');
    assert.equal(headers['RateLimit-Remaining'], '0');
    assert.ok(Number(headers['Retry-After']) >= 1);
    // Buffer and Uint8Array keys are the same bytes as the string.
    const peek = await limiter.peek(Buffer.from('user:1'));
    assert.equal(peek.remaining, 0);
    assert.equal((await limiter.peek(new TextEncoder().encode('user:1'))).remaining, 0);
  } finally {
    client.close();
  }
});

test('peek, refund, reset and acquire', async () => {
  const client = new polylimit.Client(server.url);
  try {
    const limiter = client.limiter('3/minute', { prefix: uniquePrefix('ops'), algorithm: 'fixed_window' });
    assert.equal((await limiter.check('k', 3)).remaining, 0);
    assert.equal((await limiter.check('k')).allowed, false);
    assert.equal((await limiter.refund('k', 2)).remaining, 2);
    const acquired = await limiter.acquire('k', 2, 1000);
    assert.equal(acquired.allowed, true);
    assert.equal(acquired.granted, 2);
    const waited = await limiter.acquire('k', 1, 50); // would wait most of a minute
    assert.equal(waited.allowed, false);
    assert.equal(await limiter.reset('k'), undefined);
    assert.equal((await limiter.peek('k')).remaining, 3);
  } finally {
    client.close();
  }
});

test('checkMany, checkAtMost and checkLimit', async () => {
  const client = new polylimit.Client(server.url);
  try {
    const limiter = client.limiter('2/minute', { prefix: uniquePrefix('batch') });
    const results = await limiter.checkMany(['a', 'b', 'a', 'a', Buffer.from('b'), ''], 1);
    assert.deepEqual(
      results.slice(0, 5).map((d) => d.allowed),
      [true, true, true, false, true],
    );
    assert.ok(results[5] instanceof polylimit.InvalidArgumentError);
    assert.match(results[5].message, /key is empty/);
    assert.deepEqual(await limiter.checkMany([]), []);
    assert.throws(() => limiter.checkMany('a'), TypeError);
    assert.throws(() => limiter.checkMany(['a', 1]), TypeError);

    const most = await limiter.checkAtMost('c', 5);
    assert.equal(most.allowed, true);
    assert.equal(most.granted, 2);
    assert.equal((await limiter.checkAtMost('c', 5)).granted, 0);
    const perCall = await limiter.checkLimit('c', 1, 3, 60000); // a third unit under a limit of 3
    assert.equal(perCall.allowed, true);
    assert.equal(perCall.limit, 3);
    assert.throws(() => limiter.checkLimit('c', 1, 0, 60000), polylimit.InvalidArgumentError);
  } finally {
    client.close();
  }
});

test('every status has its error class; Symbol.asyncDispose closes', async () => {
  const vocabulary = require('../../bindings/node/lib/vocabulary');
  for (const s of vocabulary.statuses.filter((s) => s.value !== 0)) {
    const cls = polylimit[`${s.name}Error`];
    assert.equal(typeof cls, 'function', `${s.name}Error`);
    const e = new cls('m', s.value);
    assert.ok(e instanceof polylimit.PolylimitError);
    assert.equal(e.code, s.code);
    assert.equal(e.retryable, s.retryable);
  }
  const client = new polylimit.Client('memory://');
  const limiter = client.limiter('1/s');
  await client[Symbol.asyncDispose]();
  assert.throws(() => limiter.check('k'), polylimit.ClosedError);
});

// Leases: one round trip takes 10 units, the checks after it take none;
// closing the client gives back what was not used.
test('lease: one round trip takes a block, close gives back the rest', async () => {
  const prefix = uniquePrefix('lease');
  const watch = new polylimit.Client(server.url);
  const client = new polylimit.Client(server.url);
  try {
    const plain = watch.limiter('100/minute', { prefix });
    const leased = client.limiter('100/minute', { prefix, lease: { units: 10, ms: 60000 } });
    const first = await leased.check('k');
    assert.equal(first.allowed, true);
    const trips = client.stats().round_trips;
    // 50 promises at once: 9 from the lease, the rest wait for renewals (one
    // round trip per 10 units, none per check).
    const all = await Promise.all(Array.from({ length: 50 }, () => leased.check('k')));
    assert.equal(all.filter((d) => d.allowed).length, 50);
    const stats = client.stats();
    assert.equal(stats.leased_units, 60);
    assert.equal(stats.round_trips - trips, 5);
    assert.equal((await plain.peek('k')).remaining, 40);
    await client.close(); // the 9 units left go back
    assert.equal((await plain.peek('k')).remaining, 49);
    assert.throws(
      () => watch.limiter('10/s', { lease: { units: 11 } }),
      (e) => e instanceof polylimit.InvalidArgumentError && /lease_units = 11 exceeds limit = 10/.test(e.message),
    );
    assert.throws(
      () => watch.limiter('10/s', { lease: { units: 1, ms: 0 } }),
      (e) =>
        e instanceof polylimit.InvalidArgumentError && /lease\.ms: lease_ms = 0 is out of range 1\./.test(e.message),
    );
  } finally {
    client.close();
    watch.close();
  }
});

test('metrics: counters and the Prometheus text', async () => {
  const a = new polylimit.Client(server.url, { name: 'sessions' });
  const b = new polylimit.Client('memory://', { name: 'api' });
  try {
    const limiter = a.limiter('2/minute', { prefix: uniquePrefix('metrics') });
    await Promise.all([limiter.check('k'), limiter.check('k'), limiter.check('k')]);
    const stats = a.stats();
    assert.equal(stats.checks, 3);
    assert.equal(stats.admitted, 2);
    assert.equal(stats.denied, 1);
    assert.match(a.metrics(), /^polylimit_checks_total\{client="sessions"\} 3$/m);
    const page = polylimit.prometheus(a, b);
    assert.match(page, /^polylimit_denied_total\{client="sessions"\} 1$/m);
    assert.match(page, /^polylimit_checks_total\{client="api"\} 0$/m);
    assert.equal(page.match(/^# TYPE polylimit_checks_total /gm).length, 1);
    assert.throws(() => polylimit.prometheus(a, new polylimit.Client('memory://')), polylimit.InvalidArgumentError);
  } finally {
    a.close();
    b.close();
  }
  assert.throws(() => a.stats(), polylimit.ClosedError);
});

test("prom-client: the clients' counters in a Registry", async () => {
  const promClient = require('../../bindings/node/node_modules/prom-client');
  const { registerPolylimit } = require('../../bindings/node/lib/prom-client');
  const a = new polylimit.Client(server.url, { name: 'web' });
  const b = new polylimit.Client('memory://', { name: 'jobs' });
  try {
    const limiter = a.limiter('1/minute', { prefix: uniquePrefix('prom') });
    await limiter.check('k');
    await limiter.check('k');
    const registry = new promClient.Registry();
    new promClient.Counter({ name: 'app_requests_total', help: "The app's own.", registers: [registry] }).inc();
    registerPolylimit(registry, a, b);
    const text = await registry.metrics();
    assert.match(text, /^app_requests_total 1$/m);
    assert.match(text, /^# TYPE polylimit_checks_total counter$/m);
    assert.match(text, /^polylimit_checks_total\{client="web"\} 2$/m);
    assert.match(text, /^polylimit_denied_total\{client="web"\} 1$/m);
    assert.match(text, /^polylimit_checks_total\{client="jobs"\} 0$/m);
    assert.match(text, /^# TYPE polylimit_check_latency_seconds histogram$/m);
    assert.match(text, /^polylimit_check_latency_seconds_bucket\{client="web",le="\+Inf"\} 2$/m);
    assert.match(text, /^polylimit_check_latency_seconds_count\{client="web"\} 2$/m);
    // Every scrape reads anew.
    await limiter.check('k');
    assert.match(await registry.metrics(), /^polylimit_checks_total\{client="web"\} 3$/m);
    // OpenMetrics: prom-client names counters itself, once.
    registry.setContentType(promClient.Registry.OPENMETRICS_CONTENT_TYPE);
    const open = await registry.metrics();
    assert.match(open, /^polylimit_checks_total\{client="web"\} 3$/m);
    assert.doesNotMatch(open, /_total_total/);
    assert.throws(
      () => registerPolylimit(new promClient.Registry(), a, new polylimit.Client('memory://')),
      polylimit.InvalidArgumentError,
    ); // two clients need distinct names
    a.close();
    registry.setContentType(promClient.Registry.PROMETHEUS_CONTENT_TYPE);
    await assert.rejects(registry.metrics(), polylimit.ClosedError);
  } finally {
    a.close();
    b.close();
  }
});

test('bad input throws before any I/O', async () => {
  const client = new polylimit.Client(server.url);
  try {
    const limiter = client.limiter('10/s', { prefix: uniquePrefix('bad') });
    assert.throws(() => limiter.check(42), TypeError);
    assert.throws(() => limiter.check({}), TypeError);
    assert.throws(() => limiter.check('k', NaN), TypeError);
    assert.throws(() => limiter.check('k', 1.5), TypeError);
    assert.throws(() => limiter.check('k', '1'), TypeError);
    assert.throws(
      () => limiter.check('k', -1),
      (e) => {
        assert.ok(e instanceof polylimit.PolylimitError);
        assert.ok(e instanceof polylimit.InvalidArgumentError);
        assert.equal(e.code, 'EINVALID');
        assert.equal(e.retryable, false);
        assert.match(e.message, /cost = -1/);
        return true;
      },
    );
    assert.throws(() => limiter.check('k', 11), polylimit.InvalidArgumentError);
    assert.throws(() => limiter.check(''), /key is empty/);
    assert.throws(() => limiter.check(Buffer.alloc(1024 * 1024 + 1, 'a')), /at most 1048576/);
    assert.throws(() => client.limiter('10/s', { algorithm: 'leaky' }), TypeError);
    assert.throws(() => client.limiter('ten per second'), polylimit.InvalidArgumentError);
    assert.throws(() => new polylimit.Client(42), TypeError);
  } finally {
    client.close();
  }
});

// The C ABI reads 0 as "the default" for these: an explicit 0 is refused
// (naming the option), never turned silently into the default.
test('an explicit 0 where 0 would read as the default is refused', () => {
  const refused = (make, pattern) =>
    assert.throws(make, (e) => e instanceof polylimit.InvalidArgumentError && pattern.test(e.message));
  refused(
    () => new polylimit.Client('memory://', { poolSize: 0 }),
    /^poolSize: pool_size = 0 is out of range 1\.\.4096$/,
  );
  refused(
    () => new polylimit.Client('memory://', { commandTimeoutMs: 0 }),
    /commandTimeoutMs: command_timeout_ms = 0 is out of range 1\./,
  );
  refused(
    () => new polylimit.Client('memory://', { connectTimeoutMs: 0 }),
    /connectTimeoutMs: connect_timeout_ms = 0 is out of range 1\./,
  );
  refused(
    () => new polylimit.Client('memory://', { acquireTimeoutMs: 0 }),
    /acquireTimeoutMs: acquire_timeout_ms = 0 cannot be given/,
  );
  const client = new polylimit.Client('memory://', { poolSize: 1, acquireTimeoutMs: 5 });
  try {
    refused(
      () => client.limiter('10/s', { breaker: { failures: 3, cooldownMs: 0 } }),
      /breaker_cooldown_ms = 0 is out of range 1\./,
    );
    refused(
      () => client.limiter('10/s', { durable: { replicas: 1, timeoutMs: 0 } }),
      /durable_timeout_ms = 0 is out of range 1\./,
    );
    // Left out, each is the library's default; other values go to the library.
    client.limiter('10/s', { breaker: { failures: 3 }, durable: {} });
    refused(() => new polylimit.Client('memory://', { poolSize: -1 }), /pool_size = -1/);
  } finally {
    client.close();
  }
});

test('no URL: POLYLIMIT_URL, else an error naming memory://', () => {
  const saved = process.env.POLYLIMIT_URL;
  try {
    delete process.env.POLYLIMIT_URL;
    assert.throws(
      () => new polylimit.Client(),
      (e) => e instanceof polylimit.InvalidArgumentError && /memory:\/\//.test(e.message),
    );
    process.env.POLYLIMIT_URL = 'memory://';
    const client = new polylimit.Client();
    client.close();
  } finally {
    if (saved === undefined) delete process.env.POLYLIMIT_URL;
    else process.env.POLYLIMIT_URL = saved;
  }
});

test('secrets never reach messages', async () => {
  assert.throws(
    () => new polylimit.Client('redis://user:hunter2@127.0.0.1:notaport'),
    (e) => {
      assert.ok(e instanceof polylimit.InvalidArgumentError);
      assert.doesNotMatch(e.message, /hunter2/);
      return true;
    },
  );
  // Nothing listens on port 1: the connect fails, retryably, without the password.
  const client = new polylimit.Client('redis://user:hunter2@127.0.0.1:1', { connectTimeoutMs: 200 });
  try {
    await assert.rejects(client.limiter('1/s').check('k'), (e) => {
      assert.ok(e instanceof polylimit.UnavailableError, String(e));
      assert.equal(e.retryable, true);
      assert.doesNotMatch(e.message, /hunter2/);
      return true;
    });
  } finally {
    client.close();
  }
});

// An API key given in a request never reaches a Redis key (SCAN the real
// server), a log line, a metric or an error message: the policy keys it by
// its SHA-256 (apikey:<hex>) and reads the deny list's entries hashed.
test('secrets: an API key in a request stays out of Redis, logs and messages', async () => {
  const express = require(path.join(__dirname, '..', '..', 'bindings', 'node', 'node_modules', 'express'));
  const { rateLimit, apiKey } = require('../../bindings/node/lib/express');
  const secret = 'sk-live-7f3c9a1e5b';
  const leaked = 'sk-leaked-0d2e4f';
  const client = new polylimit.Client(server.url);
  const prefix = uniquePrefix('secrets');
  const limit = rateLimit(client.limiter('3/minute', { prefix }), {
    key: apiKey('X-API-Key'),
    deny: { apiKeys: [leaked] },
  });
  const app = express();
  app.use(limit);
  app.get('/', (_req, res) => res.send('ok\n'));
  const srv = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${srv.address().port}`;
  // Everything written to stdout and stderr while the requests run.
  const written = [];
  const writes = [process.stdout.write, process.stderr.write];
  for (const stream of [process.stdout, process.stderr]) {
    const original = stream.write;
    stream.write = function (chunk, ...rest) {
      written.push(String(chunk));
      return original.call(this, chunk, ...rest);
    };
  }
  const bodies = [];
  try {
    for (const key of [secret, secret, secret, secret, leaked]) {
      const r = await fetch(base, { headers: { 'X-API-Key': key } });
      bodies.push(`${r.status} ${[...r.headers].join(' ')} ${await r.text()}`);
    }
  } finally {
    [process.stdout.write, process.stderr.write] = writes;
    srv.closeAllConnections();
    srv.close();
  }
  assert.deepEqual(
    bodies.map((b) => Number(b.slice(0, 3))),
    [200, 200, 200, 429, 403],
  );
  const keys = execFileSync('redis-cli', ['-u', server.url, '--scan', '--pattern', `${prefix}*`], {
    encoding: 'utf8',
  });
  const hash = require('node:crypto').createHash('sha256').update(secret).digest('hex');
  assert.match(keys, new RegExp(`apikey:${hash}`), keys);
  const everything = [keys, written.join(''), bodies.join('\n'), limit.policy.metrics(), client.metrics()].join('\n');
  for (const s of [secret, leaked]) assert.ok(!everything.includes(s), `${s} leaked:\n${everything}`);
  // Error messages: a document that names the keys and is refused, a check
  // of the hashed key that fails.
  assert.throws(
    () =>
      polylimit.policyFromDocument({ deny: { api_keys: [secret] }, rules: [{ name: 'a', limiter: 0, colour: 1 }] }, [
        client.limiter('1/s'),
      ]),
    (e) => e instanceof polylimit.InvalidArgumentError && !e.message.includes(secret),
  );
  const down = new polylimit.Client('redis://127.0.0.1:1', { connectTimeoutMs: 200 });
  try {
    const policy = polylimit.policyFromDocument({ rules: [{ name: 'a', limiter: 0, key: 'api_key' }] }, [
      down.limiter('1/s'),
    ]);
    const step = policy.prepare({ path: '/', headers: { 'X-API-Key': secret } });
    assert.equal(step.key, `apikey:${hash}`);
    await assert.rejects(policy.limiterOf(step).check(step.key, step.cost), (e) => !e.message.includes(secret));
  } finally {
    await down.close();
    await client.close();
  }
});

test('close() settles every promise in flight, and later calls throw', async () => {
  const client = new polylimit.Client(server.url, { commandTimeoutMs: 5000 });
  const limiter = client.limiter('100/minute', { prefix: uniquePrefix('close') });
  await limiter.check('warm'); // connected
  server.pause();
  let settled;
  try {
    const calls = [];
    for (let i = 0; i < 1000; i++) calls.push(i % 2 ? limiter.check('k') : limiter.acquire('k', 1, 60000));
    const started = Date.now();
    client.close();
    settled = await Promise.allSettled(calls);
    assert.ok(Date.now() - started < 3000, `close took ${Date.now() - started} ms to settle`);
  } finally {
    server.resume();
  }
  assert.equal(settled.length, 1000);
  for (const s of settled) {
    assert.equal(s.status, 'rejected');
    assert.ok(s.reason instanceof polylimit.ClosedError, String(s.reason));
    assert.equal(s.reason.code, 'ECLOSED');
  }
  assert.throws(() => limiter.check('k'), polylimit.ClosedError);
  assert.throws(() => client.limiter('1/s'), polylimit.ClosedError);
  client.close(); // idempotent
});

// Closing gives the leases' unused units back: a round trip that must not
// hold the event loop, even while the server does not answer.
test('close() with leases and a stopped server: the event loop keeps turning', async () => {
  const prefix = uniquePrefix('close-lease');
  const watch = new polylimit.Client(server.url);
  const client = new polylimit.Client(server.url, { commandTimeoutMs: 3000 });
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  try {
    const leased = client.limiter('100/minute', { prefix, lease: { units: 10, ms: 60000 } });
    assert.equal((await leased.check('a')).allowed, true);
    assert.equal((await leased.check('b')).allowed, true);
    server.pause();
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      const started = Date.now();
      const closed = client.close();
      const returned = Date.now() - started;
      assert.ok(returned < 100, `close() held the event loop for ${returned} ms`);
      assert.throws(() => leased.check('a'), polylimit.ClosedError);
      await sleep(300);
      assert.ok(ticks >= 20, `the event loop turned ${ticks} times in 300 ms while the close waited`);
      const state = await Promise.race([closed.then(() => 'closed'), sleep(0).then(() => 'waiting')]);
      assert.equal(state, 'waiting'); // for the server: the units go back when it answers
      server.resume();
      assert.equal(await closed, undefined);
    } finally {
      clearInterval(timer);
      server.resume();
    }
    // Each key's lease took 10 units and handed out 1: 9 went back.
    const plain = watch.limiter('100/minute', { prefix });
    assert.equal((await plain.peek('a')).remaining, 99);
    assert.equal((await plain.peek('b')).remaining, 99);
    assert.equal(await client.close(), undefined); // again: resolves at once
  } finally {
    await watch.close();
  }
});

// The GC's trigger, in this thread or (by its source) in a worker.
function collector() {
  require('node:v8').setFlagsFromString('--expose_gc');
  return require('node:vm').runInNewContext('gc');
}

// A limiter with leases that the GC collects gives its units back too, on
// the thread pool: the collection does not wait for the server.
test('a collected limiter with leases gives them back without holding the event loop', async () => {
  const gc = collector();
  const prefix = uniquePrefix('gc-lease');
  const client = new polylimit.Client(server.url, { commandTimeoutMs: 3000 });
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  try {
    await (async () => {
      const leased = client.limiter('100/minute', { prefix, lease: { units: 10, ms: 60000 } });
      assert.equal((await leased.check('a')).allowed, true);
    })();
    server.pause();
    let collecting;
    try {
      const started = Date.now();
      for (let i = 0; i < 3; i++) {
        gc();
        await new Promise((resolve) => setImmediate(resolve));
      }
      collecting = Date.now() - started;
      await sleep(100);
      assert.equal(client.stats().refunded_units, 0); // the server is stopped: not yet
    } finally {
      server.resume();
    }
    assert.ok(collecting < 1000, `collecting the limiter held the event loop for ${collecting} ms`);
    for (let i = 0; i < 100 && client.stats().refunded_units === 0; i++) await sleep(20);
    assert.equal(client.stats().refunded_units, 9); // the limiter was collected and its 9 units went back
    const plain = client.limiter('100/minute', { prefix });
    assert.equal((await plain.peek('a')).remaining, 99);
  } finally {
    await client.close();
  }
});

test('an idle client does not keep the process alive', () => {
  const script = `
    const polylimit = require(${JSON.stringify(path.join(__dirname, '..', '..', 'bindings', 'node'))});
    const client = new polylimit.Client(${JSON.stringify(server.url)});
    client.limiter('5/s', { prefix: 'node-idle' }).check('k').then((d) => console.log(d.allowed));
  `;
  const out = execFileSync(process.execPath, ['-e', script], { timeout: 10000, encoding: 'utf8' });
  assert.equal(out.trim(), 'true');
});

test('process.exit() with calls in flight neither hangs nor crashes', () => {
  const script = `
    const polylimit = require(${JSON.stringify(path.join(__dirname, '..', '..', 'bindings', 'node'))});
    const client = new polylimit.Client(${JSON.stringify(server.url)});
    const limiter = client.limiter('1000/minute', { prefix: 'node-exit-' + process.pid });
    for (let i = 0; i < 500; i++) limiter.check('k').catch(() => {});
    limiter.acquire('k', 1, 60000).catch(() => {});
    process.exit(7);
  `;
  assert.throws(
    () => execFileSync(process.execPath, ['-e', script], { timeout: 10000, stdio: 'pipe' }),
    (e) => {
      assert.equal(e.signal, null, 'killed by a signal');
      assert.equal(e.status, 7);
      return true;
    },
  );
});

test('a worker terminated with calls in flight', async () => {
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    const polylimit = require(workerData.module);
    const client = new polylimit.Client(workerData.url);
    const limiter = client.limiter('1000/minute', { prefix: workerData.prefix });
    for (let i = 0; i < 500; i++) limiter.check('k').catch(() => {});
    parentPort.postMessage('submitted');
  `;
  const module = path.join(__dirname, '..', '..', 'bindings', 'node');
  const w = new Worker(source, {
    eval: true,
    workerData: { module, url: server.url, prefix: uniquePrefix('terminate') },
  });
  await new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  assert.equal(await w.terminate(), 1);
  // The main thread's own client still works after the worker's cleanup.
  const client = new polylimit.Client(server.url);
  assert.equal((await client.limiter('1/s', { prefix: uniquePrefix('after') }).check('k')).allowed, true);
  client.close();
});

// Workers terminated while they keep calling, some closing their client
// meanwhile, in a process whose main thread never loads the addon: every
// worker loads and unloads it. Neither the calls that fail in a terminating
// worker (Node-API refuses them) nor the worker's last loop turns (our poll
// handle's close callback) may bring the process down.
test('workers terminated mid-call, the addon loaded by workers only', () => {
  const worker = `
    const { parentPort, workerData } = require('node:worker_threads');
    const polylimit = require(workerData.module);
    const client = new polylimit.Client(workerData.url);
    const limiter = client.limiter('1000000/minute', { prefix: workerData.prefix });
    const burst = () => {
      for (let i = 0; i < 200; i++) {
        try {
          limiter.check('k' + (i % 50)).catch(() => {});
        } catch {}  // closed: it throws, and goes on throwing until terminated
      }
    };
    burst();
    setInterval(burst, 1);
    if (workerData.close) setTimeout(() => client.close(), workerData.wait);
    parentPort.postMessage('calling');
  `;
  const main = `
    const { Worker } = require('node:worker_threads');
    (async () => {
      for (let round = 0; round < 100; round++) {
        const wait = round % 7;
        const data = { module: ${JSON.stringify(path.join(__dirname, '..', '..', 'bindings', 'node'))},
                       url: ${JSON.stringify(server.url)}, prefix: 'node-workers-' + process.pid, wait, close: round % 2 === 0 };
        const w = new Worker(${JSON.stringify(worker)}, { eval: true, workerData: data });
        await new Promise((resolve, reject) => { w.once('message', resolve); w.once('error', reject); });
        await new Promise((resolve) => setTimeout(resolve, wait));
        await w.terminate();
      }
      console.log('terminated 100 workers');
    })();
  `;
  const out = execFileSync(process.execPath, ['-e', main], { timeout: 60000, stdio: 'pipe' }).toString();
  assert.match(out, /terminated 100 workers/);
});

// A worker ending while its client's close and a collected limiter's free
// are still on the thread pool: Node waits for them, nothing throws.
test('a worker terminated while its client closes and a leased limiter is freed', async () => {
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    const collect = (${collector})();
    const polylimit = require(workerData.module);
    (async () => {
      const client = new polylimit.Client(workerData.url);
      const options = { prefix: workerData.prefix, lease: { units: 10, ms: 60000 } };
      await (async () => { await client.limiter('100/minute', options).check('a'); })();
      collect();  // the first limiter: freed on the thread pool
      const kept = client.limiter('100/minute', options);
      await kept.check('b');
      for (let i = 0; i < 100; i++) kept.check('b').catch(() => {});
      client.close();  // not awaited
      parentPort.postMessage('closing');
    })();
  `;
  const module = path.join(__dirname, '..', '..', 'bindings', 'node');
  for (let round = 0; round < 3; round++) {
    const w = new Worker(source, {
      eval: true,
      workerData: { module, url: server.url, prefix: uniquePrefix('worker-close') },
    });
    const errors = [];
    w.on('error', (e) => errors.push(e));
    await new Promise((resolve, reject) => {
      w.once('message', resolve);
      w.once('exit', () => reject(new Error('the worker exited before closing')));
    });
    await w.terminate();
    assert.deepEqual(errors, []);
  }
});

test('worker_threads: a client per worker, exact totals', async () => {
  const prefix = uniquePrefix('workers');
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    const polylimit = require(workerData.module);
    const client = new polylimit.Client(workerData.url);
    const limiter = client.limiter('300/minute', { prefix: workerData.prefix });
    Promise.all(Array.from({ length: 250 }, () => limiter.check('shared'))).then((ds) => {
      client.close();
      parentPort.postMessage(ds.filter((d) => d.allowed).length);
    });
  `;
  const module = path.join(__dirname, '..', '..', 'bindings', 'node');
  const counts = await Promise.all(
    [0, 1, 2].map(
      () =>
        new Promise((resolve, reject) => {
          const w = new Worker(source, { eval: true, workerData: { module, url: server.url, prefix } });
          w.once('message', resolve);
          w.once('error', reject);
        }),
    ),
  );
  assert.equal(
    counts.reduce((a, b) => a + b, 0),
    300,
  );
});
