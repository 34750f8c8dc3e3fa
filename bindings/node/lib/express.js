'use strict';
// polylimit/express: Express middleware, and a Store for express-rate-limit.
//
//   const { rateLimit, PolylimitStore } = require('polylimit/express');
//   app.use(rateLimit(limiter, { trustedProxies: ['10.0.0.0/8'], exempt: ['/healthz'] }));
//   // or, in an express-rate-limit setup, one line:
//   app.use(expressRateLimit({ limit: 100, store: new PolylimitStore(limiter) }));

const { Limiter } = require('./index');
const { makeDecider, refusal, apiKey, credential } = require('./http');

// Middleware: checks each request against `limiter` (or the limiter of its
// route), sets the library's headers, answers 429 on a denial, 503 when
// Redis could not decide (failure policy 'error'), and 400 (401 for a
// credential) when the key function finds no key, unless onMissingKey: 'skip'. req.polylimit holds the
// Decision for the handlers.
function rateLimit(limiter, options = {}) {
  const decide = makeDecider(limiter, options);
  return function polylimitMiddleware(req, res, next) {
    const path = (req.originalUrl || req.url || '/').split('?')[0];
    decide(req, path, req.socket?.remoteAddress, req.headers['x-forwarded-for']).then(
      (r) => {
        for (const [name, value] of Object.entries(r.headers)) res.setHeader(name, value);
        if (r.action === 'next') {
          if (r.decision) req.polylimit = r.decision;
          return next();
        }
        const { status, body } = refusal(r);
        res.statusCode = status;
        res.setHeader('Content-Type', 'text/plain; charset=utf-8');
        res.end(body);
      },
      next, // a bug (the key function threw): Express's error handling
    );
  };
}

// A Store for express-rate-limit: the counting moves to polylimit, so every
// process (and every language) shares the limit exactly. The limiter decides;
// express-rate-limit sees totalHits above any `limit` when polylimit denies,
// so set its `limit` to the limiter's (or higher) and let the limiter rule.
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

module.exports = { rateLimit, PolylimitStore, apiKey, credential };
