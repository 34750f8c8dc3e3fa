'use strict';
// bench/http's Node peer: Express + express-rate-limit with rate-limit-redis
// over node-redis, set up as their READMEs show, keyed by the X-API-Key
// header. The same server, handler and config file as polylimit's service
// (tests/http/services/node):
//
//   POLYLIMIT_URL=redis://127.0.0.1:6399 node server.js CONFIG_FILE PORT
//
// CONFIG_FILE: {"limiters": [{"rate": "1000000/hour", "prefix": "..."}], ...}
// (only the first limiter is read). Prints "ready" once listening.
const fs = require('node:fs');
const express = require('express');
const { rateLimit } = require('express-rate-limit');
const { RedisStore } = require('rate-limit-redis');
const { createClient } = require('redis');

const WINDOWS = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 };

function parseRate(text) {
  const m = /^(\d+)\/(second|minute|hour|day)$/.exec(text);
  if (!m) throw new Error(`unsupported rate ${text}`);
  return { limit: Number(m[1]), windowMs: WINDOWS[m[2]] };
}

async function main() {
  const [configFile, port] = process.argv.slice(2);
  if (!configFile || !port) {
    process.stderr.write('usage: server.js CONFIG_FILE PORT\n');
    process.exit(2);
  }
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8'));
  const spec = config.limiters[0];
  const { limit, windowMs } = parseRate(spec.rate);

  const client = createClient({ url: process.env.POLYLIMIT_URL });
  await client.connect();

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.use(
    rateLimit({
      windowMs,
      limit,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      keyGenerator: (req) => req.get('x-api-key') ?? '',
      store: new RedisStore({
        sendCommand: (...args) => client.sendCommand(args),
        prefix: `${spec.prefix ?? 'rl'}:`,
      }),
    }),
  );
  app.use((_req, res) => {
    res.type('text/plain').send('ok\n');
  });

  const server = app.listen(Number(port), '127.0.0.1', () => {
    process.stdout.write('ready\n');
  });
  process.on('SIGTERM', () => {
    server.close(() => {
      client.quit().then(() => process.exit(0));
    });
    server.closeAllConnections();
  });
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
