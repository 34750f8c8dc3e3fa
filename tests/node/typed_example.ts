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

// A policy document in code: docs/examples/policy.toml, typed.
import { definePolicy, type PolicyDocument, type PolicyRule } from '../../bindings/node';
const login: PolicyRule = {
  name: 'login',
  paths: ['/login'],
  methods: ['POST'],
  key: 'ip',
  limit: '5/minute',
  count_when: 'failures',
};
export const shop = definePolicy({
  version: 1,
  prefix: 'shop',
  trusted_proxies: ['10.0.0.0/8'],
  default_plan: 'free',
  plans: {
    free: { api: '10/minute', search: '2/second' },
    pro: { api: '100/minute', search: '10/second' },
    enterprise: { api: '1000/minute; 50/second', search: '100/second' },
  },
  tenants: { acme: 'pro', initech: 'enterprise' },
  deny: { ips: ['203.0.113.0/24'] },
  rules: [
    { name: 'health', paths: ['/healthz'], limit: 'none' },
    login,
    { name: 'search', paths: ['/api/search*'], key: 'tenant', limit: 'plan', algorithm: 'gcra' },
    { name: 'api', paths: ['/api/*'], key: 'tenant', limit: 'plan' },
  ],
});
export const shopLive = docClient.livePolicy(shop, { resolver: async () => 'pro' });
shopLive.reload(definePolicy({ ...shop, resolver: { timeout_ms: 20 } }));
export const every: PolicyDocument = {
  api_key_header: 'X-Key',
  ipv4_prefix: 24,
  ipv6_prefix: 56,
  exempt: ['/metrics'],
  allow: { ips: ['192.0.2.1'], api_keys: ['sha256:00'], users: ['root'], tenants: ['ops'] },
  send_headers: false,
  on_error: 'allow',
  rules: [
    { name: 'app', routes: ['/users/:id'], key: ['api_key:X-Key+route', 'user', 'ip'], limiter: 0, credential: true },
    { name: 'cost', key: 'header:X-Org+tenant', limit: '10/s', cost: { header: 'X-Cost', default: 1, max: 100 } },
    { name: 'refund', limit: '5/s', cost: 2, on_missing_key: 'skip', count_when: [401, '5xx', '400-403'] },
    { name: 'open', limiter: null },
  ],
};
export const fixedShop: HttpPolicy = policyFromDocument(every, [docClient.limiter('5/s')], { client: docClient });
// What the types refuse (the core would too).
// @ts-expect-error default_plan names no plan
definePolicy({ plans: { free: { api: '1/s' } }, default_plan: 'gold', rules: [] });
// @ts-expect-error a tenant on a plan the document does not have
definePolicy({ plans: { free: { api: '1/s' } }, default_plan: 'free', tenants: { acme: 'gold' }, rules: [] });
// @ts-expect-error an unknown key part
definePolicy({ rules: [{ name: 'r', key: 'ipv7', limit: '1/s' }] });
// @ts-expect-error a rule with a limit and a limiter
definePolicy({ rules: [{ name: 'r', limit: '1/s', limiter: 0 }] });
// @ts-expect-error count_when is a list of statuses, classes and ranges
definePolicy({ rules: [{ name: 'r', limit: '1/s', count_when: ['teapot'] }] });
// @ts-expect-error an unknown field
definePolicy({ rules: [], default_plna: 'free' });
// The options' document (documentOf) is a PolicyDocument too.
import { documentOf } from '../../bindings/node/lib/http';
const translated = documentOf(docClient.limiter('5/s'), { key: 'user+route' });
export const fromOptions: HttpPolicy = policyFromDocument(translated.document, translated.limiters);
