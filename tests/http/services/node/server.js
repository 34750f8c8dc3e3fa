'use strict';
// The Node service of the cross-language HTTP suite (tests/http): Express
// with polylimit/express over a policy document.
//
//   POLYLIMIT_URL=redis://127.0.0.1:6399 node server.js CONFIG_FILE PORT
//
// CONFIG_FILE: {"limiters": [{"rate": "5/minute", "prefix": "xl:ip",
// "algorithm"?: "gcra"}, ...], "policy": {...}}, the policy's rules naming
// the limiters by index; or {"policy_file": PATH, "watch_ms"?: 100}: a live
// policy opened from the file (TOML or JSON, its own limits), watched and
// reloaded when it changes. The user id is the X-User header's value and the
// tenant id X-Tenant's, supplied by the application's hooks (not read by the
// policy). Every path and method answers 200 "ok\n" when the request goes
// on. Prints "ready" once listening on 127.0.0.1:PORT; exits on SIGTERM.
const fs = require('node:fs');
const express = require('express');
const polylimit = require('polylimit');
const { rateLimit } = require('polylimit/express');

const [configFile, port] = process.argv.slice(2);
if (!configFile || !port) {
  process.stderr.write('usage: server.js CONFIG_FILE PORT\n');
  process.exit(2);
}
const config = JSON.parse(fs.readFileSync(configFile, 'utf8'));
const client = new polylimit.Client(); // POLYLIMIT_URL
let policy;
if (config.policy_file !== undefined) {
  policy = client.openPolicy(config.policy_file, { watchMs: config.watch_ms ?? 100 });
} else {
  const limiters = config.limiters.map((l) =>
    client.limiter(l.rate, { prefix: l.prefix, ...(l.algorithm ? { algorithm: l.algorithm } : {}) }),
  );
  policy = polylimit.policyFromDocument(config.policy, limiters);
}

const header = (req, name) => {
  const v = req.headers[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
};
const app = express();
app.disable('x-powered-by');
app.disable('etag');
app.use(rateLimit(policy, { user: (req) => header(req, 'x-user'), tenant: (req) => header(req, 'x-tenant') }));
app.use((_req, res) => {
  res.type('text/plain').send('ok\n');
});

const server = app.listen(Number(port), '127.0.0.1', () => {
  process.stdout.write('ready\n');
});
process.on('SIGTERM', () => {
  server.close(() => {
    if (policy instanceof polylimit.LivePolicy) policy.close();
    client.close().then(() => process.exit(0));
  });
  server.closeAllConnections();
});
