// Options of the HTTP integrations (polylimit/express, polylimit/fastify).
import type { Key, Limiter } from './index';

export interface HttpLimitOptions<Req = unknown> {
  /** 'ip' (the default: the peer, or X-Forwarded-For from trusted proxies) or a function; null, undefined or '' when the request has no key */
  key?: 'ip' | KeyFunction<Req>;
  /** a request without a key: 'reject' (the default: 400, or 401 when the key function is a credential) or 'skip' (unlimited) */
  onMissingKey?: 'reject' | 'skip';
  /** addresses or subnets ('10.0.0.0/8') whose X-Forwarded-For is read */
  trustedProxies?: string[];
  /** a limiter per path ('/login'), or per path prefix ('/api/') */
  routes?: Record<string, Limiter>;
  /** paths ('/healthz') or prefixes ('/static/') that are never checked */
  exempt?: string[];
  /** units per request (default 1) */
  cost?: number;
}

export type KeyFunction<Req = unknown> = (req: Req) => Key | null | undefined | Promise<Key | null | undefined>;

/** The API key in a request header (default 'x-api-key'), as a credential: missing, it is a 401. */
export function apiKey<Req = unknown>(header?: string): KeyFunction<Req>;
/** Marks a key function as a credential: a request where it finds no key gets 401. */
export function credential<Req = unknown>(fn: KeyFunction<Req>): KeyFunction<Req>;
