'use strict';
// An Express server limited by polylimit (polylimit/express). Several copies
// against one Redis share every limit.
//
//   POLYLIMIT_URL=redis://127.0.0.1:6379 PORT=3000 node server.js
//
// /         LIMIT per client IP (default 10/minute)
// /login    LOGIN_LIMIT per client IP, its own count (default 3/minute)
// /healthz  exempt
// /metrics  exempt: the client's counters (Prometheus text)
// TRUSTED_PROXIES (comma-separated addresses or subnets): peers whose
// X-Forwarded-For is believed.
const express = require('express');
const polylimit = require('polylimit');
const { rateLimit } = require('polylimit/express');

const prefix = process.env.PREFIX || 'example-web'; // the Redis key prefix: copies that share it share the limits
const client = new polylimit.Client(undefined, { name: 'node-express' }); // POLYLIMIT_URL
const perIp = client.limiter(process.env.LIMIT || '10/minute', { prefix: prefix });
const login = client.limiter(process.env.LOGIN_LIMIT || '3/minute', { prefix: `${prefix}-login` });

const app = express();
app.use(
  rateLimit(perIp, {
    routes: { '/login': login },
    exempt: ['/healthz', '/metrics'],
    trustedProxies: (process.env.TRUSTED_PROXIES || '').split(',').filter(Boolean),
  }),
);
app.get('/', (req, res) => res.send(`hello; ${req.polylimit.remaining} left\n`));
app.post('/login', (_req, res) => res.send('logged in\n'));
app.get('/healthz', (_req, res) => res.send('ok\n'));
app.get('/metrics', (_req, res) => res.type('text/plain').send(client.metrics()));

const server = app.listen(Number(process.env.PORT || 3000), '127.0.0.1', () => {
  console.log(`listening on ${server.address().port}`);
});
process.on('SIGTERM', () => server.close(() => client.close()));
