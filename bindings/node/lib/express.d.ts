// polylimit/express: Express middleware and an express-rate-limit Store.
import type { Limiter } from './index';
import type { HttpLimitOptions } from './http';
export { apiKey, credential } from './http';

/** Middleware: 429 with the library's headers on a denial, 503 when Redis cannot decide, 400 (401 for a credential) without a key unless onMissingKey: 'skip'. */
export declare function rateLimit(
  limiter: Limiter | null,
  options?: HttpLimitOptions<any>,
): (req: any, res: any, next: (err?: unknown) => void) => void;

/** A Store for express-rate-limit, counting in polylimit. */
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
