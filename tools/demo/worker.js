#!/usr/bin/env node
'use strict';
// The demo's Node worker: hammers one shared key and prints how many of its
// attempts were admitted, as "<name> admitted=<n> attempts=<m>" (the same
// command line and output as worker.c).
//
//     node worker.js URL KEY LIMIT WINDOW_MS ATTEMPTS NAME
//
// Finds the package in bindings/node and its addon through
// POLYLIMIT_NODE_ADDON (tools/demo.sh builds it).
const path = require('node:path');
const polylimit = require(path.join(__dirname, '..', '..', 'bindings', 'node'));

// With POLYLIMIT_DEMO_START_AT_MS (Unix ms) set, wait for that moment so that
// workers of every language start together.
function waitForStart() {
  const at = Number(process.env.POLYLIMIT_DEMO_START_AT_MS || 0);
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
}

async function main(argv) {
  if (argv.length !== 6) {
    console.error('usage: worker.js URL KEY LIMIT WINDOW_MS ATTEMPTS NAME');
    return 2;
  }
  const [url, key, limit, windowMs, attempts, name] = argv;
  let admitted = 0;
  const client = new polylimit.Client(url);
  try {
    // Same prefix as worker.c, so workers in every language share the key.
    const limiter = client.limiter(`${Number(limit)}/${Number(windowMs)}ms`, { prefix: 'demo' });
    await waitForStart();
    // One check at a time, like the other workers: a share, not a flood.
    for (let i = 0; i < Number(attempts); i++) if ((await limiter.check(key)).allowed) admitted++;
  } catch (e) {
    console.error(`${name}: ${e.message}`);
    return 1;
  } finally {
    client.close();
  }
  console.log(`${name} admitted=${admitted} attempts=${attempts}`);
  return 0;
}

main(process.argv.slice(2)).then((status) => {
  process.exitCode = status;
});
