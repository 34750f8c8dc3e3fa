'use strict';
// What the HTTP integrations (express.js, fastify.js) share: the key of a
// request, which limiter applies to its path, and the answer to send. The
// headers always come from the library (Decision.headers()).

const crypto = require('node:crypto');
const net = require('node:net');
const { Limiter, PolylimitError } = require('./index');

// Key functions that name a credential (an API key, a user): a request
// without one is refused with 401, not 400 (docs/integrations/README.md,
// "Missing keys").
const CREDENTIAL = Symbol('polylimit.credential');

// Marks a key function of your own as a credential.
function credential(fn) {
  if (typeof fn !== 'function') throw new TypeError('credential() takes a key function (req) => key');
  const marked = (req) => fn(req);
  marked[CREDENTIAL] = true;
  return marked;
}

// The API key in a request header, as a credential. The stored key is a
// SHA-256 of the header's value, so keys never reach Redis in clear.
function apiKey(header = 'x-api-key') {
  if (typeof header !== 'string' || header === '') throw new TypeError('apiKey(header): a header name');
  const name = header.toLowerCase();
  return credential((req) => {
    const value = req.headers?.[name];
    const v = Array.isArray(value) ? value[0] : value;
    if (typeof v !== 'string' || v === '') return null;
    return `apikey:${crypto.createHash('sha256').update(v).digest('hex')}`;
  });
}

const MISSING_KEY = { reject: 'reject', skip: 'skip' };

// Trusted proxies: addresses ('10.0.0.1', '::1') and subnets ('10.0.0.0/8').
function trustList(entries) {
  const list = new net.BlockList();
  for (const entry of entries) {
    if (typeof entry !== 'string') throw new TypeError(`trustedProxies: not a string: ${String(entry)}`);
    const [address, bits] = entry.split('/');
    const family = net.isIPv6(address) ? 'ipv6' : net.isIPv4(address) ? 'ipv4' : null;
    if (family === null) throw new TypeError(`trustedProxies: '${entry}' is not an IP address or subnet`);
    if (bits === undefined) {
      list.addAddress(address, family);
    } else {
      const prefix = Number(bits);
      if (!Number.isInteger(prefix) || prefix < 0 || prefix > (family === 'ipv4' ? 32 : 128))
        throw new TypeError(`trustedProxies: '${entry}' has a bad prefix length`);
      list.addSubnet(address, prefix, family);
    }
  }
  return list;
}

// ::ffff:1.2.3.4 (an IPv4 peer on a dual-stack socket) is 1.2.3.4.
function plainAddress(address) {
  if (typeof address !== 'string') return '';
  return address.startsWith('::ffff:') && net.isIPv4(address.slice(7)) ? address.slice(7) : address;
}

function trusted(list, address) {
  if (net.isIPv4(address)) return list.check(address, 'ipv4');
  if (net.isIPv6(address)) return list.check(address, 'ipv6');
  return false;
}

// The client's address: the peer, unless the peer is a trusted proxy; then
// X-Forwarded-For read from the right, past every trusted proxy (the
// left-most entries can be anything a client sent).
function clientAddress(peer, forwardedFor, list) {
  let address = plainAddress(peer);
  if (!forwardedFor || !trusted(list, address)) return address;
  const hops = String(forwardedFor)
    .split(',')
    .map((h) => plainAddress(h.trim()))
    .filter((h) => h !== '');
  for (let i = hops.length - 1; i >= 0; i--) {
    address = hops[i];
    if (!trusted(list, address)) break;
  }
  return address;
}

// A path matches a route or an exemption when equal to it, or under it when
// it ends with '/'.
function matches(pattern, path) {
  return pattern.endsWith('/') ? path.startsWith(pattern) : path === pattern;
}

// Options: limiter (the default; null: only `routes` are limited), key
// ('ip', or (req) => key, null when the request has none), onMissingKey
// ('reject', the default: 400, or 401 for a credential; 'skip': the request
// goes through unlimited, only when asked for by name), trustedProxies,
// routes ({ '/login': limiter }), exempt (['/healthz', '/static/']), cost.
function makeDecider(limiter, options = {}) {
  if (limiter !== null && !(limiter instanceof Limiter))
    throw new TypeError('limiter must be a polylimit Limiter or null');
  const list = trustList(options.trustedProxies || []);
  const routes = Object.entries(options.routes || {});
  for (const [route, l] of routes)
    if (!(l instanceof Limiter)) throw new TypeError(`routes['${route}'] must be a polylimit Limiter`);
  const exempt = options.exempt || [];
  const key = options.key === undefined || options.key === 'ip' ? null : options.key;
  if (key !== null && typeof key !== 'function') throw new TypeError("key must be 'ip' or a function (req) => key");
  const cost = options.cost === undefined ? 1 : options.cost;
  const onMissingKey = options.onMissingKey === undefined ? MISSING_KEY.reject : options.onMissingKey;
  if (!Object.hasOwn(MISSING_KEY, onMissingKey))
    throw new TypeError(`onMissingKey must be 'reject' or 'skip', not ${JSON.stringify(onMissingKey)}`);
  const isCredential = key !== null && key[CREDENTIAL] === true;

  // decide(req, path, peer, forwardedFor) ->
  //   { action: 'next' | 'deny' | 'fail' | 'reject', headers, decision, error, status, body }
  return async function decide(req, path, peer, forwardedFor) {
    if (exempt.some((p) => matches(p, path))) return { action: 'next', headers: {} };
    const route = routes.find(([p]) => matches(p, path));
    const chosen = route ? route[1] : limiter;
    if (chosen === null) return { action: 'next', headers: {} };
    const k = key ? await key(req) : clientAddress(peer, forwardedFor, list);
    if (k === null || k === undefined || k === '') {
      if (onMissingKey === MISSING_KEY.skip) return { action: 'next', headers: {} };
      return isCredential
        ? { action: 'reject', headers: {}, status: 401, body: 'no credential to rate-limit the request by' }
        : { action: 'reject', headers: {}, status: 400, body: 'no rate-limit key in the request' };
    }
    try {
      const decision = await chosen.check(k, cost);
      return { action: decision.allowed ? 'next' : 'deny', headers: decision.headers(), decision };
    } catch (error) {
      // The limiter's failure policy already answered what it could; what
      // reaches here (the default policy 'error') is the server's fault.
      if (error instanceof PolylimitError) return { action: 'fail', headers: {}, error };
      throw error;
    }
  };
}

// The answer to a request the decider did not let through.
function refusal(r) {
  if (r.action === 'reject') return { status: r.status, body: r.body };
  if (r.action === 'deny') return { status: 429, body: 'Too Many Requests' };
  return { status: 503, body: 'Service Unavailable' };
}

module.exports = { makeDecider, clientAddress, trustList, apiKey, credential, refusal };
