// Types of the polylimit package (lib/index.js). The error classes and the
// option names come from the vocabulary (lib/vocabulary.d.ts, generated).
import type { Algorithm, ClockSource, FailurePolicy } from './vocabulary';

export * from './vocabulary';

/** A key: a string (its UTF-8 bytes) or bytes. */
export type Key = string | Uint8Array;

export interface ClientOptions {
  /** most connections per Redis node */
  poolSize?: number;
  connectTimeoutMs?: number;
  /** one deadline for a call's send and reply */
  commandTimeoutMs?: number;
  acquireTimeoutMs?: number;
  /** labels the client's metrics */
  name?: string;
  /**
   * false: every check is its own script call. Default true: checks of one
   * key that arrive while a call of that key is in flight go out together as
   * one call, decided exactly as separate calls would be (docs/limiter.md,
   * "Hot keys: coalescing").
   */
  coalesce?: boolean;
  /** TLS URLs (rediss://): refused on a URL without TLS */
  tls?: {
    /** PEM bundle of trusted CAs; none: the system's */
    caFile?: string;
    caDir?: string;
    /** client certificate and key (PEM), for servers that require one */
    certFile?: string;
    keyFile?: string;
    /** SNI and the name the certificate must match; none: the URL's host */
    serverName?: string;
    /** no verification at all: tests only */
    insecure?: boolean;
  };
}

export interface LimiterOptions {
  algorithm?: Algorithm;
  prefix?: string;
  clock?: ClockSource;
  /** keys remembered by the local deny cache; 0: off */
  denyCache?: number;
  failurePolicy?: FailurePolicy;
  /** punitive block after a denial, milliseconds */
  block?: number;
  shadow?: boolean;
  breaker?: { failures?: number; cooldownMs?: number };
  durable?: { replicas?: number; timeoutMs?: number; aof?: boolean };
  /**
   * leases (docs/limiter.md, "Leases"): a check takes `units` units of the
   * key from Redis and hands them out in this process without a round trip,
   * for `ms` milliseconds (default 100; at most the window); unused units go
   * back when the lease ends or the client closes. 0 units: off.
   */
  lease?: { units?: number; ms?: number };
}

export declare class Decision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  readonly retryAfterMs: number;
  readonly resetAfterMs: number;
  readonly granted: number;
  readonly degraded: boolean;
  readonly cached: boolean;
  readonly shadowed: boolean;
  /** Retry-After (on a denial) and the RateLimit-* headers, name to value. */
  headers(): Record<string, string>;
}

export declare class Limiter {
  check(key: Key, cost?: number): Promise<Decision>;
  peek(key: Key): Promise<Decision>;
  refund(key: Key, units: number): Promise<Decision>;
  reset(key: Key): Promise<void>;
  acquire(key: Key, cost?: number, timeoutMs?: number): Promise<Decision>;
  checkAtMost(key: Key, maxCost: number): Promise<Decision>;
  checkLimit(key: Key, cost: number, limit: number, windowMs: number): Promise<Decision>;
  /** Per key, its Decision or the error that key got. */
  checkMany(keys: readonly Key[], cost?: number): Promise<Array<Decision | import('./vocabulary').PolylimitError>>;
}

export declare class Client {
  constructor(url?: string, options?: ClientOptions);
  constructor(options: ClientOptions);
  limiter(spec: string, options?: LimiterOptions): Limiter;
  /** A live HTTP policy from a document (TOML or JSON text, or an object). */
  livePolicy(document: string | object, options?: LivePolicyOptions): LivePolicy;
  /** A live HTTP policy from a file, watched when options.watchMs > 0. */
  openPolicy(path: string, options?: LivePolicyOptions & { watchMs?: number }): LivePolicy;
  /** The client's counters, named as in polylimit_stats. */
  stats(): Record<string, number>;
  /** The counters in the Prometheus text format. */
  metrics(): string;
  /**
   * Later calls throw ClosedError at once; calls in flight settle. Resolves
   * once leases are given back and the connections released (off the event loop).
   */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A request as the HTTP policy takes it (docs/integrations/contract.md). */
export interface HttpRequest {
  /** 'GET' if left out */
  method?: string;
  /** the decoded path (as the framework routes on it), without the query; '/' if left out */
  path?: string;
  /** the framework's route template ('/users/:id'), when known */
  route?: string;
  /** the socket's peer address ('10.0.0.1', '[::1]:80') */
  peer?: string;
  /** the request's headers (names in any case; an array is a repeated header), or a lookup by lower-case name */
  headers?: Record<string, string | string[] | undefined> | ((name: string) => string | string[] | undefined);
  /** the authenticated user's id; absent: anonymous */
  user?: string;
  /** the tenant's id */
  tenant?: string;
  /** the application's key, for rules keyed by 'app' (asked for by a 'need_app_key' step); '' when none */
  appKey?: Key;
  /** this request's cost, instead of the rule's */
  cost?: number;
  /** the tenant's plan, as a resolver answered a 'need_plan' step ('' = the tenants table or the default plan) */
  plan?: string;
}

/** What to do with a request. */
export interface HttpStep {
  readonly action: 'proceed' | 'check' | 'respond' | 'need_app_key' | 'need_plan';
  /** the rule that matched, by name, or null */
  readonly rule: string | null;
  readonly ruleIndex: number;
  /** check: the limiter to check on (limiterOf(step)) */
  readonly limiterIndex: number;
  /** respond: 400, 401 or 403 */
  readonly status: number;
  /** check: the key and the units to check */
  readonly key: Key;
  readonly cost: number;
}

/** The response to give: status 0 means the request goes on (with the headers). */
export interface HttpAnswer {
  status: number;
  body: string;
  /** the rate-limit headers in order, and Content-Type when there is a body */
  headers: Array<[string, string]>;
}

/** The fields of a Decision the policy reads. */
export type DecisionFields = Pick<Decision, 'allowed' | 'limit' | 'remaining' | 'retryAfterMs' | 'resetAfterMs'> &
  Partial<Pick<Decision, 'granted' | 'degraded' | 'cached' | 'shadowed'>>;

/** The HTTP request policy: a document and the limiters its rules name by index. */
export declare class HttpPolicy {
  /** the request headers the policy reads, lower case */
  readonly headerNames: readonly string[];
  readonly limiters: Limiter[];
  readonly rules: ReadonlyArray<{ readonly name: string; readonly limiter: Limiter | null }>;
  /** Synchronous, no I/O. */
  prepare(request: HttpRequest): HttpStep;
  /** The limiter a 'check' step is checked on: limiterOf(step).check(step.key, step.cost). */
  limiterOf(step: HttpStep): Limiter | null;
  /** false: the step's rule counts every response (refundDue is always false). */
  mayRefund(step: HttpStep): boolean;
  /** The response to a 'respond' step, or to a 'check' with its decision (null: the check failed). */
  answer(step: HttpStep, decision?: DecisionFields | null): HttpAnswer;
  /** After the response: whether to refund step.cost on limiterOf(step) (count_when). */
  refundDue(step: HttpStep, decision: DecisionFields, status: number): boolean;
  /** polylimit_http_requests_total{rule,outcome}, Prometheus text. */
  metrics(): string;
  /** the plan resolver's deadline in milliseconds (0: the document has no resolver) */
  readonly resolverTimeoutMs: number;
}

export interface LivePolicyOptions {
  /** the application's limiters, named by index by rules with `limiter` */
  limiters?: Limiter[];
  /** the plan of a tenant the document's table does not name (a [resolver] section); its answers are cached, a failure or a late answer gives the default plan */
  resolver?: (tenant: string) => string | Promise<string>;
}

/** A policy replaced while requests run: reload(), reloadFile(), or a watched file. */
export declare class LivePolicy {
  constructor(client: Client, document: string | object, options?: LivePolicyOptions);
  static open(client: Client, path: string, options?: LivePolicyOptions & { watchMs?: number }): LivePolicy;
  /** The policy for one request (the same object until the next reload). */
  current(): HttpPolicy;
  /** Replaces the policy, or throws InvalidArgumentError naming the line (the old one stays). */
  reload(document: string | object): void;
  /** Reads the file again (a policy opened from a file). */
  reloadFile(): void;
  /** 1 after creation, +1 per accepted reload */
  readonly generation: number;
  /** the last refused reload's message ('' since an accepted one) */
  readonly lastError: string;
  readonly resolver: ((tenant: string) => string | Promise<string>) | null;
  /** The plan for a 'need_plan' step: cached, else the resolver's within timeoutMs, else '' (never rejects). */
  resolvePlan(tenant: string, timeoutMs: number): Promise<string>;
  /** The current policy's per-rule counters and polylimit_http_policy_reloads_total. */
  metrics(): string;
  /** Stops watching the file; requests under way finish on the policy they took. */
  close(): void;
}

/**
 * The policy of a JSON document (text, or an object) whose rules name
 * `limiters` by index. An invalid document throws an InvalidArgumentError
 * naming the line and the field.
 */
export declare function policyFromDocument(
  document: string | object,
  limiters?: Limiter[],
  options?: { client?: Client },
): HttpPolicy;

/** Several (named) clients on one Prometheus page. */
export declare function prometheus(...clients: Client[]): string;

export declare const algorithms: Algorithm[];
export declare const failurePolicies: FailurePolicy[];
/** The C library's version string. */
export declare const version: string;
