'use strict';
// A throwaway Redis deployment for the Node suite, started by
// tests/fixture/redisfix (the launcher every language's tests share). It
// stops when stop() closes its stdin, or when this process dies.
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');

const redisfix = path.join(__dirname, '..', 'fixture', 'redisfix');

async function startRedis(args = ['standalone']) {
  const proc = spawn(redisfix, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: proc.stdout });
  const first = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    proc.once('exit', (code) => reject(new Error(`redisfix exited with ${code} before describing the deployment`)));
  });
  const desc = JSON.parse(first);
  if (desc.error) throw new Error(`redisfix ${args.join(' ')}: ${desc.error}`);
  const node = desc.nodes[0];
  return {
    desc,
    url: desc.url || `redis://127.0.0.1:${node.port}`,
    pause: () => process.kill(node.pid, 'SIGSTOP'),
    resume: () => process.kill(node.pid, 'SIGCONT'),
    stop: () =>
      new Promise((resolve) => {
        proc.once('exit', resolve);
        proc.stdin.end();
      }),
  };
}

// A prefix no other test (or earlier run) uses.
let serial = 0;
function uniquePrefix(name) {
  serial += 1;
  return `node-${name}-${process.pid}-${Date.now()}-${serial}`;
}

module.exports = { startRedis, uniquePrefix };
