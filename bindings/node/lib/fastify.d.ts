// polylimit/fastify: the plugin (onRequest and onResponse hooks of the whole app).
import type { HttpPolicy, Limiter, LivePolicy } from './index';
import type { HttpHooks, HttpLimitOptions } from './http';
declare function polylimitPlugin(
  fastify: any,
  options:
    | (HttpLimitOptions<any> & { limiter?: Limiter | null })
    | (HttpHooks<any> & { policy: HttpPolicy | LivePolicy }),
  done: (err?: Error) => void,
): void;
declare namespace polylimitPlugin {
  const documentOf: typeof import('./http').documentOf;
  const ip: typeof import('./http').ip;
  const apiKey: typeof import('./http').apiKey;
  const header: typeof import('./http').header;
  const user: typeof import('./http').user;
  const tenant: typeof import('./http').tenant;
  const route: typeof import('./http').route;
  const compose: typeof import('./http').compose;
  const firstOf: typeof import('./http').firstOf;
  const credential: typeof import('./http').credential;
}
export = polylimitPlugin;
