// polylimit/fastify: the plugin (an onRequest hook of the whole app).
import type { Limiter } from './index';
import type { HttpLimitOptions } from './http';

declare function polylimitPlugin(
  fastify: any,
  options: HttpLimitOptions<any> & { limiter?: Limiter | null },
  done: (err?: Error) => void,
): void;
declare namespace polylimitPlugin {
  const apiKey: typeof import('./http').apiKey;
  const credential: typeof import('./http').credential;
}
export = polylimitPlugin;
