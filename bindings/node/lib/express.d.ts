// polylimit/express: Express middleware and an express-rate-limit Store.
import type { HttpPolicy, Limiter, LivePolicy } from './index';
import type { HttpHooks, HttpLimitOptions } from './http';
export {
  apiKey,
  compose,
  credential,
  documentOf,
  firstOf,
  header,
  ip,
  route,
  tenant,
  user,
} from './http';

export interface RateLimitMiddleware {
  (req: any, res: any, next: (err?: unknown) => void): void;
  /** the policy it runs (its metrics: policy.metrics(), or registerPolylimit) */
  readonly policy: HttpPolicy | LivePolicy;
}

/** Middleware over a policy document's policy: the options are the application's hooks. */
export declare function rateLimit(policy: HttpPolicy | LivePolicy, hooks?: HttpHooks<any>): RateLimitMiddleware;
/** Middleware from options: 429 with the headers on a denial, 503 when Redis cannot decide, 400/401 without a key unless onMissingKey: 'skip'. */
export declare function rateLimit(limiter: Limiter | null, options?: HttpLimitOptions<any>): RateLimitMiddleware;

/** A Store for express-rate-limit, counting in polylimit (under express-rate-limit's own keys). */
export declare class PolylimitStore {
  constructor(limiter: Limiter);
  readonly limiter: Limiter;
  readonly localKeys: false;
  init(): void;
  increment(key: string): Promise<{ totalHits: number; resetTime: Date }>;
  get(key: string): Promise<{ totalHits: number; resetTime: Date }>;
  decrement(key: string): Promise<void>;
  resetKey(key: string): Promise<void>;
}
