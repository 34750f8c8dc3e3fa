'use strict';
// Where a Node check's time goes: polylimit's `check()` (with coalescing, the
// default, and without; for contrast, rate-limiter-flexible over ioredis) with 1 and 64 checks in flight, traced
// from outside with `perf` (Linux; run as root or with perf_event_paranoid
// <= 1). A program that prints tables, not a test.
//
//   node bench/node/breakdown.js [--seconds 1] [--runs 3] [--keys 2000]
//
// For each library x path (allow, deny) x in flight (1, 64), `runs` times,
// interleaved, three measurements of the same loop as bench.js:
//
// 1. untraced, under `perf stat --per-thread` (counters only, no slow-down):
//    checks/s, client CPU per check, the Redis main thread's CPU per check,
//    system calls and context switches per check on the event loop's
//    thread and on the process's other threads;
// 2. under `perf trace` (every system call with its time; slows each call
//    by a few µs): per check, the event loop's turns (epoll_pwait calls),
//    the share of those that blocked, the share of the loop's time spent
//    blocked in them (idle, waiting for a reply), the replies read per
//    socket read and the checks per socket write;
// 3. one in flight only, traced, with a marker system call (access(2) on a
//    path that does not exist, mode R before `check()`, mode W when its
//    promise has settled) so each check's time splits into phases:
//    check() -> the request's write, write -> the loop wakes with the reply,
//    wake -> the reply read, read -> the promise settled (the continuation
//    runs).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const polylimit = require(path.join(root, 'bindings', 'node'));
const { startRedis } = require(path.join(root, 'tests', 'node', 'redis'));
const Redis = require('ioredis');
const { RateLimiterRedis } = require('rate-limiter-flexible');

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const seconds = arg('seconds', 1);
const runs = arg('runs', 3);
const KEYS = arg('keys', 2000);
const BIG = 1000000;
const MARK = '/polylimit-breakdown-mark'; // never exists: access(2) fails at once
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'polylimit-breakdown-'));

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const mark = (mode) => {
  try {
    fs.accessSync(MARK, mode);
  } catch {}
};

// perf attached to this process until stop(); its output file.
function perf(args, name) {
  const out = path.join(tmp, name);
  const child = spawn('perf', [...args, '-p', String(process.pid), '-o', out], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    // perf reports nothing when it is ready: give it time to attach.
    ready: sleep(400),
    stop: async () => {
      child.kill('SIGINT');
      const code = await exited;
      if (!fs.existsSync(out)) throw new Error(`perf ${args[0]} failed (${code}): ${err.trim()}`);
      return fs.readFileSync(out, 'utf8');
    },
  };
}

async function serverCpuUs(ioredis) {
  const info = await ioredis.info('cpu');
  const f = (n) => Number(info.match(new RegExp(`^${n}:([0-9.]+)`, 'm'))[1]);
  return (f('used_cpu_user_main_thread') + f('used_cpu_sys_main_thread')) * 1e6;
}

// The loop of bench.js: `concurrency` loops awaiting one check after another.
async function loop(fn, concurrency, marks) {
  let n = 0;
  let stop = false;
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  setTimeout(() => (stop = true), seconds * 1000);
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!stop) {
        if (marks) mark(fs.constants.R_OK);
        await fn(n++);
        if (marks) mark(fs.constants.W_OK);
      }
    }),
  );
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return { n, elapsed, cpuUs: (cpu.user + cpu.system) / n };
}

// perf stat -x, --per-thread: "comm-tid,count,unit,event,...".
function parseStat(text) {
  const threads = {};
  for (const line of text.split('\n')) {
    const f = line.split(',');
    if (f.length < 4 || !/^.+-\d+$/.test(f[0])) continue;
    const tid = Number(f[0].slice(f[0].lastIndexOf('-') + 1));
    const count = Number(f[1]);
    if (!Number.isFinite(count)) continue;
    threads[tid] = threads[tid] || {};
    threads[tid][f[3]] = count;
  }
  return threads;
}

// perf trace lines: "  12.345 ( 0.012 ms): node/1234 sendto(fd: 23<socket:[..]>, ...) = 168".
const TRACE = /^\s*([\d.]+) \(\s*([\d.]+) ms\): [^/]*\/(\d+) (\w+)\((.*)\)\s+= (-?\d+)/;
function parseTrace(text) {
  const calls = [];
  for (const line of text.split('\n')) {
    const m = TRACE.exec(line);
    if (!m) continue;
    calls.push({ t: Number(m[1]), dur: Number(m[2]), tid: Number(m[3]), name: m[4], args: m[5], ret: Number(m[6]) });
  }
  return calls;
}
const isSocket = (c) => /^fd: \d+<socket:/.test(c.args);
const isWrite = (c) => ['sendto', 'sendmsg', 'write', 'writev'].includes(c.name) && isSocket(c) && c.ret > 0;
const isRead = (c) => ['recvfrom', 'recvmsg', 'read', 'readv'].includes(c.name) && isSocket(c) && c.ret > 0;
const isWait = (c) => c.name === 'epoll_pwait' || c.name === 'epoll_wait';

// A traced run: the loop's turns and waits, reads and writes per check.
function traceFigures(calls, n, elapsedMs) {
  const loopTid = process.pid;
  const onLoop = calls.filter((c) => c.tid === loopTid);
  const waits = onLoop.filter(isWait);
  // perf trace leaves a zero timeout out: a turn that only looks.
  const blocking = waits.filter((c) => /timeout: [1-9-]/.test(c.args));
  const blockedMs = waits.reduce((s, c) => s + c.dur, 0);
  const reads = calls.filter(isRead);
  const writes = calls.filter(isWrite);
  return {
    loopSyscalls: onLoop.length / n,
    otherSyscalls: (calls.length - onLoop.length) / n,
    turns: waits.length / n,
    blockingShare: waits.length ? blocking.length / waits.length : 0,
    idleShare: blockedMs / elapsedMs,
    checksPerRead: n / Math.max(1, reads.length),
    checksPerWrite: n / Math.max(1, writes.length),
    readsOffLoop: reads.filter((c) => c.tid !== loopTid).length / Math.max(1, reads.length),
    writesOffLoop: writes.filter((c) => c.tid !== loopTid).length / Math.max(1, writes.length),
  };
}

// Phases of one in-flight check, from the marks (loop thread only).
function phases(calls) {
  const loopTid = process.pid;
  const seq = calls.filter((c) => c.tid === loopTid);
  const out = { toWrite: [], toWake: [], toRead: [], toSettle: [], total: [] };
  let start = null;
  let write = null;
  let wake = null;
  let read = null;
  for (const c of seq) {
    if (c.name === 'access' && /mode: R/.test(c.args)) {
      start = c.t + c.dur;
      write = wake = read = null;
    } else if (start === null) {
    } else if (write === null && isWrite(c)) {
      write = c.t;
    } else if (write !== null && wake === null && isWait(c) && c.ret > 0) {
      wake = c.t + c.dur;
    } else if (write !== null && read === null && isRead(c)) {
      read = c.t + c.dur;
    } else if (c.name === 'access' && /mode: W/.test(c.args)) {
      if (write !== null && wake !== null && read !== null) {
        out.toWrite.push(write - start);
        out.toWake.push(wake - write);
        out.toRead.push(read - wake);
        out.toSettle.push(c.t - read);
        out.total.push(c.t - start);
      }
      start = null;
    }
  }
  return out;
}

async function makeCases(url, ioredis) {
  const keyOf = (i) => `user:${i % KEYS}`;
  const useUp = (check) => Promise.all(Array.from({ length: KEYS }, (_, i) => check(i)));
  const clients = [];
  const cases = [];
  for (const [lib, options] of [
    ['polylimit', {}],
    ['polylimit, no coalescing', { coalesce: false }],
  ]) {
    const client = new polylimit.Client(url, options);
    const prefix = options.coalesce === false ? 'bd-off' : 'bd';
    const allow = client.limiter(`${BIG}/minute`, { algorithm: 'fixed_window', prefix: `${prefix}-allow` });
    const deny = client.limiter('1/hour', { algorithm: 'fixed_window', prefix: `${prefix}-deny` });
    await useUp((i) => deny.check(keyOf(i)));
    clients.push(client);
    cases.push({ lib, allow: (i) => allow.check(keyOf(i)), deny: (i) => deny.check(keyOf(i)) });
  }
  const rlfAllow = new RateLimiterRedis({ storeClient: ioredis, points: BIG, duration: 60, keyPrefix: 'bd-rlf-allow' });
  const rlfDeny = new RateLimiterRedis({ storeClient: ioredis, points: 1, duration: 3600, keyPrefix: 'bd-rlf-deny' });
  const swallow = (p) => p.catch(() => undefined);
  await useUp((i) => swallow(rlfDeny.consume(keyOf(i))));
  cases.push({
    lib: 'rate-limiter-flexible',
    allow: (i) => rlfAllow.consume(keyOf(i)),
    deny: (i) => swallow(rlfDeny.consume(keyOf(i))),
  });
  return { clients, cases };
}

async function cell(info, fn, concurrency) {
  // 1. counters only
  const stat = perf(['stat', '-x', ',', '--per-thread', '-e', 'raw_syscalls:sys_enter,context-switches'], 'stat.txt');
  await stat.ready;
  const s0 = await serverCpuUs(info);
  const plain = await loop(fn, concurrency, false);
  const serverUs = ((await serverCpuUs(info)) - s0) / plain.n;
  const threads = parseStat(await stat.stop());
  const loopT = threads[process.pid] || {};
  let otherSys = 0;
  let otherCs = 0;
  for (const [tid, t] of Object.entries(threads)) {
    if (Number(tid) === process.pid) continue;
    otherSys += t['raw_syscalls:sys_enter'] || 0;
    otherCs += t['context-switches'] || 0;
  }
  const result = {
    rate: plain.n / plain.elapsed,
    cpuUs: plain.cpuUs,
    serverUs,
    loopSys: (loopT['raw_syscalls:sys_enter'] || 0) / plain.n,
    loopCs: (loopT['context-switches'] || 0) / plain.n,
    otherSys: otherSys / plain.n,
    otherCs: otherCs / plain.n,
  };
  // 2. every system call, traced
  const trace = perf(['trace'], 'trace.txt');
  await trace.ready;
  const traced = await loop(fn, concurrency, false);
  result.trace = traceFigures(parseTrace(await trace.stop()), traced.n, traced.elapsed * 1000);
  result.tracedRate = traced.n / traced.elapsed;
  // 3. one in flight: the phases
  if (concurrency === 1) {
    const marked = perf(['trace'], 'marked.txt');
    await marked.ready;
    await loop(fn, 1, true);
    result.phases = phases(parseTrace(await marked.stop()));
  }
  return result;
}

async function main() {
  const server = await startRedis();
  const ioredis = new Redis(server.url);
  const info = new Redis(server.url);
  const { clients, cases } = await makeCases(server.url, ioredis);
  const cells = [];
  for (const c of cases)
    for (const p of ['allow', 'deny'])
      for (const k of [1, 64]) cells.push({ lib: c.lib, path: p, k, fn: c[p], res: [] });
  for (let r = 0; r < runs; r++) {
    const order = r % 2 ? [...cells].reverse() : cells;
    for (const c of order) {
      c.res.push(await cell(info, c.fn, c.k));
      process.stderr.write('.');
    }
  }
  process.stderr.write('\n');
  const versions = `polylimit ${require(path.join(root, 'bindings', 'node', 'package.json')).version}, rate-limiter-flexible ${require('rate-limiter-flexible/package.json').version} over ioredis ${require('ioredis/package.json').version}; Node ${process.versions.node}, ${os.availableParallelism()} cores; fixed window, ${KEYS} keys; medians of ${runs} interleaved runs of ${seconds} s`;
  console.log(versions);
  const med = (c, f, d = 1) => median(c.res.map(f)).toFixed(d);
  const table = (head, rowsOf) => {
    console.log(`| ${head.join(' | ')} |`);
    console.log(`|${head.map(() => '---').join('|')}|`);
    for (const c of cells) {
      const row = rowsOf(c);
      if (row) console.log(`| ${row.join(' | ')} |`);
    }
    console.log('');
  };
  console.log('\nuntraced (perf stat): per check\n');
  table(
    [
      'library',
      'path',
      'in flight',
      'checks/s',
      'CPU us',
      'Redis CPU us',
      'syscalls, loop thread',
      'syscalls, other threads',
      'ctx switches, loop',
      'ctx switches, other',
    ],
    (c) => [
      c.lib,
      c.path,
      c.k,
      `${Math.round(median(c.res.map((x) => x.rate)))}`,
      med(c, (x) => x.cpuUs),
      med(c, (x) => x.serverUs),
      med(c, (x) => x.loopSys, 2),
      med(c, (x) => x.otherSys, 2),
      med(c, (x) => x.loopCs, 2),
      med(c, (x) => x.otherCs, 2),
    ],
  );
  console.log('traced (perf trace, every system call): per check\n');
  table(
    [
      'library',
      'path',
      'in flight',
      'checks/s traced',
      'loop turns',
      'turns that blocked',
      'loop idle (blocked in epoll)',
      'checks per socket read',
      'checks per socket write',
      'reads / writes off the loop thread',
    ],
    (c) => [
      c.lib,
      c.path,
      c.k,
      `${Math.round(median(c.res.map((x) => x.tracedRate)))}`,
      med(c, (x) => x.trace.turns, 2),
      `${med(c, (x) => x.trace.blockingShare * 100, 0)} %`,
      `${med(c, (x) => x.trace.idleShare * 100, 0)} %`,
      med(c, (x) => x.trace.checksPerRead, 2),
      med(c, (x) => x.trace.checksPerWrite, 2),
      `${med(c, (x) => x.trace.readsOffLoop * 100, 0)} % / ${med(c, (x) => x.trace.writesOffLoop * 100, 0)} %`,
    ],
  );
  console.log('one check in flight, traced with markers: phase medians (us; tracing adds a few us per system call)\n');
  const pm = (c, f) => median(c.res.map((x) => median(f(x.phases)) * 1000)).toFixed(1);
  table(
    [
      'library',
      'path',
      'check() -> write',
      'write -> loop wakes',
      'wake -> reply read',
      'read -> settled',
      'total',
      'checks split',
    ],
    (c) =>
      c.k === 1 && [
        c.lib,
        c.path,
        pm(c, (p) => p.toWrite),
        pm(c, (p) => p.toWake),
        pm(c, (p) => p.toRead),
        pm(c, (p) => p.toSettle),
        pm(c, (p) => p.total),
        `${Math.round(median(c.res.map((x) => x.phases.total.length)))}`,
      ],
  );
  for (const c of clients) await c.close();
  ioredis.disconnect();
  info.disconnect();
  await server.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
