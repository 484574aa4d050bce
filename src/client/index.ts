/** The API client over the whole route table, on v1 (client/core.ts) or v2 (client/v2.ts). */
import { routes } from '../contract/routes.js';
import { createClientFor, type Client, type ClientOptions } from './core.js';

import { createV2ClientFor } from './v2.js';

export * from './core.js';
export { UnsupportedOperationError, V2_OPERATIONS, versionedUrl } from './v2.js';

export const API_VERSIONS = ['v1', 'v2'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

/** A client of `apiVersion` (default v1): the same operations and answers on either API. */
export function createClient(options: ClientOptions & { apiVersion?: ApiVersion }): Client {
  return options.apiVersion === 'v2' ? createV2ClientFor(routes, options) : createClientFor(routes, options);
}
