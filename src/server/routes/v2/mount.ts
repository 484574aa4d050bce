/**
 * Mounts the v2 API under /v2: every operation of the v2 route table (src/contract/v2/routes.ts),
 * `Authorization: Bearer <token>` (a v1 token is a v2 key), the query and body checked by the
 * table's schemas, the permission hook, Trunk's error envelope for every error (also an unknown
 * /v2 path) and `X-Request-Id` on every answer; and /v2/openapi.json.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { buildV2OpenApiDocument } from '../../../contract/v2/openapi.js';
import {
  v2Routes,
  type V2OperationId,
  type V2Permission,
  type V2RouteDef,
} from '../../../contract/v2/routes.js';
import { V2_PREFIX } from '../../../contract/v2/schemas.js';
import type { TokenAuth } from '../../access/auth.js';
import type { Links } from '../../links.js';
import type { QueueService } from '../../queue/service.js';
import { describeRequestError } from '../../http.js';
import { V2Context } from './context.js';
import { envelope, V2Error, v2AnswerOf, validationFailed } from './errors.js';
import { pullRequestHandlers } from './pull-requests.js';
import { queueHandlers } from './queues.js';
import { repositoryHandlers } from './repositories.js';
import { runHandlers } from './runs.js';
import { targetAndMetricHandlers } from './targets.js';
import { V2Text, type V2Handler } from './types.js';

const JSON_TYPE = 'application/json; charset=utf-8';

export interface V2Options {
  service: QueueService;
  auth: TokenAuth;
  links: Links;
  version: string;
  now?: () => number;
  /**
   * The permission check: whether the request's token holds `permission`. Called for each
   * permission an operation needs (its `permission`, and `bodyPermissions` for the body fields
   * sent); false answers 403 INSUFFICIENT_PERMISSIONS. Default: every token may do everything.
   */
  permits?: (request: FastifyRequest, permission: V2Permission) => boolean | Promise<boolean>;
  /** Notes why a request was refused (the server's request log line). */
  onRefusal?: (request: FastifyRequest, message: string) => void;
  /** Notes an unexpected error or an outage (the server's log and health). */
  onError?: (request: FastifyRequest, error: unknown, kind: string | undefined) => void;
}

/** The permissions a request needs: the operation's, and those of the body fields it sends. */
export function permissionsOf(def: V2RouteDef, body: Record<string, unknown>): V2Permission[] {
  const out = new Set<V2Permission>();
  if (def.permission) out.add(def.permission);
  for (const [field, permission] of Object.entries(def.bodyPermissions ?? {})) {
    const value = body[field];
    if (value === undefined) continue;
    // Batching allowed and direct off are what a submission does anyway: no permission needed.
    if ((field === 'allowBatching' && value === true) || (field === 'direct' && value === false)) continue;
    out.add(permission);
  }
  return [...out];
}

function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

function checked(schema: z.ZodType | null, raw: unknown, where: string): Record<string, unknown> {
  if (!schema) return {};
  const parsed = schema.safeParse(raw ?? {}, { reportInput: true });
  if (!parsed.success) throw validationFailed(`${where}: ${describeRequestError(parsed.error)}`);
  return (parsed.data ?? {}) as Record<string, unknown>;
}

/** Valid query strings as parsed, per operation: a list read again and again is parsed once. */
const parsedQueries = new Map<V2RouteDef, Map<string, Record<string, unknown>>>();
const PARSED_QUERIES_MAX = 256;

/** The query string of a request's URL ('' without one). */
function rawQueryOf(request: FastifyRequest): string {
  const at = request.url.indexOf('?');
  return at < 0 ? '' : request.url.slice(at + 1);
}

function checkedQuery(def: V2RouteDef, request: FastifyRequest, raw: string): Record<string, unknown> {
  if (!def.query) return {};
  let seen = parsedQueries.get(def);
  if (!seen) parsedQueries.set(def, (seen = new Map()));
  let query = seen.get(raw);
  if (!query) {
    query = checked(def.query, request.query, 'query');
    if (seen.size >= PARSED_QUERIES_MAX) seen.clear();
    seen.set(raw, query);
  }
  return query;
}

export async function mountV2(app: FastifyInstance, options: V2Options): Promise<void> {
  const ctx = new V2Context(options.service, options.links, options.now);
  const handlers: Partial<Record<V2OperationId, V2Handler>> = {
    ...queueHandlers(ctx),
    ...pullRequestHandlers(ctx),
    ...repositoryHandlers(ctx),
    ...runHandlers(ctx),
    ...targetAndMetricHandlers(ctx),
  };
  const { auth } = options;

  const authenticate = async (request: FastifyRequest): Promise<void> => {
    const token = bearerOf(request);
    if (!token)
      throw new V2Error(
        401,
        'AUTHENTICATION_REQUIRED',
        'Authorization: required (send `Authorization: Bearer <your API token>`)',
      );
    await auth.fresh();
    const identity = auth.identify(token);
    if (!identity) throw new V2Error(401, 'INVALID_TOKEN', 'Authorization: unknown token');
    request.org = identity.org;
    request.actor = identity.actor;
    request.permissions = identity.permissions;
  };

  const refuse = async (request: FastifyRequest, permission: V2Permission): Promise<void> => {
    if (options.permits && !(await options.permits(request, permission)))
      throw new V2Error(403, 'INSUFFICIENT_PERMISSIONS', `this token lacks the "${permission}" permission`);
  };

  await app.register(
    async (scope) => {
      scope.addHook('onSend', (request, reply, payload, done) => {
        reply.header('x-request-id', request.id);
        done(null, payload);
      });
      scope.setErrorHandler((error: unknown, request, reply) => {
        const answer = v2AnswerOf(error, request.id);
        if (answer.kind) options.onError?.(request, error, answer.kind);
        options.onRefusal?.(request, answer.message);
        return reply
          .code(answer.status)
          .headers(answer.headers)
          .type(JSON_TYPE)
          .send(envelope(answer.code, answer.message));
      });
      scope.setNotFoundHandler((request, reply) => {
        const path = request.url.split('?')[0];
        options.onRefusal?.(request, 'no such endpoint');
        return reply
          .code(404)
          .type(JSON_TYPE)
          .send(envelope('NOT_FOUND', `no such endpoint: ${request.method} ${path}`));
      });

      let openApi: string | undefined;
      scope.get('/openapi.json', (_request, reply) =>
        reply.type(JSON_TYPE).send((openApi ??= JSON.stringify(buildV2OpenApiDocument(options.version)))),
      );

      for (const [op, def] of Object.entries(v2Routes) as [V2OperationId, V2RouteDef][]) {
        const handler = handlers[op];
        if (!handler) continue;
        scope.route({
          method: def.method,
          url: def.path,
          handler: async (request: FastifyRequest, reply: FastifyReply) => {
            await authenticate(request);
            // The operation's own permission before the input is read (a read-only key learns
            // nothing from validation errors), then what the body's fields ask for.
            if (def.permission) await refuse(request, def.permission);
            const rawQuery = rawQueryOf(request);
            const query = checkedQuery(def, request, rawQuery);
            const body = checked(def.body, request.body, 'body');
            // Without a body the operation's own permission is all it needs (checked above).
            if (def.body)
              for (const permission of permissionsOf(def, body)) await refuse(request, permission);
            const id = (request.params as { id?: string }).id ?? '';
            const result = await handler({ org: request.org, id, query, rawQuery, body, request, reply });
            reply.code(def.status);
            if (result === undefined) return reply.send();
            if (result instanceof V2Text) return reply.type(result.contentType).send(result.body);
            return reply.type(JSON_TYPE).send(JSON.stringify(result));
          },
        });
      }
    },
    { prefix: V2_PREFIX },
  );
}
