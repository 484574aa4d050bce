/**
 * The v2 description served at /v2/openapi.json: every operation of the v2 route table, its
 * parameters and body as JSON Schema (from the zod schemas), its answer by the name of Trunk's
 * schema it follows. What Railyard adds to Trunk's description is marked `x-railyard`.
 */
import { z } from 'zod';
import { v2Routes, type V2RouteDef } from './routes.js';
import { V2_ERROR_CODES, V2_PREFIX } from './schemas.js';

const TRUNK_SPEC = 'https://github.com/trunk-io/docs2/blob/main/openapi-v2.json';

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

function operation(def: V2RouteDef) {
  const parameters: unknown[] = [];
  if (def.path.includes(':id'))
    parameters.push({ name: 'id', in: 'path', required: true, schema: { type: 'string' } });
  if (def.query) {
    const q = jsonSchema(def.query) as { properties?: Record<string, unknown>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {}))
      parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema });
  }
  const answer =
    def.response === null
      ? { description: def.status === 204 ? 'Done (no body)' : 'Accepted (no body)' }
      : {
          description: `Trunk's ${def.response} (components.schemas of ${TRUNK_SPEC})`,
          content: { 'application/json': { schema: { $ref: `#/components/schemas/${def.response}` } } },
        };
  return {
    operationId: def.operationId,
    summary: def.summary,
    tags: [def.tag],
    parameters,
    ...(def.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(def.body) } } } }
      : {}),
    responses: {
      [String(def.status)]: answer,
      default: {
        description: 'An error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorResponse' } } },
      },
    },
    'x-railyard-permission': def.permission,
    ...(def.extension ? { 'x-railyard': true } : {}),
  };
}

export function buildV2OpenApiDocument(version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const def of Object.values(v2Routes) as V2RouteDef[]) {
    const path = V2_PREFIX + def.path.replace(':id', '{id}');
    (paths[path] ??= {})[def.method.toLowerCase()] = operation(def);
  }
  const schemaNames = new Set(
    (Object.values(v2Routes) as V2RouteDef[]).flatMap((d) => (d.response ? [d.response] : [])),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Railyard merge queue API v2',
      version,
      description: `Railyard's v2 API, after Trunk's published v2 description (${TRUNK_SPEC}): the same paths, bodies, list envelope and error envelope. Answers follow the Trunk schema each operation names; Railyard's additions are marked x-railyard.`,
    },
    security: [{ orgKey: [] }],
    paths,
    components: {
      securitySchemes: {
        orgKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'A Railyard API token (the v1 x-api-token value), as `Authorization: Bearer <token>`',
        },
      },
      schemas: {
        ErrorResponse: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              properties: {
                code: { type: 'string', enum: [...V2_ERROR_CODES] },
                message: { type: 'string' },
              },
            },
          },
        },
        ...Object.fromEntries(
          [...schemaNames].map((name) => [
            name,
            { description: `Trunk's ${name}: see ${TRUNK_SPEC}`, 'x-railyard-trunk-schema': name },
          ]),
        ),
      },
    },
    'x-railyard': { trunkDescription: TRUNK_SPEC },
  };
}
