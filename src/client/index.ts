/** The v1 API client over the whole route table; the calling itself is in client/core.ts. */
import { routes } from '../contract/routes.js';
import { createClientFor, type Client, type ClientOptions } from './core.js';

export * from './core.js';

export function createClient(options: ClientOptions): Client {
  return createClientFor(routes, options);
}
