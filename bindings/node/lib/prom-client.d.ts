// polylimit/prom-client: the clients' counters, and HTTP policies', in a prom-client Registry.
import type { Client, HttpPolicy } from './index';

/** Registers one metric per family of the clients' and policies' Prometheus export. */
export declare function registerPolylimit(
  registry: { registerMetric(metric: any): void },
  ...sources: Array<Client | HttpPolicy | { readonly policy: HttpPolicy }>
): Array<{ name: string; help: string; type: string }>;
