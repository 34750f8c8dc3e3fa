'use strict';
// polylimit/fastify: a Fastify plugin with the Express middleware's
// behaviour (lib/express.js), as an onRequest hook of the whole app.
//
//   app.register(require('polylimit/fastify'), { limiter, trustedProxies: ['127.0.0.1'] });

const { makeDecider, refusal, apiKey, credential } = require('./http');

function polylimitPlugin(fastify, options, done) {
  const decide = makeDecider(options.limiter === undefined ? null : options.limiter, options);
  fastify.decorateRequest('polylimit', null);
  fastify.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0];
    const r = await decide(request, path, request.raw.socket.remoteAddress, request.headers['x-forwarded-for']);
    reply.headers(r.headers);
    if (r.action === 'next') {
      if (r.decision) request.polylimit = r.decision;
      return;
    }
    const { status, body } = refusal(r);
    reply.code(status).type('text/plain; charset=utf-8');
    return reply.send(body);
  });
  done();
}

// Not encapsulated: the hook applies to every route of the app, as
// fastify-plugin would arrange (without depending on it).
polylimitPlugin[Symbol.for('skip-override')] = true;
polylimitPlugin[Symbol.for('fastify.display-name')] = 'polylimit';

module.exports = polylimitPlugin;
module.exports.default = polylimitPlugin;
module.exports.apiKey = apiKey;
module.exports.credential = credential;
