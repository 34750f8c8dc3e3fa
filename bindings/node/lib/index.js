'use strict';
// polylimit for Node.js: a distributed rate limiter on Redis, deciding with
// the same core and Lua scripts as every other language's binding.
//
// This layer checks argument types (TypeError) and shapes results; the addon
// (src/addon.cc) converts arguments, calls the C library and settles each
// promise from the library's completion queue. The library checks ranges.

const platform = require('./platform');
const vocabulary = require('./vocabulary');

// The addon: POLYLIMIT_NODE_ADDON (a path; tests and custom builds), else
// the one a source build made at install (build/Release), else the prebuild
// for this platform (prebuilds/<platform>-<arch>[-musl]; lib/platform.js).
function loadAddon() {
  const tried = [];
  const candidates = [];
  if (process.env.POLYLIMIT_NODE_ADDON) candidates.push(process.env.POLYLIMIT_NODE_ADDON);
  candidates.push(platform.sourceBuildPath());
  candidates.push(platform.prebuildPath());
  for (const file of candidates) {
    try {
      return require(file);
    } catch (e) {
      tried.push(`${file}: ${e.message}`);
    }
  }
  throw new Error(
    'polylimit: cannot load the native addon. Tried:\n  ' +
      tried.join('\n  ') +
      `\nNo prebuilt addon for ${platform.prebuildName()} loads here: \`npm rebuild polylimit\` builds one from ` +
      'the bundled sources (needs CMake, a C++17 compiler and OpenSSL headers), or set POLYLIMIT_NODE_ADDON ' +
      'to a polylimit.node built with CMake (-DPOLYLIMIT_BUILD_NODE=ON).',
  );
}

const native = loadAddon();

// ---- errors ----------------------------------------------------------------

// Every library error is a PolylimitError: `code` is the status's C name
// without the POLYLIMIT_ prefix ('ETIMEOUT'), `retryable` says whether the
// same call can succeed later, `outcomeUnknown` that the call failed after
// it was sent (it may have consumed units).
class PolylimitError extends Error {
  constructor(message, status, outcomeUnknown = false) {
    super(message);
    const info = byValue.get(status) || byValue.get(-1);
    this.name = this.constructor.name;
    this.code = info.code;
    this.status = info.value;
    this.retryable = info.retryable;
    this.outcomeUnknown = outcomeUnknown;
  }
}

const byValue = new Map(vocabulary.statuses.map((s) => [s.value, s]));
const invalidStatus = vocabulary.statuses.find((s) => s.code === 'EINVALID').value;
const errorClasses = new Map(); // status value -> subclass
const errors = { PolylimitError };
for (const s of vocabulary.statuses) {
  if (s.value === 0) continue;
  const name = `${s.name}Error`;
  // A named subclass per status, so callers can use instanceof.
  const cls = { [name]: class extends PolylimitError {} }[name];
  errorClasses.set(s.value, cls);
  errors[name] = cls;
}

function libraryError(message, status, outcomeUnknown) {
  const cls = errorClasses.get(status) || PolylimitError;
  return new cls(message, status, outcomeUnknown);
}

// A native error (with .status) as its PolylimitError subclass; anything
// else (a TypeError from the addon, a PolylimitError) as it is.
function wrap(e) {
  if (e === null || typeof e !== 'object' || typeof e.status !== 'number' || e instanceof PolylimitError) return e;
  return libraryError(e.message, e.status, e.outcomeUnknown === true);
}

function rethrow(e) {
  throw wrap(e);
}

// ---- argument checks ---------------------------------------------------------

function checkKey(key) {
  if (typeof key === 'string' || key instanceof Uint8Array) return;
  throw new TypeError(`key must be a string, Buffer or Uint8Array, not ${describe(key)}`);
}

// Whole numbers only; the library checks the range (and names the argument).
function checkInteger(name, value) {
  if (typeof value !== 'number' || !Number.isSafeInteger(value))
    throw new TypeError(`${name} must be a whole number, not ${describe(value)}`);
}

function optionalInteger(name, value) {
  if (value !== undefined) checkInteger(name, value);
  return value === undefined ? 0 : value;
}

// An option the C ABI reads 0 of as "the library's default": left out, it is
// the default; an explicit 0 is refused, never turned silently into the
// default. `coreName` is its name in the bounds table (and the core's errors).
function optionalSetting(name, coreName, value) {
  const n = optionalInteger(name, value);
  if (value === undefined || n !== 0) return n;
  const { min, max } = vocabulary.bounds[coreName];
  const why =
    min > 0
      ? `${coreName} = 0 is out of range ${min}..${max}`
      : `${coreName} = 0 cannot be given: the C ABI reads 0 as the library's default; leave ${name} out for the default`;
  throw new errors.InvalidArgumentError(`${name}: ${why}`, invalidStatus);
}

function enumValue(name, table, value, fallback) {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && Object.hasOwn(table, value)) return table[value];
  throw new TypeError(
    `${name} must be one of ${Object.keys(table)
      .map((k) => `'${k}'`)
      .join(', ')}, not ${describe(value)}`,
  );
}

function describe(value) {
  if (value === null) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${value}`;
  if (typeof value === 'string') return 'a string';
  return typeof value === 'object' ? (value.constructor ? value.constructor.name : 'an object') : typeof value;
}

// ---- decisions -----------------------------------------------------------------

class Decision {
  // Its Limiter, for headers(): a private field (no WeakMap entry per
  // decision, and invisible to enumeration and deepEqual).
  #limiter;

  // Made by the addon (see setFactories below), not by callers.
  constructor(limiter, allowed, limit, remaining, retryAfterMs, resetAfterMs, granted, degraded, cached, shadowed) {
    this.allowed = allowed;
    this.limit = limit;
    this.remaining = remaining;
    this.retryAfterMs = retryAfterMs;
    this.resetAfterMs = resetAfterMs;
    this.granted = granted;
    this.degraded = degraded;
    this.cached = cached;
    this.shadowed = shadowed;
    this.#limiter = limiter;
  }

  // The HTTP rate-limit headers the core computes for this decision
  // (Retry-After on a denial, RateLimit-*), as { name: value }.
  headers() {
    const limiter = this.#limiter;
    let text;
    try {
      text = limiter._native.headers(this.allowed, this.limit, this.remaining, this.retryAfterMs, this.resetAfterMs);
    } catch (e) {
      rethrow(e);
    }
    const out = {};
    for (const line of text.split('\n')) {
      const colon = line.indexOf(': ');
      if (colon > 0) out[line.slice(0, colon)] = line.slice(colon + 2);
    }
    return out;
  }
}

// The addon settles each promise with what these make: the Decision (its
// limiter, then the fields) and the PolylimitError, so a call needs no
// second promise to shape its result.
native.setFactories(
  (limiter, allowed, limit, remaining, retryAfterMs, resetAfterMs, granted, degraded, cached, shadowed) =>
    new Decision(limiter, allowed, limit, remaining, retryAfterMs, resetAfterMs, granted, degraded, cached, shadowed),
  libraryError,
);

// ---- client and limiter ------------------------------------------------------------

class Client {
  // new Client(url?, options?): url as the other bindings take it
  // (redis://, rediss://, redis+cluster://, redis+sentinel://, unix://,
  // memory://); none: the POLYLIMIT_URL environment variable, else an error
  // that names memory:// for a limiter local to this process.
  constructor(url, options) {
    if (url !== undefined && url !== null && typeof url === 'object' && options === undefined) {
      options = url;
      url = undefined;
    }
    if (url !== undefined && url !== null && typeof url !== 'string')
      throw new TypeError(`url must be a string, not ${describe(url)}`);
    options = options || {};
    if (typeof options !== 'object') throw new TypeError(`options must be an object, not ${describe(options)}`);
    const native_options = {
      poolSize: optionalSetting('poolSize', 'pool_size', options.poolSize),
      connectTimeoutMs: optionalSetting('connectTimeoutMs', 'connect_timeout_ms', options.connectTimeoutMs),
      commandTimeoutMs: optionalSetting('commandTimeoutMs', 'command_timeout_ms', options.commandTimeoutMs),
      acquireTimeoutMs: optionalSetting('acquireTimeoutMs', 'acquire_timeout_ms', options.acquireTimeoutMs),
    };
    if (options.name !== undefined) {
      if (typeof options.name !== 'string') throw new TypeError(`name must be a string, not ${describe(options.name)}`);
      native_options.name = options.name;
    }
    // Coalescing of hot keys (docs/limiter.md, "Hot keys: coalescing"): on
    // unless coalesce is false.
    if (options.coalesce !== undefined) {
      if (typeof options.coalesce !== 'boolean')
        throw new TypeError(`coalesce must be a boolean, not ${describe(options.coalesce)}`);
      native_options.coalesce = options.coalesce;
    }
    // TLS URLs (rediss://...): files and names for the library's OpenSSL
    // session, which it refuses on a URL without TLS.
    if (options.tls !== undefined) {
      const tls = options.tls;
      if (tls === null || typeof tls !== 'object') throw new TypeError(`tls must be an object, not ${describe(tls)}`);
      native_options.tls = {};
      for (const field of ['caFile', 'caDir', 'certFile', 'keyFile', 'serverName']) {
        if (tls[field] === undefined) continue;
        if (typeof tls[field] !== 'string')
          throw new TypeError(`tls.${field} must be a string, not ${describe(tls[field])}`);
        native_options.tls[field] = tls[field];
      }
      if (tls.insecure !== undefined && typeof tls.insecure !== 'boolean')
        throw new TypeError(`tls.insecure must be a boolean, not ${describe(tls.insecure)}`);
      native_options.tls.insecure = tls.insecure === true;
    }
    try {
      this._native = new native.NativeClient(url || undefined, native_options);
    } catch (e) {
      rethrow(e);
    }
  }

  // A live HTTP policy (LivePolicy) from a document: TOML or JSON text, or
  // an object (serialized as JSON); options { limiters, resolver }.
  livePolicy(document, options = {}) {
    return new LivePolicy(this, document, options);
  }

  // A live HTTP policy from a file; options { limiters, resolver, watchMs }
  // (watchMs > 0: the file is watched and reloaded when it changes).
  openPolicy(path, options = {}) {
    return LivePolicy.open(this, path, options);
  }

  // A limiter for a rate spec ('100/minute', '10/s;1000/h'): options
  // { algorithm, prefix, clock, denyCache, failurePolicy, block (ms),
  //   shadow, breaker: { failures, cooldownMs },
  //   durable: { replicas, timeoutMs, aof }, lease: { units, ms } }.
  limiter(spec, options = {}) {
    return new Limiter(this, spec, options);
  }

  // The client's counters (checks, admitted, denied, errors, round_trips,
  // ..., latency_count, latency_sum_us), as numbers.
  stats() {
    try {
      return this._native.stats();
    } catch (e) {
      rethrow(e);
    }
  }

  // The counters in the Prometheus text format (metric names start with
  // polylimit_; labelled client="<name>" when the client has a name).
  metrics() {
    try {
      return this._native.prometheus();
    } catch (e) {
      rethrow(e);
    }
  }

  // Closes the client: later calls throw ClosedError at once, calls in
  // flight settle (rejected with ClosedError unless already decided). The
  // promise resolves once the leases' unused units are given back and the
  // connections released, which happens off the event loop (a server that
  // does not answer delays the promise, never the loop).
  close() {
    return this._native.close();
  }

  async [Symbol.asyncDispose || Symbol.for('nodejs.asyncDispose')]() {
    await this.close();
  }
}

class Limiter {
  constructor(client, spec, options) {
    if (!(client instanceof Client)) throw new TypeError('client must be a polylimit Client');
    if (typeof spec !== 'string')
      throw new TypeError(`spec must be a string such as '100/minute', not ${describe(spec)}`);
    if (options === null || typeof options !== 'object')
      throw new TypeError(`options must be an object, not ${describe(options)}`);
    if (options.prefix !== undefined && typeof options.prefix !== 'string')
      throw new TypeError(`prefix must be a string, not ${describe(options.prefix)}`);
    const breaker = options.breaker || {};
    const durable = options.durable || {};
    const lease = options.lease || {};
    const native_options = {
      algorithm: enumValue('algorithm', vocabulary.algorithms, options.algorithm, 0),
      clock: enumValue('clock', vocabulary.clocks, options.clock, 0),
      failurePolicy: enumValue('failurePolicy', vocabulary.failurePolicies, options.failurePolicy, 0),
      prefix: options.prefix,
      denyCacheSize: optionalInteger('denyCache', options.denyCache),
      blockMs: optionalInteger('block', options.block),
      shadow: options.shadow === true,
      breakerFailures: optionalInteger('breaker.failures', breaker.failures),
      breakerCooldownMs: optionalSetting('breaker.cooldownMs', 'breaker_cooldown_ms', breaker.cooldownMs),
      durableReplicas: optionalInteger('durable.replicas', durable.replicas),
      durableTimeoutMs: optionalSetting('durable.timeoutMs', 'durable_timeout_ms', durable.timeoutMs),
      durableAof: durable.aof === true,
      leaseUnits: optionalInteger('lease.units', lease.units),
      leaseMs: optionalSetting('lease.ms', 'lease_ms', lease.ms),
    };
    try {
      this._native = new native.NativeLimiter(client._native, spec, native_options, this);
    } catch (e) {
      rethrow(e);
    }
  }

  // Admits `cost` units for `key`, all or nothing: a Promise of a Decision.
  // Bad arguments throw at once (TypeError, or InvalidArgumentError for a
  // range the library refuses); so does a closed client (ClosedError).
  check(key, cost = 1) {
    checkKey(key);
    checkInteger('cost', cost);
    try {
      return this._native.check(key, cost);
    } catch (e) {
      rethrow(e);
    }
  }

  // What a check of one unit would answer now, consuming nothing.
  peek(key) {
    checkKey(key);
    try {
      return this._native.peek(key);
    } catch (e) {
      rethrow(e);
    }
  }

  // Gives back up to `units` units taken earlier; answers as peek.
  refund(key, units) {
    checkKey(key);
    checkInteger('units', units);
    try {
      return this._native.refund(key, units);
    } catch (e) {
      rethrow(e);
    }
  }

  // Clears the key: back to full capacity. A Promise of undefined.
  reset(key) {
    checkKey(key);
    let promise;
    try {
      promise = this._native.reset(key);
    } catch (e) {
      rethrow(e);
    }
    return promise.then(() => undefined);
  }

  // Waits (on a library timer, not the event loop) until `cost` units are
  // admitted or `timeoutMs` would pass; the last Decision (denied when the
  // wait would outlast the timeout).
  acquire(key, cost = 1, timeoutMs = 0) {
    checkKey(key);
    checkInteger('cost', cost);
    checkInteger('timeoutMs', timeoutMs);
    try {
      return this._native.acquire(key, cost, timeoutMs);
    } catch (e) {
      rethrow(e);
    }
  }

  // As many units as fit now, up to maxCost: decision.granted says how many.
  checkAtMost(key, maxCost) {
    checkKey(key);
    checkInteger('maxCost', maxCost);
    try {
      return this._native.checkAtMost(key, maxCost);
    } catch (e) {
      rethrow(e);
    }
  }

  // A check against `limit` units per `windowMs` for this call only.
  checkLimit(key, cost, limit, windowMs) {
    checkKey(key);
    checkInteger('cost', cost);
    checkInteger('limit', limit);
    checkInteger('windowMs', windowMs);
    try {
      return this._native.checkLimit(key, cost, limit, windowMs);
    } catch (e) {
      rethrow(e);
    }
  }

  // Many keys, `cost` each, in one go (each key all or nothing on its own):
  // a Promise of an array with, per key, a Decision or the PolylimitError
  // that key got (a batch never rejects for one key).
  checkMany(keys, cost = 1) {
    if (!Array.isArray(keys)) throw new TypeError(`keys must be an array, not ${describe(keys)}`);
    keys.forEach(checkKey);
    checkInteger('cost', cost);
    try {
      return this._native.checkMany(keys, cost);
    } catch (e) {
      rethrow(e);
    }
  }
}

// ---- the HTTP request policy ---------------------------------------------------

// What a step asks of the middleware (polylimit_http_action), by its code.
const ACTIONS = ['proceed', 'check', 'respond', 'need_app_key', 'need_plan'];

function optionalText(name, value) {
  if (value === undefined || value === null || typeof value === 'string') return value;
  throw new TypeError(`${name} must be a string, not ${describe(value)}`);
}

// A header's value as the policy takes it: repeated headers (an array)
// joined by ', ', in order; absent: undefined.
function headerValue(value) {
  if (value === undefined || value === null) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

// The HTTP request policy (docs/integrations/contract.md): one JSON document
// and the limiters its rules name by index. Per request: prepare() describes
// the request and gives a step; a step of action 'check' is checked with
// limiterOf(step).check(step.key, step.cost) (asynchronous, as always);
// answer() gives the response; after it, refundDue() says whether the cost
// goes back (count_when). prepare, answer and refundDue are synchronous and
// do no I/O. Made by policyFromDocument(); shared by any number of requests.
class HttpPolicy {
  #native;
  #limiters; // the application's, then (made on first use) the document's own
  #appLimiters;
  #client;
  #rules;
  #headerNames;
  #refunds; // per rule: whether some status is refunded (count_when is not 'all')

  // new HttpPolicy(document, limiters, options?): options { client } makes
  // the limiters of the document's own limits ("limit", plans) on client.
  constructor(document, limiters = [], options = {}) {
    if (options === null || typeof options !== 'object')
      throw new TypeError(`options must be an object, not ${describe(options)}`);
    const taken = options[FROM_LIVE]; // a live policy's current one (LivePolicy.current)
    if (taken === undefined && typeof document !== 'string') {
      if (document === null || typeof document !== 'object')
        throw new TypeError(`document must be JSON or TOML text, or an object, not ${describe(document)}`);
      document = JSON.stringify(document);
    }
    checkLimiters(limiters);
    const client = options.client;
    if (client !== undefined && !(client instanceof Client))
      throw new TypeError(`options.client must be a polylimit Client, not ${describe(client)}`);
    try {
      this.#native = new native.NativePolicy(
        taken === undefined ? document : taken,
        limiters.map((l) => l._native),
        client === undefined ? undefined : client._native,
      );
    } catch (e) {
      rethrow(e);
    }
    this.#client = client === undefined ? null : client;
    this.#appLimiters = limiters.slice();
    this.#limiters = limiters.slice();
    this.#headerNames = Object.freeze(this.#native.headerNames());
    this.#rules = Object.freeze(
      this.#native
        .rules()
        .map((r) => Object.freeze({ name: r.name, limiter: r.limiter < 0 ? null : this.#limiterAt(r.limiter) })),
    );
    // Which rules refund some response: the others need no look at it.
    const admitted = { allowed: true, granted: 1 };
    this.#refunds = this.#rules.map((r, i) => {
      if (r.limiter === null) return false;
      const probe = { code: 1, status: 0, ruleIndex: i, cost: 1, key: '' };
      for (let status = 100; status < 600; status++) if (this.#native.refundDue(probe, admitted, status)) return true;
      return false;
    });
  }

  // The request headers the policy reads (lower case): prepare() needs only these.
  get headerNames() {
    return this.#headerNames;
  }

  // The application's limiters (the document's rules name them by index).
  get limiters() {
    return this.#appLimiters.slice();
  }

  // The plan resolver's deadline in milliseconds (0: the document has no resolver).
  get resolverTimeoutMs() {
    return this.#native.resolverTimeoutMs();
  }

  // Limiter i of the steps: the application's, else one of the document's
  // own limits (a Limiter on the policy's client, made once).
  #limiterAt(i) {
    let l = this.#limiters[i];
    if (l === undefined && i >= this.#appLimiters.length && this.#client !== null) {
      l = Object.create(Limiter.prototype);
      try {
        l._native = new native.NativeLimiter(this.#client._native, this.#native.limiterAt(i), undefined, l);
      } catch (e) {
        rethrow(e);
      }
      this.#limiters[i] = l;
    }
    return l === undefined ? null : l;
  }

  // The rules, in order: { name, limiter } (limiter null: the rule exempts).
  get rules() {
    return this.#rules;
  }

  // Describes a request: { method, path, route?, peer?, headers?, user?,
  // tenant?, appKey?, cost?, plan? } -> a step { action: 'proceed' | 'check' |
  // 'respond' | 'need_app_key' | 'need_plan', rule (its name, or null), status (respond:
  // 400, 401 or 403), key and cost (check) }. headers: an object (names in
  // any case; an array value is a repeated header) or a function
  // (lowerCaseName) -> value. appKey: for rules keyed by 'app', asked for
  // with 'need_app_key' (prepare again with it; '' when there is none).
  // plan: the tenant's plan as a resolver answered 'need_plan' (absent: not
  // resolved; '' = the tenants table or the default plan).
  prepare(request) {
    if (request === null || typeof request !== 'object')
      throw new TypeError(`request must be an object, not ${describe(request)}`);
    const names = this.#headerNames;
    let values = [];
    const h = request.headers;
    if (typeof h === 'function') {
      values = names.map((n) => headerValue(h(n)));
    } else if (h !== undefined && h !== null) {
      if (typeof h !== 'object') throw new TypeError(`request.headers must be an object, not ${describe(h)}`);
      const lower = {};
      for (const [k, v] of Object.entries(h)) {
        const n = k.toLowerCase();
        lower[n] = lower[n] === undefined ? v : [].concat(lower[n], v);
      }
      values = names.map((n) => headerValue(lower[n]));
    }
    for (const f of ['method', 'path', 'route', 'peer', 'user', 'tenant', 'plan'])
      optionalText(`request.${f}`, request[f]);
    if (request.appKey !== undefined && request.appKey !== null && !(request.appKey instanceof Uint8Array))
      optionalText('request.appKey', request.appKey);
    if (request.cost !== undefined && request.cost !== null) checkInteger('request.cost', request.cost);
    return this._prepare(
      request.method || 'GET',
      request.path || '/',
      request.route,
      request.peer,
      values,
      request.user,
      request.tenant,
      request.appKey,
      request.cost,
      request.plan === null ? undefined : request.plan,
    );
  }

  // prepare() for the middlewares: arguments checked by them, header values
  // in headerNames' order.
  _prepare(method, path, route, peer, values, user, tenant, appKey, cost, plan) {
    let step;
    try {
      step = this.#native.prepare(method, path, route, peer, values, user, tenant, appKey, cost, plan);
    } catch (e) {
      rethrow(e);
    }
    step.action = ACTIONS[step.code];
    step.rule = step.ruleIndex < 0 ? null : this.#rules[step.ruleIndex].name;
    return step;
  }

  // The limiter to check a step of action 'check' on (null for other steps).
  limiterOf(step) {
    if (step.limiterIndex !== undefined) return step.limiterIndex < 0 ? null : this.#limiterAt(step.limiterIndex);
    const rule = step.ruleIndex >= 0 ? this.#rules[step.ruleIndex] : undefined;
    return rule ? rule.limiter : null;
  }

  // Whether some response to a request of this step can be refunded: false
  // when its rule's count_when is 'all' (then refundDue() is always false).
  mayRefund(step) {
    return step.ruleIndex >= 0 && this.#refunds[step.ruleIndex] === true;
  }

  // The response to a step: for 'respond' (no decision), or for 'check'
  // with the check's Decision, or null when the check failed. -> { status
  // (0: the request goes on), body, headers: [[name, value], ...] in order
  // (the rate-limit headers; Content-Type with a body) }.
  answer(step, decision = null) {
    let a;
    try {
      a = this.#native.answer(step, decision);
    } catch (e) {
      rethrow(e);
    }
    const headers = [];
    for (const line of a.headers.split('\n')) {
      const colon = line.indexOf(': ');
      if (colon > 0) headers.push([line.slice(0, colon), line.slice(colon + 2)]);
    }
    return { status: a.status, body: a.body, headers };
  }

  // After the response: true when the step's cost goes back to its limiter
  // (limiterOf(step).refund(step.key, step.cost)): the rule's count_when does
  // not count `status`, and Redis took the units (an admitted decision,
  // neither shadowed nor degraded).
  refundDue(step, decision, status) {
    if (decision === null || typeof decision !== 'object')
      throw new TypeError(`decision must be a Decision, not ${describe(decision)}`);
    checkInteger('status', status);
    return this.#native.refundDue(step, decision, status);
  }

  // Requests decided per rule and outcome, in the Prometheus text format
  // (polylimit_http_requests_total{rule,outcome}: never per key).
  metrics() {
    try {
      return this.#native.metrics();
    } catch (e) {
      rethrow(e);
    }
  }
}

// The policy of a document (JSON or TOML text, or an object that is
// serialized) whose rules name `limiters` by index; options { client }: the
// client the document's own limits ("limit", plans) are made on. An invalid
// document throws an InvalidArgumentError naming the line and the field.
function policyFromDocument(document, limiters = [], options = {}) {
  return new HttpPolicy(document, limiters, options);
}

// A policy document in code (docs/policy.md, "In code"): returns `document`
// itself, an object with the file's fields (snake_case, as in TOML or
// JSON). In TypeScript it types the document (PolicyDocument) and checks
// that default_plan and the tenants' plans name one of its plans; it
// validates nothing else: the core does, wherever the object is given
// (livePolicy, openPolicy's reload, policyFromDocument).
function definePolicy(document) {
  if (document === null || typeof document !== 'object' || Array.isArray(document))
    throw new TypeError(`a policy document must be an object, not ${describe(document)}`);
  return document;
}

function checkLimiters(limiters) {
  if (!Array.isArray(limiters)) throw new TypeError(`limiters must be an array, not ${describe(limiters)}`);
  limiters.forEach((l, i) => {
    if (!(l instanceof Limiter)) throw new TypeError(`limiters[${i}] must be a polylimit Limiter, not ${describe(l)}`);
  });
}

const FROM_LIVE = Symbol('polylimit.fromLive');
const OPEN = Symbol('polylimit.open');

// A policy that can be replaced while requests run (docs/policy.md): made
// from a document or opened from a file (watched when watchMs > 0), on a
// client that makes the document's own limits, plus the application's
// limiters. Each request takes current() and uses it to the end, so a
// reload never changes a request under way; a refused document (reload
// throws InvalidArgumentError naming the line) leaves the old policy.
//   options { limiters, resolver: async (tenant) => plan name, watchMs }
// The resolver answers the plan of tenants the document's table does not
// name, when the document has a [resolver] section: its answers are cached
// (resolver.cache_ttl_ms), and one that throws or takes longer than
// resolver.timeout_ms gives the default plan (the request does not wait
// longer). Without a resolver, a document with a [resolver] section is
// refused by the core, at creation and on every reload.
class LivePolicy {
  #native;
  #client;
  #limiters;
  #resolver;
  #policy = null; // the current HttpPolicy, for #generation
  #generation = 0;
  #resolving = new Map(); // tenant -> the promise of its plan, while the resolver runs

  constructor(client, document, options = {}) {
    if (!(client instanceof Client)) throw new TypeError(`client must be a polylimit Client, not ${describe(client)}`);
    if (options === null || typeof options !== 'object')
      throw new TypeError(`options must be an object, not ${describe(options)}`);
    const path = document !== null && typeof document === 'object' ? document[OPEN] : undefined;
    if (path === undefined && typeof document !== 'string') {
      if (document === null || typeof document !== 'object')
        throw new TypeError(`document must be JSON or TOML text, or an object, not ${describe(document)}`);
      document = JSON.stringify(document);
    }
    const limiters = options.limiters === undefined ? [] : options.limiters;
    checkLimiters(limiters);
    const resolver = options.resolver === undefined ? null : options.resolver;
    if (resolver !== null && typeof resolver !== 'function')
      throw new TypeError(`options.resolver must be a function (tenant) => plan, not ${describe(resolver)}`);
    const watchMs = options.watchMs === undefined ? 0 : options.watchMs;
    checkInteger('options.watchMs', watchMs);
    try {
      this.#native = new native.NativeLive(
        client._native,
        path === undefined ? document : undefined,
        path,
        limiters.map((l) => l._native),
        watchMs,
        resolver !== null,
      );
    } catch (e) {
      rethrow(e);
    }
    this.#client = client;
    this.#limiters = limiters.slice();
    this.#resolver = resolver;
  }

  // A live policy from the file at `path`: options { limiters, resolver,
  // watchMs } (watchMs > 0: a thread checks the file every watchMs ms and
  // reloads it when it changed; a refused file leaves the old policy and
  // sets lastError).
  static open(client, path, options = {}) {
    if (typeof path !== 'string' || path === '')
      throw new TypeError(`path must be a file's path, not ${describe(path)}`);
    return new LivePolicy(client, { [OPEN]: path }, options);
  }

  // The policy for one request (an HttpPolicy): take it at the start and
  // use it for the whole request; the same object until the next reload.
  current() {
    const g = this.generation;
    if (this.#policy === null || g !== this.#generation) {
      let taken;
      try {
        taken = this.#native.current();
      } catch (e) {
        rethrow(e);
      }
      this.#policy = new HttpPolicy(null, this.#limiters, { client: this.#client, [FROM_LIVE]: taken });
      this.#generation = g;
    }
    return this.#policy;
  }

  // Replaces the policy by `document` (text or an object), or throws
  // InvalidArgumentError naming the line (the old policy stays).
  reload(document) {
    if (typeof document !== 'string') {
      if (document === null || typeof document !== 'object')
        throw new TypeError(`document must be JSON or TOML text, or an object, not ${describe(document)}`);
      document = JSON.stringify(document);
    }
    try {
      this.#native.reload(document);
    } catch (e) {
      rethrow(e);
    }
  }

  // Reads the file again (a policy opened from a file) and reloads it.
  reloadFile() {
    try {
      this.#native.reloadFile();
    } catch (e) {
      rethrow(e);
    }
  }

  // 1 after creation, +1 per accepted reload.
  get generation() {
    try {
      return this.#native.generation();
    } catch (e) {
      throw wrap(e);
    }
  }

  // The last refused reload's message ('' since an accepted one).
  get lastError() {
    try {
      return this.#native.lastError();
    } catch (e) {
      throw wrap(e);
    }
  }

  get resolver() {
    return this.#resolver;
  }

  // The current policy's per-rule counters and polylimit_http_policy_reloads_total (Prometheus text).
  metrics() {
    try {
      return this.#native.metrics();
    } catch (e) {
      rethrow(e);
    }
  }

  // The plan of `tenant` for a 'need_plan' step: the cached answer, else the
  // resolver's within timeoutMs; '' (the default plan) when it throws,
  // answers something other than a plan name, or is late. Never rejects.
  resolvePlan(tenant, timeoutMs) {
    if (this.#resolver === null || tenant === undefined || tenant === null) return Promise.resolve('');
    const t = typeof tenant === 'string' ? tenant : Buffer.from(tenant).toString('utf8');
    const cached = this.#native.cachedPlan(t);
    if (cached !== undefined) return Promise.resolve(cached);
    let p = this.#resolving.get(t);
    if (p === undefined) {
      p = this.#resolve(t, timeoutMs).finally(() => this.#resolving.delete(t));
      this.#resolving.set(t, p);
    }
    return p;
  }

  #resolve(tenant, timeoutMs) {
    return new Promise((resolve) => {
      let done = false;
      const finish = (plan) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve(plan);
      };
      const timer = setTimeout(() => finish(''), Math.max(1, timeoutMs));
      let answer;
      try {
        answer = this.#resolver(tenant);
      } catch {
        finish('');
        return;
      }
      Promise.resolve(answer).then(
        (plan) => {
          if (done || typeof plan !== 'string' || plan === '') return finish('');
          try {
            this.#native.cachePlan(tenant, plan);
          } catch {
            // the cache refused it (e.g. a live policy closed meanwhile): use it for this request
          }
          finish(plan);
        },
        () => finish(''),
      );
    });
  }

  // Stops watching the file and drops the live policy; requests under way
  // finish on the policy they took. Later calls throw ClosedError.
  close() {
    this.#native.close();
  }
}

// Several clients on one Prometheus page: each metric's HELP and TYPE once,
// one sample per client; with more than one client each needs a distinct
// `name` (ClientOptions). Concatenating client.metrics() texts is not valid
// exposition; this is.
function prometheus(...clients) {
  for (const c of clients) if (!(c instanceof Client)) throw new TypeError('prometheus() takes polylimit Clients');
  try {
    return native.NativeClient.prometheusAll(clients.map((c) => c._native));
  } catch (e) {
    rethrow(e);
  }
}

module.exports = {
  prometheus,
  Client,
  Limiter,
  Decision,
  HttpPolicy,
  LivePolicy,
  policyFromDocument,
  definePolicy,
  ...errors,
  algorithms: Object.keys(vocabulary.algorithms),
  failurePolicies: Object.keys(vocabulary.failurePolicies),
  version: native.version,
};
