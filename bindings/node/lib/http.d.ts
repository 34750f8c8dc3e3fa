// Options of the HTTP integrations (polylimit/express, polylimit/fastify).
import type { Key, Limiter } from './index';

export interface HttpLimitOptions<Req = unknown> {
  /** 'ip' (the default: the peer, or X-Forwarded-For from trusted proxies) or a function; null or '' skips the check */
  key?: 'ip' | ((req: Req) => Key | null | undefined | Promise<Key | null | undefined>);
  /** addresses or subnets ('10.0.0.0/8') whose X-Forwarded-For is read */
  trustedProxies?: string[];
  /** a limiter per path ('/login'), or per path prefix ('/api/') */
  routes?: Record<string, Limiter>;
  /** paths ('/healthz') or prefixes ('/static/') that are never checked */
  exempt?: string[];
  /** units per request (default 1) */
  cost?: number;
}
