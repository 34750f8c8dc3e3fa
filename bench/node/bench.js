'use strict';
// polylimit's Node binding against rate-limiter-flexible (RateLimiterRedis
// over ioredis) and express-rate-limit's Redis store (rate-limit-redis over
// ioredis), against one redis-server started here (tests/fixture/redisfix).
// A program that prints a table, not a test.
//
//   node bench/node/bench.js [--seconds 1] [--runs 3] [--keys 2000] [--pairs 0] [--cli build/release/tools/polylimit]
//
// Each cell: `concurrency` loops, each awaiting one check after another, for
// `seconds`, on three paths (makeCases). Cells run interleaved (every cell
// once per round, `runs` rounds); the table shows the median checks/s with
// min..max, the client CPU per check (process.cpuUsage), the Redis main
// thread's CPU per check (INFO cpu, read before and after), the share of the
// machine's CPU those kept busy, the share of one core the server's thread
// spent, polylimit's script calls per check, and each library's ratio to
// rate-limiter-flexible in the same cell; then coalescing on / off. The
// peers' versions are printed.
// Last, the event loop's delay (perf_hooks.monitorEventLoopDelay) while 64
// polylimit checks are in flight.
// With --cli, each round also runs the C CLI's `bench --threads 64` (fixed
// window and GCRA; 64 threads on the allow path, then 64 on the deny path)
// against the same server, and its rows show its ratio to
// rate-limiter-flexible at 64 in flight.
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { monitorEventLoopDelay } = require('node:perf_hooks');

const root = path.join(__dirname, '..', '..');
const polylimit = require(path.join(root, 'bindings', 'node'));
const { startRedis } = require(path.join(root, 'tests', 'node', 'redis'));
const Redis = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');
const { RedisStore } = require('rate-limit-redis');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const cliIndex = process.argv.indexOf('--cli');
const cli = cliIndex > 0 ? process.argv[cliIndex + 1] : null;

// The CLI's own bench: checks/s of its allow and deny paths.
function runCli(url, algorithm) {
  const out = execFileSync(
    cli,
    [
      '--url',
      url,
      '--algorithm',
      algorithm,
      '--prefix',
      `bench-cli-${algorithm}`,
      '--threads',
      '64',
      '--seconds',
      String(2 * seconds),
      'bench',
    ],
    { encoding: 'utf8' },
  );
  const rate = (p) => {
    const m = out.match(new RegExp(`^${p} .* = ([0-9.]+) checks/s`, 'm'));
    if (!m) throw new Error(`no ${p} rate in the CLI's output:\n${out}`);
    return Number(m[1]);
  };
  return { allow: rate('allow'), deny: rate('deny') };
}
const seconds = arg('seconds', 1);
const runs = arg('runs', 3);
const pairs = arg('pairs', 0);
const KEYS = arg('keys', 2000);
const BIG = 1000000; // per minute: never reached in a run
const CORES = require('node:os').availableParallelism();

// The installed version of a package (its package.json; some export none).
function versionOf(name) {
  for (const dir of require.resolve.paths(name) || []) {
    try {
      return JSON.parse(require('node:fs').readFileSync(path.join(dir, name, 'package.json'), 'utf8')).version;
    } catch {}
  }
  return '?';
}

// Every library's checks on three paths: `allow` over KEYS keys under a limit
// nobody reaches; `deny` over KEYS keys whose 1/hour limit is used up (each
// check a script call that denies); `hot`: one used-up key (polylimit
// coalesces the checks waiting on it). Each case returns functions of a
// running number that resolve whether admitted or denied.
async function makeCases(url, ioredis) {
  const clients = [new polylimit.Client(url), new polylimit.Client(url, { coalesce: false })];
  const cases = [];
  const keyOf = (i) => `user:${i % KEYS}`;
  const useUp = (check) => Promise.all(Array.from({ length: KEYS }, (_, i) => check(i)));
  const variants = [
    ['fixed_window', clients[0], ''],
    ['gcra', clients[0], ''],
    ['sliding_log', clients[0], ''],
    ['fixed_window', clients[1], ', no coalescing'],
    ['gcra', clients[1], ', no coalescing'],
  ];
  for (const [algorithm, client, note] of variants) {
    const prefix = `bench-${algorithm}${note ? '-off' : ''}`;
    const allow = client.limiter(`${BIG}/minute`, { algorithm, prefix: `${prefix}-allow` });
    const deny = client.limiter('1/hour', { algorithm, prefix: `${prefix}-deny` });
    await useUp((i) => deny.check(keyOf(i)));
    await deny.check('hot');
    cases.push({
      lib: 'polylimit',
      client,
      variant: algorithm + note,
      allow: (i) => allow.check(keyOf(i)),
      deny: (i) => deny.check(keyOf(i)),
      hot: () => deny.check('hot'),
    });
  }
  const rlfAllow = new RateLimiterRedis({
    storeClient: ioredis,
    points: BIG,
    duration: 60,
    keyPrefix: 'bench-rlf-allow',
  });
  const rlfDeny = new RateLimiterRedis({
    storeClient: ioredis,
    points: 1,
    duration: 3600,
    keyPrefix: 'bench-rlf-deny',
  });
  const swallow = (p) => p.catch(() => undefined); // a denial rejects with RateLimiterRes
  await useUp((i) => swallow(rlfDeny.consume(keyOf(i))));
  await swallow(rlfDeny.consume('hot'));
  cases.push({
    lib: 'rate-limiter-flexible',
    variant: 'fixed window',
    allow: (i) => rlfAllow.consume(keyOf(i)),
    deny: (i) => swallow(rlfDeny.consume(keyOf(i))),
    hot: () => swallow(rlfDeny.consume('hot')),
  });
  const store = new RedisStore({ sendCommand: (...args) => ioredis.call(...args), prefix: 'bench-erl:' });
  await store.init({ windowMs: 3600000 });
  await useUp((i) => store.increment(`deny:${keyOf(i)}`));
  cases.push({
    lib: 'express-rate-limit+redis',
    variant: 'fixed window',
    // The store counts; the middleware compares with its limit: a deny costs the same round trip.
    allow: (i) => store.increment(keyOf(i)),
    deny: (i) => store.increment(`deny:${keyOf(i)}`),
    hot: () => store.increment('hot'),
  });
  return { clients, cases };
}

// The Redis main thread's CPU time so far (INFO cpu: user + system), in µs.
async function serverCpuUs(ioredis) {
  const info = await ioredis.info('cpu');
  const field = (name) => {
    const m = info.match(new RegExp(`^${name}:([0-9.]+)`, 'm'));
    if (!m) throw new Error(`INFO cpu has no ${name}`);
    return Number(m[1]);
  };
  return (field('used_cpu_user_main_thread') + field('used_cpu_sys_main_thread')) * 1e6;
}

// `client`: a polylimit client whose script calls per check are counted.
async function measure(ioredis, fn, concurrency, client = null, duration = seconds) {
  let n = 0;
  let stop = false;
  const calls0 = client ? client.stats().script_calls : 0;
  const server0 = await serverCpuUs(ioredis);
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  setTimeout(() => (stop = true), duration * 1000);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!stop) await fn(n++);
    }),
  );
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const serverUs = ((await serverCpuUs(ioredis)) - server0) / n;
  const calls = client ? (client.stats().script_calls - calls0) / n : null;
  return { rate: n / elapsed, cpuUs: (cpu.user + cpu.system) / n, serverUs, calls };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const server = await startRedis();
  const ioredis = new Redis(server.url);
  const { clients, cases } = await makeCases(server.url, ioredis);
  // Cells of one path and concurrency run next to each other (every library
  // and variant, then the next pair), in reverse order every other round: a
  // ratio compares cells measured seconds apart, none always first after
  // another cell's garbage.
  const cells = [];
  for (const path of ['allow', 'deny', 'hot'])
    for (const concurrency of [1, 64]) for (const c of cases) cells.push({ ...c, path, concurrency, results: [] });
  const cliCells = cli ? ['fixed_window', 'gcra'].map((variant) => ({ variant, allow: [], deny: [] })) : [];
  for (let r = 0; r < runs; r++) {
    for (const cell of r % 2 ? [...cells].reverse() : cells)
      cell.results.push(await measure(ioredis, cell[cell.path], cell.concurrency, cell.client));
    for (const c of cliCells) {
      const got = runCli(server.url, c.variant);
      c.allow.push(got.allow);
      c.deny.push(got.deny);
    }
  }

  // CPU used: the share of the machine's cores that the checks/s kept busy,
  // rate x (client + Redis CPU per check) / cores; checks/s at 100 % would
  // be cores / (client + Redis CPU per check). A latency-bound path shows as
  // a low share: CPU left idle. Redis busy: the share of one core the
  // server's thread spent (rate x Redis CPU per check); near 100 % the
  // server decides the rate, whatever the client leaves idle.
  const rows = [
    [
      'library',
      'variant',
      'path',
      'in flight',
      'checks/s (min..max)',
      'CPU us/check',
      'Redis CPU us/check',
      'CPU used',
      'Redis busy',
      'script calls/check',
      'vs rlf',
    ],
  ];
  for (const cell of cells) {
    const rates = cell.results.map((x) => x.rate);
    const peer = cells.find(
      (c) => c.lib === 'rate-limiter-flexible' && c.path === cell.path && c.concurrency === cell.concurrency,
    );
    const ratio = median(rates) / median(peer.results.map((x) => x.rate));
    const used = median(cell.results.map((x) => (x.rate * (x.cpuUs + x.serverUs)) / 1e6 / CORES));
    const busy = median(cell.results.map((x) => (x.rate * x.serverUs) / 1e6));
    rows.push([
      cell.lib,
      cell.variant,
      cell.path,
      String(cell.concurrency),
      `${Math.round(median(rates))} (${Math.round(Math.min(...rates))}..${Math.round(Math.max(...rates))})`,
      median(cell.results.map((x) => x.cpuUs)).toFixed(1),
      median(cell.results.map((x) => x.serverUs)).toFixed(1),
      `${Math.round(used * 100)} %`,
      `${Math.round(busy * 100)} %`,
      cell.client ? median(cell.results.map((x) => x.calls)).toFixed(3) : '-',
      `${ratio.toFixed(2)}x`,
    ]);
  }
  for (const c of cliCells)
    for (const p of ['allow', 'deny']) {
      const peer = cells.find((x) => x.lib === 'rate-limiter-flexible' && x.path === p && x.concurrency === 64);
      const ratio = median(c[p]) / median(peer.results.map((x) => x.rate));
      rows.push([
        'polylimit CLI (C)',
        c.variant,
        p,
        '64 threads',
        `${Math.round(median(c[p]))} (${Math.round(Math.min(...c[p]))}..${Math.round(Math.max(...c[p]))})`,
        '-',
        '-',
        '-',
        '-',
        '-',
        `${ratio.toFixed(2)}x`,
      ]);
    }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  console.log(
    `polylimit ${polylimit.version}, rate-limiter-flexible ${versionOf('rate-limiter-flexible')} and ` +
      `rate-limit-redis ${versionOf('rate-limit-redis')} over ioredis ${versionOf('ioredis')} ` +
      `(express-rate-limit ${versionOf('express-rate-limit')}); Node ${process.versions.node}, ${CORES} cores; ` +
      `medians of ${runs} interleaved runs of ${seconds} s; allow: ${KEYS} keys under ${BIG}/minute; ` +
      `deny: ${KEYS} keys over 1/hour; hot: one key over 1/hour`,
  );
  for (const [i, r] of rows.entries()) {
    console.log('| ' + r.map((c, j) => c.padEnd(widths[j])).join(' | ') + ' |');
    if (i === 0) console.log('|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|');
  }

  // Coalescing on against off in the same rounds: the ratio of the medians
  // with the range of the per-round ratios.
  console.log('coalescing on / off (checks/s; ratio of medians, per-run min..max):');
  for (const variant of ['fixed_window', 'gcra'])
    for (const p of ['allow', 'deny', 'hot'])
      for (const k of [1, 64]) {
        const find = (v) => cells.find((c) => c.variant === v && c.path === p && c.concurrency === k);
        const on = find(variant).results.map((x) => x.rate);
        const off = find(`${variant}, no coalescing`).results.map((x) => x.rate);
        const per = on.map((x, i) => x / off[i]);
        console.log(
          `  ${variant.padEnd(12)} ${p.padEnd(5)} ${String(k).padStart(2)} in flight  ` +
            `${(median(on) / median(off)).toFixed(2)}x (${Math.min(...per).toFixed(2)}..${Math.max(...per).toFixed(2)})`,
        );
      }

  // --pairs N: coalescing on and off measured back to back, N pairs per
  // cell of half the time each, the order swapped every pair; the median of
  // the pairs' ratios (a one-in-flight cell moves by 10-20 % between
  // rounds on a shared machine, more than the difference looked for).
  if (pairs > 0) {
    console.log(
      `coalescing on / off, ${pairs} back-to-back pairs of ${seconds / 2} s per cell (median of the pairs' ratios, min..max):`,
    );
    for (const variant of ['fixed_window', 'gcra'])
      for (const p of ['allow', 'deny'])
        for (const k of [1, 64]) {
          const on = cases.find((c) => c.variant === variant);
          const off = cases.find((c) => c.variant === `${variant}, no coalescing`);
          const ratios = [];
          for (let i = 0; i < pairs; i++) {
            const half = seconds / 2;
            const first = await measure(ioredis, (i % 2 ? off : on)[p], k, null, half);
            const second = await measure(ioredis, (i % 2 ? on : off)[p], k, null, half);
            ratios.push(i % 2 ? second.rate / first.rate : first.rate / second.rate);
          }
          console.log(
            `  ${variant.padEnd(12)} ${p.padEnd(5)} ${String(k).padStart(2)} in flight  ${median(ratios).toFixed(2)}x ` +
              `(${Math.min(...ratios).toFixed(2)}..${Math.max(...ratios).toFixed(2)})`,
          );
        }
  }

  // The event loop while 64 polylimit checks are in flight: completions come
  // from the queue's fd, so the loop stays free between them.
  // The histogram records each 1 ms timer's interval: lateness is the
  // interval less the 1 ms. The idle loop and rate-limiter-flexible (ioredis
  // reads its socket on the loop) are the same machine's baselines.
  const rlf = cases.find((c) => c.lib === 'rate-limiter-flexible');
  const fixed = cases.find((c) => c.lib === 'polylimit' && c.variant === 'fixed_window');
  const loops = [
    ['idle (no checks)', () => new Promise((resolve) => setTimeout(resolve, seconds * 1000))],
    ['rate-limiter-flexible, 64 in flight', () => measure(ioredis, rlf.allow, 64)],
    ['polylimit fixed_window, 64 in flight', () => measure(ioredis, fixed.allow, 64)],
  ];
  const delays = loops.map(() => ({ p50: [], p99: [], max: [] }));
  for (let r = 0; r < runs; r++)
    for (const [i, [, run]] of loops.entries()) {
      const h = monitorEventLoopDelay({ resolution: 1 });
      h.enable();
      await run();
      h.disable();
      delays[i].p50.push(h.percentile(50) / 1e6 - 1);
      delays[i].p99.push(h.percentile(99) / 1e6 - 1);
      delays[i].max.push(h.max / 1e6 - 1);
    }
  console.log(
    `event loop lateness (ms past a 1 ms timer; medians of ${runs} interleaved runs of ${seconds} s, min..max):`,
  );
  for (const [i, [name]] of loops.entries()) {
    const f = (xs) => `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}..${Math.max(...xs).toFixed(2)})`;
    console.log(`  ${name.padEnd(38)} p50 ${f(delays[i].p50)}  p99 ${f(delays[i].p99)}  max ${f(delays[i].max)}`);
  }
  for (const c of clients) c.close();
  ioredis.disconnect();
  await server.stop();
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
