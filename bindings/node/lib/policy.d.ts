// Types of a policy document written in code (docs/policy.md): the fields
// of the TOML file, by the same names, as an object. The core validates the
// document (rate specs, globs, CIDRs, that a plan has every limit a rule
// takes...) wherever it is given; these types catch what a type can.
import type { Algorithm } from './vocabulary';

/** A rate spec (docs/rate-specs.md): "10/minute", "10/s; 1000/hour", "5/s burst 20" (GCRA). */
export type RateSpec = string;

/** One part of a key (docs/integrations/contract.md, "Keys"). */
export type PolicyKeyPart =
  | 'ip'
  | 'api_key'
  | `api_key:${string}`
  | `header:${string}`
  | 'user'
  | 'tenant'
  | 'route'
  | 'app';

/** A composition of parts joined by "+": "ip", "user+route", "api_key:X-Key+route". */
export type KeyComposition =
  | PolicyKeyPart
  | `${PolicyKeyPart}+${PolicyKeyPart}`
  | `${PolicyKeyPart}+${PolicyKeyPart}+${PolicyKeyPart}`
  | `${PolicyKeyPart}+${PolicyKeyPart}+${PolicyKeyPart}+${PolicyKeyPart}`;

/** A composition, or alternatives: the first whose parts are all present wins. */
export type PolicyKey = KeyComposition | readonly KeyComposition[];

/** A status class ("5xx") or range ("400-403"). */
export type StatusClass = `${1 | 2 | 3 | 4 | 5}xx`;
export type StatusRange = `${number}-${number}`;

/** Which responses keep their units; the others are refunded after the response. */
export type CountWhen = 'all' | 'failures' | 'successes' | readonly (number | StatusClass | StatusRange)[];

/** A cost read from a header: a value not a whole number from 1 to max is answered 400. */
export interface PolicyCost {
  header: string;
  default?: number;
  max?: number;
}

/** Addresses / CIDRs, API keys ("sha256:<hex>" or the key), users, tenants. */
export interface PolicyLists {
  ips?: readonly string[];
  api_keys?: readonly string[];
  users?: readonly string[];
  tenants?: readonly string[];
}

/**
 * A rule's own limit: a rate spec ("10/minute"), "plan" (the plan's limit
 * named like the rule), "plan:<limit>" or "none" (exempt).
 */
export type PolicyLimit = RateSpec | 'plan' | `plan:${string}` | 'none';

interface PolicyRuleFields {
  /** names the rule in RateLimit-Policy and in metrics */
  name: string;
  /** path globs: "*" any run of characters ("/" too), "?" one */
  paths?: readonly string[];
  /** route templates, matched exactly against the framework's */
  routes?: readonly string[];
  methods?: readonly string[];
  /** default "ip" */
  key?: PolicyKey;
  /** a missing key is a missing credential (401) rather than 400 */
  credential?: boolean;
  cost?: number | PolicyCost;
  on_missing_key?: 'reject' | 'skip';
  count_when?: CountWhen;
}

/** A rule: its own limit (`limit`, `algorithm`), or one of the application's limiters by index. */
export type PolicyRule = PolicyRuleFields &
  (
    | { limit: PolicyLimit; algorithm?: Algorithm; limiter?: never }
    | { /** null exempts */ limiter: number | null; limit?: never; algorithm?: never }
  );

/** The application places tenants the document does not name (LivePolicyOptions.resolver). */
export interface PolicyResolver {
  /** default 50 */
  timeout_ms?: number;
  /** default 60000 */
  cache_ttl_ms?: number;
  /** default 10000 */
  cache_size?: number;
}

// Plan names checked where they are used, not inferred from there.
type PlanName<Plan extends string> = [Plan][Plan extends unknown ? 0 : never];

/**
 * A policy document (the file's fields, snake_case as in TOML). `Plan`: the
 * plans' names, inferred by definePolicy from `plans`, so that
 * default_plan and the tenants' plans must name one of them.
 */
export interface PolicyDocument<Plan extends string = string> {
  version?: 1;
  /** Redis keys of the document's limits: <prefix>:<rule>; default "pl" */
  prefix?: string;
  /** addresses / CIDRs whose X-Forwarded-For is believed */
  trusted_proxies?: readonly string[];
  ipv4_prefix?: number;
  ipv6_prefix?: number;
  api_key_header?: string;
  /** path globs never limited */
  exempt?: readonly string[];
  /** answered 403, before anything else */
  deny?: PolicyLists;
  /** go on unchecked (after deny) */
  allow?: PolicyLists;
  send_headers?: boolean;
  on_error?: 'unavailable' | 'allow';
  /** plan -> { limit name -> rate spec } */
  plans?: { [P in Plan]: Record<string, RateSpec> };
  /** required with plans */
  default_plan?: PlanName<Plan>;
  /** tenant -> plan */
  tenants?: Record<string, PlanName<Plan>>;
  resolver?: PolicyResolver;
  rules: readonly PolicyRule[];
}

/**
 * Types a policy document written in code and returns it unchanged; give it
 * to livePolicy, LivePolicy.reload or policyFromDocument (the core validates
 * it there, as it does a file).
 */
export declare function definePolicy<const Plan extends string = never>(
  document: PolicyDocument<Plan>,
): PolicyDocument<Plan>;
