'use strict';
// polylimit/fastify: a Fastify plugin with the Express middleware's
// behaviour (lib/express.js), as onRequest and onResponse hooks of the
// whole app.
//
//   app.register(require('polylimit/fastify'), { limiter, trustedProxies: ['127.0.0.1'] });
//   app.register(require('polylimit/fastify'), { policy: policyFromDocument(doc, limiters) });
// The route template is Fastify's (request.routeOptions.url, '/users/:id').
const http = require('./http');

const SETTLE = Symbol('polylimit.settle');

function polylimitPlugin(fastify, options, done) {
  const { policy: given, limiter, ...rest } = options;
  let h;
  try {
    h = http.setup(given !== undefined ? given : limiter === undefined ? null : limiter, rest);
  } catch (e) {
    done(e);
    return;
  }
  const { policy } = h;
  fastify.decorateRequest('polylimit', null);
  fastify.addHook('onRequest', async (request, reply) => {
    const path = http.pathOf(request.raw.url || request.url);
    const route = request.routeOptions?.url;
    const d = await http.decide(
      h,
      request,
      request.method,
      path,
      route,
      request.raw.socket?.remoteAddress,
      request.headers,
    );
    const a = d.answer;
    if (a !== null) for (const [name, value] of a.headers) reply.header(name, value);
    if (a !== null && a.status !== 0) {
      reply.code(a.status);
      return reply.send(a.body);
    }
    if (d.decision !== null) {
      request.polylimit = d.decision;
      if (http.needsSettling(d.policy, d)) request[SETTLE] = d;
    }
  });
  fastify.addHook('onResponse', async (request, reply) => {
    const d = request[SETTLE];
    if (d !== undefined) http.settle(d.policy, d.step, d.decision, reply.statusCode);
  });
  fastify.decorate('polylimitPolicy', policy);
  done();
}

// Not encapsulated: the hooks apply to every route of the app, as
// fastify-plugin would arrange (without depending on it).
polylimitPlugin[Symbol.for('skip-override')] = true;
polylimitPlugin[Symbol.for('fastify.display-name')] = 'polylimit';

module.exports = polylimitPlugin;
module.exports.default = polylimitPlugin;
for (const name of [
  'documentOf',
  'ip',
  'apiKey',
  'header',
  'user',
  'tenant',
  'route',
  'compose',
  'firstOf',
  'credential',
])
  module.exports[name] = http[name];
