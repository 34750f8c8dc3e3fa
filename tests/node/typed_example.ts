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

// A policy document and the key helpers, typed.
import { policyFromDocument, type HttpPolicy } from '../../bindings/node';
import { compose, firstOf, route, user } from '../../bindings/node/lib/express';
import { registerPolylimit } from '../../bindings/node/lib/prom-client';
const docClient = new Client('memory://');
const policy: HttpPolicy = policyFromDocument({ rules: [{ name: 'all', limiter: 0 }] }, [docClient.limiter('5/s')]);
const step = policy.prepare({ method: 'GET', path: '/', peer: '127.0.0.1', headers: { 'X-API-Key': 'k' } });
export const answered: number = policy.answer(step, null).status;
export const fromPolicy = expressLimit(policy, { user: (req: { user?: string }) => req.user });
export const keyedBy = expressLimit(docClient.limiter('5/s'), {
  key: firstOf(apiKey(), compose(user(), route()), 'ip'),
  countWhen: [401, '5xx'],
  rules: [{ name: 'account', routes: ['/users/:id'], limiter: null }],
});
export const registered = registerPolylimit({ registerMetric() {} }, docClient, fromPolicy.policy, keyedBy);

// A live policy: a TOML document with its own limits, a plan resolver.
export const live = docClient.openPolicy('policy.toml', { watchMs: 100, resolver: async (t: string) => `plan-${t}` });
export const liveMiddleware = expressLimit(live, {
  tenant: (req: { headers: Record<string, string> }) => req.headers['x-tenant'],
});
export const generation: number = live.generation + live.current().resolverTimeoutMs;
export const liveRegistered = registerPolylimit({ registerMetric() {} }, live, liveMiddleware);
