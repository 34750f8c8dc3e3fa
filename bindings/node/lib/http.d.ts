// Options of the HTTP integrations (polylimit/express, polylimit/fastify):
// translated into a policy document (docs/integrations/contract.md).
import type { HttpPolicy, Key, Limiter } from './index';
import type { PolicyDocument } from './policy';

/**
 * A key part of the contract: 'ip', 'api_key', 'api_key:<Header>',
 * 'header:<Header>', 'user', 'tenant', 'route', 'app', or parts joined
 * with '+' ('tenant+route').
 */
export type KeyPart = string;
/** The application's own key (the 'app' part), or a credential's value (the 'user' part, see credential()). */
export type KeyFunction<Req = unknown> = (req: Req) => Key | null | undefined | Promise<Key | null | undefined>;
/** Parts joined into one key, one of them a key function. */
export interface Composition<Req = unknown> {
  compose: Array<KeyPart | KeyFunction<Req>>;
}
/** A composition, or alternatives (an array: the first whose parts are all present). */
export type KeySpec<Req = unknown> =
  | KeyPart
  | KeyFunction<Req>
  | Composition<Req>
  | Array<KeyPart | KeyFunction<Req> | Composition<Req>>;

/** count_when: which responses keep their units; the others are refunded. */
export type CountWhen = 'all' | 'failures' | 'successes' | Array<number | string>;
/** A constant cost, or a header's: { header: 'X-Cost', default: 1, max: 1000 }. */
export type Cost = number | { header: string; default?: number; max?: number };

export interface Lists {
  /** addresses and CIDRs */
  ips?: string[];
  /** 'sha256:<64 hex>' or the key itself */
  apiKeys?: string[];
  users?: string[];
  tenants?: string[];
}

/** What a rule inherits from the middleware's options, and may set itself. */
export interface RuleSettings<Req = unknown> {
  /** 'ip' by default */
  key?: KeySpec<Req>;
  /** units per request (default 1), or a header's */
  cost?: Cost;
  /** a request without its key: 'reject' (400, 401 for a credential; the default) or 'skip' */
  onMissingKey?: 'reject' | 'skip';
  countWhen?: CountWhen;
  /** the methods the rule applies to (any case); default every method */
  methods?: string[];
}

export interface RuleOptions<Req = unknown> extends RuleSettings<Req> {
  name?: string;
  /** path globs (* any run, ? one character); '/api/' is the prefix '/api/*' */
  paths?: string[];
  /** route templates, matched exactly against the framework's ('/users/:id') */
  routes?: string[];
  /** null: what the rule matches is exempt */
  limiter: Limiter | null;
}

/** The hooks a middleware asks the application (with a policy, the only options). */
export interface HttpHooks<Req = unknown> {
  /** the user's id; default req.user (a string, or its `id`) */
  user?: (req: Req) => string | number | null | undefined | Promise<string | number | null | undefined>;
  /** the tenant's id */
  tenant?: (req: Req) => string | number | null | undefined | Promise<string | number | null | undefined>;
  /** the application's key, for rules keyed by 'app' */
  appKey?: (req: Req, rule: string) => Key | null | undefined | Promise<Key | null | undefined>;
  /** this request's cost, instead of its rule's */
  cost?: (req: Req) => number | null | undefined | Promise<number | null | undefined>;
}

export interface HttpLimitOptions<Req = unknown> extends Omit<RuleSettings<Req>, 'cost'>, Omit<HttpHooks<Req>, 'cost'> {
  /** a constant, a header's, or a function of the request */
  cost?: Cost | HttpHooks<Req>['cost'];
  /** addresses or subnets ('10.0.0.0/8') whose X-Forwarded-For is read */
  trustedProxies?: string[];
  /** the network an 'ip' key stands for: 32 and 64 by default */
  ipv4Prefix?: number;
  ipv6Prefix?: number;
  /** the header the lists' apiKeys are read from (X-API-Key) */
  apiKeyHeader?: string;
  /** answered 403 */
  deny?: Lists;
  /** go on unchecked */
  allow?: Lists;
  /** a limiter per path ('/login'), path prefix ('/api/') or glob, or a rule's options */
  routes?: Record<string, Limiter | null | Omit<RuleOptions<Req>, 'paths'>>;
  /** rules of their own, checked after `routes` and before the default limiter */
  rules?: RuleOptions<Req>[];
  /** paths ('/healthz'), prefixes ('/static/') or globs never checked */
  exempt?: string[];
  /** the rate-limit headers on admitted responses too (default true) */
  sendHeaders?: boolean;
  /** when Redis cannot decide: 'unavailable' (503, the default) or 'allow' */
  onError?: 'unavailable' | 'allow';
}

/** The options as the policy document they stand for, and its limiters. */
export function documentOf<Req = unknown>(
  limiter: Limiter | null,
  options?: HttpLimitOptions<Req>,
): { document: PolicyDocument; limiters: Limiter[]; appKey: KeyFunction<Req> | null; userKey: KeyFunction<Req> | null };

export function ip(): KeyPart;
/** The API key in a request header (default X-API-Key), a credential: keyed by its SHA-256; 401 when absent. */
export function apiKey(header?: string): KeyPart;
/** A request header, keyed by its SHA-256. */
export function header(name: string): KeyPart;
export function user(): KeyPart;
export function tenant(): KeyPart;
export function route(): KeyPart;
export function compose<Req = unknown>(...parts: Array<KeyPart | KeyFunction<Req>>): KeyPart | Composition<Req>;
export function firstOf<Req = unknown>(
  ...keys: Array<KeyPart | KeyFunction<Req> | Composition<Req>>
): Array<KeyPart | KeyFunction<Req> | Composition<Req>>;
/** Marks a key function as a credential (401 without its key): it stands for the 'user' part. */
export function credential<Req = unknown>(fn: KeyFunction<Req> | KeyPart): KeyFunction<Req>;

export type { HttpPolicy };
