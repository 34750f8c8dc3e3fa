'use strict';
// What the HTTP integrations (express.js, fastify.js) share. Nothing here
// decides anything: the per-request logic is the core's request policy
// (docs/integrations/contract.md). This file
//   - translates the options of rateLimit() / the Fastify plugin into a
//     policy document and its limiters (documentOf), and
//   - runs one request (decide): describe it, prepare (synchronous), the
//     check on the rule's limiter (the limiter's own asynchronous path),
//     answer (synchronous); after the response, settle: refundDue and, when
//     due, the refund (count_when).

const { Limiter, HttpPolicy, LivePolicy, PolylimitError } = require('./index');

// ---- key helpers: each names a key part of the contract --------------------

// Key functions marked as credentials: a request without their key is
// answered 401, not 400. They are the policy's `user` part (the function
// gives the id).
const CREDENTIAL = Symbol('polylimit.credential');

// The client's address ('ip'): the peer, or X-Forwarded-For from trusted proxies.
function ip() {
  return 'ip';
}

// The API key in a request header (default X-API-Key), as a credential:
// keyed by its SHA-256 (the secret never reaches Redis), 401 when absent.
function apiKey(header = 'X-API-Key') {
  if (typeof header !== 'string' || header === '') throw new TypeError('apiKey(header): a header name');
  return `api_key:${header}`;
}

// Any request header, keyed by its SHA-256; 400 when absent.
function header(name) {
  if (typeof name !== 'string' || name === '') throw new TypeError('header(name): a header name');
  return `header:${name}`;
}

// The user's id (the `user` option, else req.user), a credential.
function user() {
  return 'user';
}

// The tenant's id (the `tenant` option), a credential.
function tenant() {
  return 'tenant';
}

// The route: one budget per route (method and template, else path) for all clients.
function route() {
  return 'route';
}

// Parts joined into one key: compose(user(), route()) is 'user+route'. A
// key function among them is the 'app' part (or 'user' for a credential).
function compose(...parts) {
  if (parts.length === 0) throw new TypeError('compose() takes key parts');
  for (const p of parts)
    if (typeof p !== 'string' && typeof p !== 'function')
      throw new TypeError('compose() takes key parts (strings such as "ip") or a key function');
  return parts.every((p) => typeof p === 'string') ? parts.join('+') : { compose: parts };
}

// Alternatives: the first whose parts are all present is the key
// (firstOf(apiKey(), ip()) is ['api_key:X-API-Key', 'ip'], as in a document).
function firstOf(...keys) {
  if (keys.length === 0) throw new TypeError('firstOf() takes keys');
  return keys;
}

// Marks a key function of your own as a credential (401 without its key).
// It stands for the policy's `user` part: its value keys as user:<value>.
function credential(fn) {
  if (typeof fn === 'string') return fn; // a key part: the core knows whether it is a credential
  if (typeof fn !== 'function') throw new TypeError('credential() takes a key function (req) => key');
  const marked = (req) => fn(req);
  marked[CREDENTIAL] = true;
  return marked;
}

// ---- options -> a policy document --------------------------------------------

const MISSING_KEY = ['reject', 'skip'];
const ON_ERROR = ['unavailable', 'allow'];

function fail(message) {
  throw new TypeError(message);
}

// A path of the options as a glob of the document: '/static/' (a prefix)
// is '/static/*'; '/login' is exact; a pattern with * or ? is a glob already.
function glob(path) {
  if (typeof path !== 'string' || path === '') fail(`a path must be a non-empty string, not ${String(path)}`);
  if (/[*?]/.test(path)) return path;
  return path.endsWith('/') ? `${path}*` : path;
}

// A rule name from a path ('/login' is login, '/api/' api): printable
// ASCII without space, '"' or '\', at most 64 characters.
function nameOf(path) {
  const name = path
    .replace(/[^A-Za-z0-9_.-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64);
  return name === '' ? 'root' : name;
}

// Builds the document while collecting the limiters and the functions
// the key parts stand for.
class Translation {
  constructor() {
    this.limiters = [];
    this.appKey = null; // the key function of the 'app' part
    this.userKey = null; // a credential key function: the 'user' part
    this.names = new Set();
  }

  limiterIndex(limiter, where) {
    if (limiter === null) return null;
    if (!(limiter instanceof Limiter)) fail(`${where} must be a polylimit Limiter`);
    let i = this.limiters.indexOf(limiter);
    if (i < 0) i = this.limiters.push(limiter) - 1;
    return i;
  }

  part(p, where) {
    if (typeof p === 'string') return p;
    if (typeof p !== 'function') fail(`${where}: a key is a key part ('ip', 'api_key:X-API-Key', ...) or a function`);
    const slot = p[CREDENTIAL] === true ? 'userKey' : 'appKey';
    if (this[slot] !== null && this[slot] !== p)
      fail(`${where}: one ${slot === 'userKey' ? 'credential ' : ''}key function per middleware`);
    this[slot] = p;
    return slot === 'userKey' ? 'user' : 'app';
  }

  composition(k, where) {
    if (k !== null && typeof k === 'object' && Array.isArray(k.compose))
      return k.compose.map((p) => this.part(p, where)).join('+');
    return this.part(k, where);
  }

  // A key of the options: a composition, or an array of alternatives.
  key(k, where) {
    if (k === undefined) return undefined;
    if (Array.isArray(k)) {
      if (k.length === 0) fail(`${where}: an empty list of alternatives`);
      return k.map((a) => this.composition(a, where));
    }
    return this.composition(k, where);
  }

  uniqueName(name) {
    let n = name;
    for (let i = 2; this.names.has(n); i++) n = `${name.slice(0, 60)}-${i}`;
    this.names.add(n);
    return n;
  }

  // One rule; `base`: the middleware's options every rule inherits.
  rule(r, base, where) {
    if (r === null || typeof r !== 'object') fail(`${where} must be an object`);
    const out = { name: this.uniqueName(r.name || nameOf((r.paths || r.routes || ['default'])[0])) };
    if (r.paths !== undefined) out.paths = [].concat(r.paths).map(glob);
    if (r.routes !== undefined) out.routes = [].concat(r.routes);
    const methods = r.methods !== undefined ? r.methods : base.methods;
    if (methods !== undefined) out.methods = [].concat(methods);
    if (r.limiter === undefined) fail(`${where}.limiter: a polylimit Limiter, or null to exempt`);
    out.limiter = this.limiterIndex(r.limiter, `${where}.limiter`);
    if (out.limiter === null) return out;
    const key = this.key(r.key !== undefined ? r.key : base.key, `${where}.key`);
    if (key !== undefined) out.key = key;
    const cost = r.cost !== undefined ? r.cost : base.cost;
    if (typeof cost === 'function') fail(`${where}.cost: a cost function is given once, for the middleware`);
    if (cost !== undefined) out.cost = cost;
    const onMissingKey = r.onMissingKey !== undefined ? r.onMissingKey : base.onMissingKey;
    if (onMissingKey !== undefined) {
      if (!MISSING_KEY.includes(onMissingKey))
        fail(`onMissingKey must be 'reject' or 'skip', not ${JSON.stringify(onMissingKey)}`);
      out.on_missing_key = onMissingKey;
    }
    const countWhen = r.countWhen !== undefined ? r.countWhen : base.countWhen;
    if (countWhen !== undefined) {
      if (typeof countWhen === 'function')
        fail(`${where}.countWhen: 'all', 'failures', 'successes' or a list of statuses, classes ('5xx') and ranges`);
      out.count_when = countWhen;
    }
    return out;
  }
}

function lists(l, where) {
  if (l === undefined) return undefined;
  if (l === null || typeof l !== 'object') fail(`${where}: { ips, apiKeys, users, tenants }`);
  const out = {};
  for (const [from, to] of [
    ['ips', 'ips'],
    ['apiKeys', 'api_keys'],
    ['users', 'users'],
    ['tenants', 'tenants'],
  ])
    if (l[from] !== undefined) out[to] = l[from];
  return out;
}

// The options of rateLimit(limiter, options) / the Fastify plugin as a
// policy document and its limiters:
//   { document, limiters, appKey (the 'app' part's function), userKey (a
//     credential function, the 'user' part's) }
// `limiter`: the default rule's (null: only `routes` and `rules` limit).
function documentOf(limiter, options = {}) {
  if (options === null || typeof options !== 'object') fail('options must be an object');
  if (limiter !== null && !(limiter instanceof Limiter)) fail('limiter must be a polylimit Limiter or null');
  const t = new Translation();
  const base = {
    key: options.key,
    cost: typeof options.cost === 'function' ? undefined : options.cost,
    onMissingKey: options.onMissingKey,
    countWhen: options.countWhen,
    methods: options.methods,
  };
  if (base.onMissingKey !== undefined && !MISSING_KEY.includes(base.onMissingKey))
    fail(`onMissingKey must be 'reject' or 'skip', not ${JSON.stringify(base.onMissingKey)}`);
  const doc = {};
  if (options.trustedProxies !== undefined) doc.trusted_proxies = options.trustedProxies;
  if (options.ipv4Prefix !== undefined) doc.ipv4_prefix = options.ipv4Prefix;
  if (options.ipv6Prefix !== undefined) doc.ipv6_prefix = options.ipv6Prefix;
  if (options.apiKeyHeader !== undefined) doc.api_key_header = options.apiKeyHeader;
  if (options.deny !== undefined) doc.deny = lists(options.deny, 'deny');
  if (options.allow !== undefined) doc.allow = lists(options.allow, 'allow');
  if (options.exempt !== undefined) doc.exempt = [].concat(options.exempt).map(glob);
  if (options.sendHeaders !== undefined) doc.send_headers = options.sendHeaders;
  if (options.onError !== undefined) {
    if (!ON_ERROR.includes(options.onError))
      fail(`onError must be 'unavailable' or 'allow', not ${JSON.stringify(options.onError)}`);
    doc.on_error = options.onError;
  }
  const rules = [];
  if (limiter !== null) t.limiterIndex(limiter, 'limiter'); // the default's is limiters[0]
  // routes: { '/login': limiter } or { '/api/': { limiter, methods, key, cost, countWhen, onMissingKey, name } }
  for (const [path, value] of Object.entries(options.routes || {})) {
    const where = `routes['${path}']`;
    const r = value instanceof Limiter || value === null ? { limiter: value } : value;
    if (r === undefined || typeof r !== 'object') fail(`${where} must be a polylimit Limiter`);
    if (!(r instanceof Limiter) && r.limiter !== null && !(r.limiter instanceof Limiter))
      fail(`${where} must be a polylimit Limiter`);
    rules.push(t.rule({ name: nameOf(path), ...r, paths: [path] }, base, where));
  }
  // rules: [{ name, paths, routes (templates), methods, limiter, key, cost, countWhen, onMissingKey }]
  (options.rules || []).forEach((r, i) => {
    rules.push(t.rule(r, base, `rules[${i}]`));
  });
  if (limiter !== null) rules.push(t.rule({ name: 'default', limiter }, base, 'limiter'));
  doc.rules = rules;
  return { document: doc, limiters: t.limiters, appKey: t.appKey, userKey: t.userKey };
}

// ---- one request ----------------------------------------------------------------

// The framework's notion of the user: req.user, an id or an object with an `id`.
function defaultUser(req) {
  const u = req.user;
  if (typeof u === 'string') return u;
  if (u !== null && typeof u === 'object' && (typeof u.id === 'string' || typeof u.id === 'number')) return u.id;
  return undefined;
}

function none() {
  return undefined;
}

function thenable(v) {
  return v !== null && typeof v === 'object' && typeof v.then === 'function';
}

// An identity as the policy takes it: absent (undefined), a string, or bytes.
function identity(v) {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string' || v instanceof Uint8Array) return v;
  return String(v);
}

// The policy and the application's hooks a middleware runs with:
// rateLimit(policy, { user, tenant, appKey, cost }) or rateLimit(limiter, options).
// `policy`: an HttpPolicy, or a LivePolicy (each request takes its current one).
function setup(limiterOrPolicy, options = {}) {
  if (options === null || typeof options !== 'object') fail('options must be an object');
  let policy;
  let appKey = options.appKey;
  let userHook = options.user;
  if (limiterOrPolicy instanceof HttpPolicy || limiterOrPolicy instanceof LivePolicy) {
    for (const name of ['key', 'routes', 'rules', 'exempt', 'trustedProxies', 'countWhen', 'methods', 'allow', 'deny'])
      if (options[name] !== undefined)
        fail(`options.${name}: with a policy, the document says it (the options are user, tenant, appKey, cost)`);
    if (options.cost !== undefined && typeof options.cost !== 'function')
      fail('options.cost: with a policy, a function (req) => cost; the document gives constant costs');
    policy = limiterOrPolicy;
    if (policy instanceof HttpPolicy && policy.resolverTimeoutMs > 0)
      fail(
        'the document has a [resolver] section: use a LivePolicy with a resolver (client.livePolicy(doc, { resolver }))',
      );
  } else {
    const t = documentOf(limiterOrPolicy === undefined ? null : limiterOrPolicy, options);
    if (t.userKey !== null && userHook !== undefined) fail('a credential key function and the user option: give one');
    if (t.appKey !== null && appKey !== undefined) fail('a key function and the appKey option: give one');
    if (t.userKey !== null) userHook = t.userKey;
    if (t.appKey !== null) {
      const fn = t.appKey;
      appKey = (req) => fn(req);
    }
    policy = new HttpPolicy(t.document, t.limiters);
  }
  for (const name of ['user', 'tenant', 'appKey', 'cost']) {
    const v = name === 'user' ? userHook : name === 'appKey' ? appKey : options[name];
    if (v !== undefined && typeof v !== 'function') fail(`options.${name} must be a function (req) => value`);
  }
  const live = policy instanceof LivePolicy ? policy : null;
  return {
    policy,
    live,
    // The first prepare's plan: not resolved (a 'need_plan' step may come)
    // with a resolver, else '' (the tenants table or the default plan).
    plan: live !== null && live.resolver !== null ? undefined : '',
    user: userHook || defaultUser,
    tenant: options.tenant || none,
    appKey: appKey || null,
    cost: typeof options.cost === 'function' ? options.cost : null,
  };
}

const NO_VALUES = [];

// One request: describe, prepare, check, answer. `headers`: the request's
// headers by lower-case name (Node's req.headers). Resolves with
//   { policy (the HttpPolicy it was decided by: settle with it), step,
//     decision (the check's, or null), answer (null: go on with no
//     headers; else { status (0: go on), body, headers: [[name, value]] }) }
// and rejects only with the application's own errors (its hooks threw).
async function decide(h, req, method, path, route, peer, headers) {
  const policy = h.live !== null ? h.live.current() : h.policy;
  const names = policy.headerNames;
  let values = NO_VALUES;
  if (names.length > 0) {
    values = new Array(names.length);
    for (let i = 0; i < names.length; i++) {
      const v = headers[names[i]];
      values[i] = v === undefined ? undefined : Array.isArray(v) ? v.join(', ') : String(v);
    }
  }
  let user = h.user(req);
  if (thenable(user)) user = await user;
  let tenant = h.tenant(req);
  if (thenable(tenant)) tenant = await tenant;
  let cost;
  if (h.cost !== null) {
    cost = h.cost(req);
    if (thenable(cost)) cost = await cost;
    if (cost !== undefined && cost !== null && (!Number.isSafeInteger(cost) || cost < 1))
      fail(`the cost function gave ${String(cost)}: a whole number of at least 1`);
  }
  user = identity(user);
  tenant = identity(tenant);
  if (route === '') route = undefined;
  let plan = h.plan;
  let app;
  let step = policy._prepare(method, path, route, peer, values, user, tenant, app, cost, plan);
  // At most one of each: the core asks for the application's key and the
  // tenant's plan once each.
  for (let round = 0; round < 2; round++) {
    if (step.action === 'need_app_key' && app === undefined) {
      if (h.appKey === null) fail(`rule "${step.rule}" keys by "app": give the middleware an appKey function`);
      let k = h.appKey(req, step.rule);
      if (thenable(k)) k = await k;
      k = identity(k);
      app = k === undefined ? '' : k;
    } else if (step.action === 'need_plan' && plan === undefined) {
      plan = await h.live.resolvePlan(tenant, policy.resolverTimeoutMs);
    } else {
      break;
    }
    step = policy._prepare(method, path, route, peer, values, user, tenant, app, cost, plan);
  }
  if (step.action === 'proceed') return { policy, step, decision: null, answer: null };
  if (step.action === 'respond') return { policy, step, decision: null, answer: policy.answer(step) };
  const limiter = policy.limiterOf(step);
  let decision = null;
  try {
    decision = await limiter.check(step.key, step.cost);
  } catch (error) {
    // Redis could not decide and the limiter's failure policy did not
    // answer: the policy's on_error says what the request gets.
    if (!(error instanceof PolylimitError)) throw error;
  }
  return { policy, step, decision, answer: policy.answer(step, decision) };
}

// After the response: the refund count_when asks for, if any. A refund that
// fails leaves the units taken (the request counted): nothing to report to
// a response that is gone.
function settle(policy, step, decision, status) {
  if (!policy.refundDue(step, decision, status)) return;
  policy
    .limiterOf(step)
    .refund(step.key, step.cost)
    .catch(() => {});
}

// Whether the request needs settling after its response.
function needsSettling(policy, r) {
  return r.decision !== null && policy.mayRefund(r.step);
}

// The path as routers match it and path globs are written: without the
// query, every valid %XX decoded to its byte (%2F too, as Go, ASGI and
// servlets do), an invalid escape left as it is. A path with an escape or a
// character past ASCII comes back as bytes (a Buffer; they need not be
// UTF-8): Node gives the request line's bytes as Latin-1 characters, each
// passed on as its byte.
function pathOf(url) {
  const q = url.indexOf('?');
  const raw = q < 0 ? url : url.slice(0, q);
  return /[%\u0080-\uffff]/.test(raw) ? decodePath(raw) : raw;
}

function hexDigit(c) {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x61 + 10 : -1;
}

function decodePath(raw) {
  const out = [];
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x25 && i + 2 < raw.length) {
      const hi = hexDigit(raw.charCodeAt(i + 1));
      const lo = hexDigit(raw.charCodeAt(i + 2));
      if (hi >= 0 && lo >= 0) {
        out.push((hi << 4) | lo);
        i += 2;
        continue;
      }
    }
    if (c <= 0xff) {
      out.push(c);
    } else {
      // Not from the wire (an application's rewrite): its UTF-8.
      const cp = raw.codePointAt(i);
      if (cp > 0xffff) i++;
      for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) out.push(b);
    }
  }
  return Buffer.from(out);
}

module.exports = {
  setup,
  decide,
  settle,
  needsSettling,
  pathOf,
  documentOf,
  ip,
  apiKey,
  header,
  user,
  tenant,
  route,
  compose,
  firstOf,
  credential,
};
