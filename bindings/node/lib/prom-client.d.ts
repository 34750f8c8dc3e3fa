// polylimit/prom-client: the clients' counters, and HTTP policies', in a prom-client Registry.
import type { Client, HttpPolicy, LivePolicy } from './index';

/** Registers one metric per family of the clients' and policies' Prometheus export. */
export declare function registerPolylimit(
  registry: { registerMetric(metric: any): void },
  ...sources: Array<Client | HttpPolicy | LivePolicy | { readonly policy: HttpPolicy | LivePolicy }>
): Array<{ name: string; help: string; type: string }>;
