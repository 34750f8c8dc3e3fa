'use strict';
// polylimit/express: Express middleware, and a Store for express-rate-limit.
//
//   const { rateLimit, PolylimitStore } = require('polylimit/express');
//   app.use(rateLimit(limiter, { trustedProxies: ['10.0.0.0/8'], exempt: ['/healthz'] }));
//   // or from a policy document (docs/integrations/contract.md):
//   app.use(rateLimit(policyFromDocument(doc, [perIp, login]), { user: (req) => req.session?.userId }));
//   // or, in an express-rate-limit setup, one line:
//   app.use(expressRateLimit({ limit: 100, store: new PolylimitStore(limiter) }));
const { Limiter } = require('./index');
const http = require('./http');

// Middleware: every request is described to the policy, which decides
// (lib/http.js); the check runs on the limiter's asynchronous path. The
// answer's headers are set; a refusal (429, 503, 400, 401, 403) is sent
// here, else the next handler runs and req.polylimit holds the Decision.
// The route template is Express's (req.baseUrl + req.route.path), known when
// the middleware is mounted on a route (app.get('/users/:id', limit, ...));
// mounted with app.use it runs before routing, and the path stands in.
// The middleware's `policy` (an HttpPolicy or a LivePolicy) gives the
// per-rule metrics.
function rateLimit(limiterOrPolicy, options = {}) {
  const h = http.setup(limiterOrPolicy, options);
  const { policy } = h;
  function polylimitMiddleware(req, res, next) {
    const path = http.pathOf(req.originalUrl || req.url || '/');
    const r = req.route;
    const route = r && typeof r.path === 'string' ? (req.baseUrl || '') + r.path : undefined;
    http.decide(h, req, req.method, path, route, req.socket?.remoteAddress, req.headers).then(
      (d) => {
        const a = d.answer;
        if (a !== null) for (const [name, value] of a.headers) res.setHeader(name, value);
        if (a !== null && a.status !== 0) {
          res.statusCode = a.status;
          res.end(a.body);
          return;
        }
        if (d.decision !== null) {
          req.polylimit = d.decision;
          if (http.needsSettling(d.policy, d))
            res.once('finish', () => http.settle(d.policy, d.step, d.decision, res.statusCode));
        }
        next();
      },
      next, // the application's hook threw: Express's error handling
    );
  }
  polylimitMiddleware.policy = policy;
  return polylimitMiddleware;
}

// A Store for express-rate-limit: the counting moves to polylimit, so every
// process (and every language) shares the limit exactly. The limiter decides;
// express-rate-limit sees totalHits above any `limit` when polylimit denies,
// so set its `limit` to the limiter's (or higher) and let the limiter rule.
// The keys are express-rate-limit's own (its keyGenerator), counted under the
// limiter's prefix as given: they are not the contract's keys (ip:<address>,
// ...) unless the keyGenerator returns them (see bindings/node/README.md).
class PolylimitStore {
  constructor(limiter) {
    if (!(limiter instanceof Limiter)) throw new TypeError('PolylimitStore needs a polylimit Limiter');
    this.limiter = limiter;
    this.localKeys = false; // shared through Redis
  }

  init() {}

  async increment(key) {
    const d = await this.limiter.check(String(key));
    return {
      totalHits: d.allowed ? d.limit - d.remaining : d.limit + 1,
      resetTime: new Date(Date.now() + d.resetAfterMs),
    };
  }

  async get(key) {
    const d = await this.limiter.peek(String(key));
    return { totalHits: d.limit - d.remaining, resetTime: new Date(Date.now() + d.resetAfterMs) };
  }

  async decrement(key) {
    await this.limiter.refund(String(key), 1);
  }

  async resetKey(key) {
    await this.limiter.reset(String(key));
  }
}

module.exports = {
  rateLimit,
  PolylimitStore,
  documentOf: http.documentOf,
  ip: http.ip,
  apiKey: http.apiKey,
  header: http.header,
  user: http.user,
  tenant: http.tenant,
  route: http.route,
  compose: http.compose,
  firstOf: http.firstOf,
  credential: http.credential,
};
