'use strict';
// A Fastify server limited by polylimit (polylimit/fastify). Several copies
// against one Redis share every limit.
//
//   POLYLIMIT_URL=redis://127.0.0.1:6379 PORT=3000 node server.js
//
// /         LIMIT per client IP (default 10/minute); /login its own
// LOGIN_LIMIT (default 3/minute); /healthz exempt.
const fastify = require('fastify');
const polylimit = require('polylimit');

const prefix = process.env.PREFIX || 'example-web'; // the Redis key prefix: copies that share it share the limits
const client = new polylimit.Client(undefined, { name: 'node-fastify' }); // POLYLIMIT_URL
const app = fastify();
app.register(require('polylimit/fastify'), {
  limiter: client.limiter(process.env.LIMIT || '10/minute', { prefix: prefix }),
  routes: { '/login': client.limiter(process.env.LOGIN_LIMIT || '3/minute', { prefix: `${prefix}-login` }) },
  exempt: ['/healthz'],
  trustedProxies: (process.env.TRUSTED_PROXIES || '').split(',').filter(Boolean),
});
app.get('/', async (request) => `hello; ${request.polylimit.remaining} left\n`);
app.post('/login', async () => 'logged in\n');
app.get('/healthz', async () => 'ok\n');
app.addHook('onClose', async () => client.close());

app.listen({ port: Number(process.env.PORT || 3000), host: '127.0.0.1' }).then(() => {
  console.log(`listening on ${app.server.address().port}`);
});
process.on('SIGTERM', () => app.close());
