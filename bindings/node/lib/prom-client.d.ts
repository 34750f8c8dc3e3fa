// polylimit/prom-client: the clients' counters in a prom-client Registry.
import type { Client } from './index';

/** Registers one metric per family of the clients' Prometheus export. */
export declare function registerPolylimit(
  registry: { registerMetric(metric: any): void },
  ...clients: Client[]
): Array<{ name: string; help: string; type: string }>;
