// The package as a TypeScript user sees it: checked with tsc --strict by
// tests/node/run.sh (no output is emitted or run).
import { Client, Decision, PolylimitError, TimeoutError, type ErrorCode } from '../../bindings/node';

async function handle(client: Client, user: string): Promise<number> {
  const limiter = client.limiter('100/minute', { algorithm: 'gcra', prefix: 'api', failurePolicy: 'open' });
  try {
    const decision: Decision = await limiter.check(user, 1);
    const headers: Record<string, string> = decision.headers();
    const batch = await limiter.checkMany([user, new Uint8Array([117, 58, 49])]);
    const admitted = batch.filter((d): d is Decision => d instanceof Decision && d.allowed).length;
    return decision.allowed ? 200 + admitted * 0 + Object.keys(headers).length * 0 : 429;
  } catch (e) {
    if (e instanceof TimeoutError && e.retryable) return 503;
    if (e instanceof PolylimitError) {
      const code: ErrorCode = e.code;
      return code === 'ECLOSED' ? 503 : 500;
    }
    throw e;
  }
}

const client = new Client('memory://', { commandTimeoutMs: 200, coalesce: false });
void handle(client, 'user:1').finally(() => client.close());

// The missing-key rule's options and helpers are typed.
import { rateLimit as expressLimit, apiKey, credential } from '../../bindings/node/lib/express';
export const keyed = expressLimit(null, { key: apiKey('X-API-Key'), onMissingKey: 'reject' });
export const skipped = expressLimit(null, {
  key: credential((req: { headers: Record<string, string | undefined> }) => req.headers['x-user'] ?? null),
  onMissingKey: 'skip',
});
