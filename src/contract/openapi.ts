/** The OpenAPI document, generated from the route table (extensions marked). */
import { z } from 'zod';
import { ERROR_CODE_HEADER, ERROR_CODES } from './errors.js';
import { API_PREFIX, routes, type RouteDef } from './routes.js';
import { webhooksDocument } from './webhook-events.js';

function schemaOf(type: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _ignored, ...schema } = z.toJSONSchema(type, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return schema;
}

/** An error answer: one line of text, and its stable code in a header (./errors.ts). */
const plainTextError = (description: string, status: number) => {
  const codes = Object.entries(ERROR_CODES).filter(([, c]) => c.status === status);
  return {
    description,
    headers: {
      [ERROR_CODE_HEADER]: {
        description: codes.map(([code, c]) => `${code}: ${c.description}`).join('. '),
        schema: { type: 'string', enum: codes.map(([code]) => code) },
      },
    },
    content: { 'text/plain': { schema: { type: 'string' } } },
  };
};

/** The OpenAPI 3.1 document of the whole API, generated from the route table. */
export function buildOpenApiDocument(version: string, extraRoutes: readonly RouteDef[] = []): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const def of [...Object.values(routes), ...extraRoutes] as RouteDef[]) {
    const operation: Record<string, unknown> = {
      operationId: def.operationId,
      summary: def.summary,
      tags: [def.tag],
      security: def.auth ? [{ ApiKeyAuth: [] }] : [],
      responses: {
        '200': def.response === 'text'
          ? {
              description: 'Prometheus text exposition 0.0.4',
              content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: { type: 'string' } } },
            }
          : { description: 'OK', content: { 'application/json': { schema: schemaOf(def.response, 'output') } } },
        ...(def.request ? { '400': plainTextError('Invalid request: the message names the field', 400) } : {}),
        ...(def.auth ? { '401': plainTextError('Missing or unknown x-api-token', 401) } : {}),
        ...(def.permission
          ? { '403': plainTextError(`INSUFFICIENT_PERMISSIONS: the token lacks the "${def.permission}" permission`, 403) }
          : {}),
        '404': plainTextError('Not found (or belongs to another organisation)', 404),
        '413': plainTextError('Body over 20 MiB', 413),
        '500': plainTextError('Unexpected error', 500),
      },
    };
    if (def.extension) operation['x-railyard-extension'] = true;
    // The token permission the operation needs (null: any token, it only reads).
    operation['x-railyard-permission'] = def.permission;
    if (def.request && def.method === 'POST') {
      operation.requestBody = {
        required: true,
        content: { 'application/json': { schema: schemaOf(def.request, 'input') } },
      };
    } else if (def.request && def.method === 'GET') {
      const schema = schemaOf(def.request, 'input') as { properties?: Record<string, unknown>; required?: string[] };
      operation.parameters = Object.entries(schema.properties ?? {}).map(([name, s]) => ({
        name,
        in: 'query',
        required: schema.required?.includes(name) ?? false,
        schema: s,
      }));
    }
    paths[API_PREFIX + def.path] = { [def.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Railyard API',
      version,
      description:
        'Wire-compatible implementation of the Trunk v1 merge queue and flaky-test API. ' +
        'Operations and webhook events marked x-railyard-extension are Railyard additions.',
    },
    servers: [{ url: API_PREFIX }],
    components: { securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'x-api-token' } } },
    paths,
    // What the server POSTs to webhook endpoints (docs/webhooks.md).
    webhooks: webhooksDocument(),
  };
}
