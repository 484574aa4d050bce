/**
 * The API server: buildServer makes the Fastify app of the v1 API (the listener, the contract's
 * routes, auth, errors through the one map of errors.ts, 404/405, the dashboard, the driver's
 * routes) over the services composeServer (compose.ts) wires.
 */
import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { buildOpenApiDocument } from '../contract/openapi.js';
import { ERROR_CODE_HEADER, type ErrorCode } from '../contract/errors.js';
import {
  API_PREFIX,
  BODY_LIMIT_BYTES,
  routes,
  type OperationName,
  type RouteDef,
} from '../contract/index.js';
import type { TokenAuth } from './access/auth.js';
import { composeServer, type ComposeDeps } from './compose.js';
import { badRequest, httpAnswerOf, oneLine, unauthorized } from './errors.js';
import {
  answerClientError,
  describeRequestError,
  lazySchemaCompilers,
  mountDriverRoute,
  nulPath,
  parseJsonBody,
  requestSchema,
  sendRaw,
} from './http.js';
import { flakyHandlers } from './routes/flaky.js';
import { repoOwnerProblem } from './routes/repo-bounds.js';
import { doctorHandlers } from './routes/doctor.js';
import { mqHandlers } from './routes/mq.js';
import { hasPermission, requirePermission } from './access/permissions.js';
import { mountV2 } from './routes/v2/mount.js';
import { RawAnswer, type Handler, type Handlers } from './routes/types.js';
import type { QueueService } from './queue/service.js';
import { lazyRequestLogger } from './request-logger.js';
import { builtWebRoot, serveDashboard } from './routes/web.js';
import { webhookHandlers } from './routes/webhooks.js';

export interface ServerDeps extends ComposeDeps {
  /** Reported in the OpenAPI document. */
  version?: string;
  /** Server log level; default `error`, so only unexpected errors are logged. At `info`: one line per request and per queue event. */
  logLevel?: LogLevel;
  /** Where the JSON log lines go (default stderr); `railyard serve` passes stdout or a pino-pretty stream. */
  logStream?: NodeJS.WritableStream;
  /** HTTP timeouts (ms); unset ones are DEFAULT_TIMEOUTS. */
  timeouts?: Partial<ServerTimeouts>;
  /** The built web dashboard served at `/` (default: build/web next to the built server; `false`: none). */
  webRoot?: string | false;
}

/** How long the server waits on a client (ms). */
export interface ServerTimeouts {
  /** The whole request (headers and body) must arrive within this. */
  request: number;
  /** The headers must arrive within this. */
  headers: number;
  /** An idle keep-alive connection is closed after this. */
  keepAlive: number;
  /** A socket with no traffic at all is closed after this. */
  connection: number;
  /** How often Node checks sockets against `request` and `headers` (its default is 30 s). */
  checkInterval: number;
}

export const DEFAULT_TIMEOUTS: ServerTimeouts = {
  request: 60_000,
  headers: 30_000,
  keepAlive: 72_000,
  connection: 120_000,
  checkInterval: 5_000,
};

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Railyard {
  service: QueueService;
  auth: TokenAuth;
}

declare module 'fastify' {
  interface FastifyInstance {
    railyard: Railyard;
  }
  interface FastifyRequest {
    /** The organisation of the request's token ('' on routes without auth). */
    org: string;
    /** Who the request's token speaks for: its label, or `token <id>` ('' on routes without auth). */
    actor: string;
  }
}

const JSON_TYPE = 'application/json; charset=utf-8';
const TEXT_TYPE = 'text/plain; charset=utf-8';

/**
 * The Fastify app of the v1 API: every route of the contract table under /v1, auth by
 * `x-api-token`, organisation scoping, the 20 MiB limit and plain-text one-line errors.
 * Call `app.close()` to stop (it waits for in-flight commands); closing the store is the caller's.
 */
export async function buildServer(deps: ServerDeps): Promise<FastifyInstance> {
  const now = deps.now ?? Date.now;
  const logLevel = deps.logLevel ?? 'error';
  const timeouts = { ...DEFAULT_TIMEOUTS, ...deps.timeouts };
  const app = Fastify({
    bodyLimit: BODY_LIMIT_BYTES,
    requestTimeout: timeouts.request,
    keepAliveTimeout: timeouts.keepAlive,
    connectionTimeout: timeouts.connection,
    http: { headersTimeout: timeouts.headers, connectionsCheckingInterval: timeouts.checkInterval },
    // Errors Node's HTTP parser raises (bad request line, headers too large, timeouts) and the
    // router's own are answered in one line of text/plain like every other error, then closed.
    clientErrorHandler: answerClientError,
    frameworkErrors: (error, _request, reply) => {
      void reply
        .code(400 as never)
        .header('connection', 'close')
        .type(TEXT_TYPE)
        .send(oneLine(error.message) as never);
    },
    logger: logLevel === 'silent' ? false : { level: logLevel, stream: deps.logStream ?? process.stderr },
    // One line per request, written when it is answered (onResponse below), instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // request.log: its pino child (the request id bound) made only if the request logs.
    childLoggerFactory: lazyRequestLogger,
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    // No route declares a Fastify schema: its ajv and serializer compilers load only if one ever does.
    schemaController: { compilersFactory: lazySchemaCompilers },
  });

  const parts = await composeServer(deps, { log: app.log, address: () => app.server.address() });
  const { service, auth, health, links } = parts;
  app.decorate('railyard', { service, auth });
  app.decorateRequest('org', '');
  app.decorateRequest('actor', '');
  app.decorateRequest('permissions', null);
  // Shutting down: answers still in flight close their connection, so close() need not wait
  // for keep-alive timeouts; queued commands finish before the caller closes the store.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    // An answer sent before the body was read in full (a 401, a 413, ...): the connection closes
    // behind it, so a client that goes on sending cannot hold the socket.
    if (closing || !request.raw.complete) reply.header('connection', 'close');
    done(null, payload);
  });
  // The request line: never headers (the token) nor the body; a 4xx says why, a 5xx was logged with its stack.
  const refusals = new WeakMap<FastifyRequest, string>();
  const logsRequests = logLevel === 'info' || logLevel === 'debug' || logLevel === 'trace';
  app.addHook('onResponse', (request, reply, done) => {
    // An answer sent before the body was read (an early error): close the socket after it.
    if (!request.raw.complete) request.raw.socket?.destroySoon();
    // Below `info` (the default) nothing is written: the line is not even put together.
    if (!logsRequests) return done();
    const error = refusals.get(request);
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? request.url.split('?')[0],
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 10) / 10,
        ...(request.org ? { org: request.org } : {}),
        ...(error === undefined ? {} : { error }),
      },
      'request',
    );
    done();
  });
  app.addHook('onClose', () => parts.close());
  await parts.start();

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, parseJsonBody);
  // The same parser again under the type clients send: Fastify caches the parser it finds for an
  // exact type, but re-parses the Content-Type header on every request that falls through to '*'.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJsonBody);

  app.setErrorHandler((error: unknown, request, reply) => {
    // The one map from what was thrown to the answer (errors.ts); here only what the server notes of it.
    const answer = httpAnswerOf(error, request.id, request.routeOptions.bodyLimit);
    if (answer.kind === 'unavailable') {
      health.markDown('the database is unreachable');
      request.log.warn({ err: error, reqId: request.id }, 'database unavailable');
    } else if (answer.kind === 'busy') request.log.warn({ err: error, reqId: request.id }, 'database busy');
    else if (answer.kind === 'descriptors')
      request.log.warn({ err: error, reqId: request.id }, 'out of file descriptors');
    else if (answer.kind === 'unexpected') request.log.error({ err: error }, 'unexpected error');
    reply.headers(answer.headers);
    refusals.set(request, oneLine(answer.message));
    return reply
      .code(answer.status)
      .header(ERROR_CODE_HEADER, answer.code)
      .type(TEXT_TYPE)
      .send(oneLine(answer.message));
  });

  // The driver's own routes (webhooks) after the error handler: a scope registered before it
  // keeps Fastify's default one, which answered the webhook's 413 in JSON.
  if (deps.workers) for (const route of deps.driver.events?.routes ?? []) await mountDriverRoute(app, route);

  const authHook = (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const check = () => {
      const header = request.headers['x-api-token'];
      const token = Array.isArray(header) ? header[0] : header;
      const identity = auth.identify(token);
      if (!identity) {
        done(
          unauthorized(
            token
              ? 'x-api-token: unknown token'
              : 'x-api-token: required (send your API token in this header)',
          ),
        );
        return;
      }
      request.org = identity.org;
      request.actor = identity.actor;
      request.permissions = identity.permissions;
      done();
    };
    // A token created or revoked by `railyard token` counts from the next request.
    auth.fresh().then(check, done);
  };

  const handlers: Handlers = {
    ...mqHandlers(
      service,
      now,
      deps.workers ? deps.driver.ci.logPath?.bind(deps.driver.ci) : undefined,
      deps.workers ? deps.driver.ci.progress?.bind(deps.driver.ci) : undefined,
      links,
    ),
    ...doctorHandlers(service, deps.store, now, deps.driver.doctor),
    ...flakyHandlers(parts.flaky, parts.pageTokens),
    ...webhookHandlers(parts.webhooks),
    status: (_input, { reply }) => {
      const { httpStatus, body } = health.status();
      // A load balancer takes the replica out on the 503; the body keeps Trunk's shape (impacted, red).
      if (httpStatus !== 200)
        reply
          .code(httpStatus)
          .header('retry-after', '5')
          .header(ERROR_CODE_HEADER, 'unavailable' satisfies ErrorCode);
      return body;
    },
  };

  const allowed = new Map<string, string>();
  for (const [op, def] of Object.entries(routes) as [OperationName, RouteDef][]) {
    const handler = handlers[op] as Handler<OperationName>;
    const url = API_PREFIX + def.path;
    allowed.set(url, def.method === 'GET' ? 'GET, HEAD' : def.method);
    app.route({
      method: def.method,
      url,
      onRequest: def.auth ? authHook : undefined,
      handler: async (request, reply) => {
        let input: unknown;
        const schema = requestSchema(op);
        if (schema) {
          const raw = def.method === 'GET' ? request.query : (request.body ?? {});
          // Before the schema: its bound is the widest any forge allows, this one the forge's own.
          const tooLong = repoOwnerProblem(deps.driver.source, raw);
          if (tooLong !== null) throw badRequest(tooLong);
          const parsed = schema.safeParse(raw, { reportInput: true });
          if (!parsed.success) throw badRequest(describeRequestError(parsed.error));
          const nul = nulPath(parsed.data);
          if (nul !== null) throw badRequest(`${nul}: must not contain a NUL character (U+0000)`);
          input = parsed.data;
        }
        // A write the token may not make is refused before anything is read or changed.
        if (def.permission) requirePermission(request, def.permission, op);
        const result = await handler(input as never, {
          org: request.org,
          actor: request.actor,
          request,
          reply,
        });
        if (result instanceof RawAnswer) return sendRaw(request, reply, result);
        return reply.type(JSON_TYPE).send(JSON.stringify(result));
      },
    });
  }

  const openApiUrl = `${API_PREFIX}/openapi.json`;
  // Built on its first request (~20 ms of CPU that most servers, and every test server, never need).
  let openApi: string | undefined;
  allowed.set(openApiUrl, 'GET, HEAD');
  app.get(openApiUrl, (_request, reply) =>
    reply.type(JSON_TYPE).send((openApi ??= JSON.stringify(buildOpenApiDocument(deps.version ?? '0.0.0')))),
  );

  // The v2 API (Trunk's v2 description) over the same queue service: its own auth, envelope and 404s.
  await mountV2(app, {
    service,
    auth,
    // Scoped tokens: the same permissions as on /v1 (permissions.ts), refused in v2's envelope.
    permits: (request, permission) => hasPermission(request, permission),
    links,
    version: deps.version ?? '0.0.0',
    now,
    onRefusal: (request, message) => refusals.set(request, oneLine(message)),
    onError: (request, error, kind) => {
      if (kind === 'unavailable') health.markDown('the database is unreachable');
      if (kind === 'unexpected') request.log.error({ err: error }, 'unexpected error');
      else
        request.log.warn(
          { err: error, reqId: request.id },
          kind === 'descriptors' ? 'out of file descriptors' : `database ${kind}`,
        );
    },
  });

  serveDashboard(app, deps.webRoot === false ? undefined : (deps.webRoot ?? builtWebRoot()));

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0];
    const allow = allowed.get(path);
    if (allow) {
      refusals.set(request, `method ${request.method} not allowed`);
      return reply
        .code(405)
        .header('allow', allow)
        .header(ERROR_CODE_HEADER, 'method_not_allowed' satisfies ErrorCode)
        .type(TEXT_TYPE)
        .send(oneLine(`method ${request.method} is not allowed on ${path}: use ${allow.split(',')[0]}`));
    }
    refusals.set(request, 'no such endpoint');
    return reply
      .code(404)
      .header(ERROR_CODE_HEADER, 'unknown_endpoint' satisfies ErrorCode)
      .type(TEXT_TYPE)
      .send(oneLine(`no such endpoint: ${request.method} ${path}`));
  });

  return app;
}
