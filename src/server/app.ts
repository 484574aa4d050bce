/**
 * The API server: buildServer makes the Fastify app of the v1 API (the contract's routes, auth,
 * errors, the dashboard, the driver's routes) over the queue, flaky-test and webhook services.
 */
import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { buildOpenApiDocument } from '../contract/openapi.js';
import { ERROR_CODE_HEADER, errorCodeForStatus, type ErrorCode } from '../contract/errors.js';
import {
  API_PREFIX,
  BODY_LIMIT_BYTES,
  routes,
  type OperationName,
  type RouteDef,
} from '../contract/index.js';
import type { ForgeDriver } from '../forge/types.js';
import { isDatabaseBusy, isDatabaseUnavailable, LeaseLostError, type Store } from '../store/index.js';
import { TokenAuth } from './auth.js';
import { HttpError, oneLine } from './errors.js';
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
import { DatabaseHealth, DEFAULT_HEALTH, type HealthOptions } from './health.js';
import { FlakyService } from './flaky.js';
import { serverLinks } from './links.js';
import { flakyHandlers } from './routes/flaky.js';
import { RepoOwners, type OrgRepoPin } from './ownership.js';
import { repoOwnerProblem } from './repo-bounds.js';
import { PageTokens } from './page-tokens.js';
import { builtWorkerFile, reportReaderPool } from './report-reader.js';
import { mqHandlers } from './routes/mq.js';
import { RawAnswer, type Handler, type Handlers } from './routes/types.js';
import { DEFAULT_LIMITS, QueueService, type EffectHandler, type ServerLimits } from './service.js';
import { builtWebRoot, serveDashboard } from './web.js';
import type { QueueWorkers } from './workers.js';
import type { Replicas } from './replicas.js';
import { webhookHandlers } from './routes/webhooks.js';
import { Deliverer, type WebhookOptions } from './webhooks/deliverer.js';
import { DelivererThread, delivererWorkerFile, type DelivererHandle } from './webhooks/deliverer-thread.js';
import { queueEventBuilder } from './webhooks/events.js';
import { WebhookService } from './webhooks/service.js';

export interface ServerDeps {
  store: Store;
  /** The forge driver (src/forge/registry.ts): PR facts for the API; with `workers`, everything else. */
  driver: ForgeDriver;
  /** Reported in the OpenAPI document. */
  version?: string;
  /** Server log level; default `error`, so only unexpected errors are logged. At `info`: one line per request and per queue event. */
  logLevel?: LogLevel;
  /** Where the JSON log lines go (default stderr); `railyard serve` passes stdout or a pino-pretty stream. */
  logStream?: NodeJS.WritableStream;
  /** Where engine effects are carried out (test runs, merges); see QueueService. */
  onEffects?: EffectHandler;
  /** The queue workers driving `driver`: run tests, merge, tick; closed with the server. */
  workers?: QueueWorkers;
  /** The clock (tests and the simulator may pass their own). */
  now?: () => number;
  /**
   * The worker entry that reads flaky-test reports off the request thread: default the built one
   * (builtWorkerFile); `false`, or none found (running from sources), reads them on the request thread.
   */
  reportWorker?: string | false;
  /**
   * The webhook deliverer's worker entry, for an SQLite file (default: `deliverer-worker.js` next to
   * the built server, delivererWorkerFile); `false`, or none found (running from sources), delivers
   * on the request thread.
   */
  delivererWorker?: string | false;
  /** `serve --org-repos`: repositories pinned to organisations (decisions "Trust"). */
  orgRepos?: readonly OrgRepoPin[];
  /** Several replicas on one PostgreSQL database: leases and change notifications (see replicas.ts). */
  replicas?: Replicas;
  /** HTTP timeouts (ms); unset ones are DEFAULT_TIMEOUTS. */
  timeouts?: Partial<ServerTimeouts>;
  /** Limits per organisation and per queue; unset ones are DEFAULT_LIMITS. */
  limits?: Partial<ServerLimits>;
  /** How `/v1/status` probes the database; unset ones are DEFAULT_HEALTH. */
  health?: Partial<HealthOptions>;
  /** The built web dashboard served at `/` (default: build/web next to the built server; `false`: none). */
  webRoot?: string | false;
  /** Outgoing webhooks: address rules, the dashboard's public URL, retry timing (default: https only, public addresses only). */
  webhooks?: Partial<WebhookOptions>;
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
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    // No route declares a Fastify schema: its ajv and serializer compilers load only if one ever does.
    schemaController: { compilersFactory: lazySchemaCompilers },
  });

  const health = new DatabaseHealth(() => deps.store.ping(), Date.now, { ...DEFAULT_HEALTH, ...deps.health });
  const auth = new TokenAuth(deps.store, now, (error) => app.log.error({ err: error }, 'could not record when a token was last used'));
  await auth.reload();
  const owners = await RepoOwners.load(deps.store, deps.orgRepos);
  const pageTokens = await PageTokens.load(deps.store);
  const service = await QueueService.load({
    store: deps.store,
    forge: deps.driver,
    owners,
    onEffects: deps.onEffects ?? deps.workers?.handle,
    now,
    log: (message, error) => app.log.error({ err: error }, message),
    replicas: deps.replicas,
    limits: { ...DEFAULT_LIMITS, ...deps.limits },
    events: app.log,
  });
  // Outgoing webhooks: queue steps write their events to the outbox; the deliverer sends them.
  const webhookOptions: WebhookOptions = { allowPrivate: false, allowHttp: false, ...deps.webhooks };
  const dashboardUrl = () => {
    if (webhookOptions.publicUrl) return webhookOptions.publicUrl;
    const address = app.server.address();
    if (!address || typeof address === 'string') return 'http://127.0.0.1';
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  };
  // Every link to a PR, repository or test: the forge's page, else the dashboard's (src/server/links.ts).
  const links = serverLinks(deps.driver, dashboardUrl);
  deps.store.webhooks.queueEvents = queueEventBuilder(dashboardUrl, links.forgePr);
  // On an SQLite file the deliverer runs on its own thread and connection (deliverer-thread.ts).
  const delivererFile = deps.store.sqliteFile && deps.delivererWorker !== false ? (deps.delivererWorker ?? delivererWorkerFile()) : undefined;
  const deliverer: DelivererHandle =
    delivererFile && deps.store.sqliteFile
      ? new DelivererThread(delivererFile, deps.store.sqliteFile, deps.store.webhooks, webhookOptions, app.log)
      : new Deliverer(deps.store.webhooks, webhookOptions, app.log);
  const webhooks = new WebhookService(deps.store, webhookOptions, now);
  app.decorate('railyard', { service, auth });
  app.decorateRequest('org', '');
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
  app.addHook('onResponse', (request, reply, done) => {
    // An answer sent before the body was read (an early error): close the socket after it.
    if (!request.raw.complete) request.raw.socket?.destroySoon();
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
  const workerFile = deps.reportWorker ?? builtWorkerFile();
  const reports = workerFile
    ? reportReaderPool(workerFile, {
        onBroken: (error) =>
          app.log.error(
            { err: error },
            'flaky-test report workers failed; reading reports on the request thread',
          ),
      })
    : undefined;
  app.addHook('onClose', async () => {
    // Hand the leases back first: another replica takes the queues at once.
    await deps.replicas?.close();
    await deps.workers?.close();
    await service.drain();
    await deliverer.close();
    await reports?.close();
  });
  await deliverer.start();
  deps.workers?.attach(service);
  await deps.replicas?.start(service, deps.workers);

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, parseJsonBody);
  // The same parser again under the type clients send: Fastify caches the parser it finds for an
  // exact type, but re-parses the Content-Type header on every request that falls through to '*'.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJsonBody);

  app.setErrorHandler((error: FastifyError | HttpError, request, reply) => {
    let status = 500;
    let message: string;
    let code: ErrorCode;
    if (error instanceof HttpError) {
      status = error.statusCode;
      message = error.message;
      code = error.code;
      reply.headers(error.headers);
    } else if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      status = 413;
      const limit = request.routeOptions.bodyLimit ?? BODY_LIMIT_BYTES;
      message = `request body is larger than ${limit / 1024 / 1024} MiB (${limit} bytes)`;
      code = 'payload_too_large';
    } else if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      status = error.statusCode;
      message = error.message;
      code = errorCodeForStatus(status);
    } else if (['EMFILE', 'ENFILE'].includes(String((error as { code?: unknown }).code))) {
      // Out of descriptors (a flood of connections): this request fails, the process goes on.
      status = 503;
      message = 'the server is out of file descriptors right now; try again shortly';
      code = 'unavailable';
      reply.header('retry-after', '5');
      request.log.warn({ err: error, reqId: request.id }, 'out of file descriptors');
    } else if (isDatabaseUnavailable(error)) {
      health.markDown('the database is unreachable');
      status = 503;
      message = 'the database is unavailable right now; nothing was changed, try again shortly';
      code = 'unavailable';
      reply.header('retry-after', '5');
      request.log.warn({ err: error, reqId: request.id }, 'database unavailable');
    } else if (isDatabaseBusy(error)) {
      status = 503;
      message = `the database gave up waiting for other writes (${(error as { message?: string }).message ?? 'busy'}); nothing was changed, try again`;
      code = 'unavailable';
      reply.header('retry-after', '1');
      request.log.warn({ err: error, reqId: request.id }, 'database busy');
    } else if (error instanceof LeaseLostError) {
      status = 503;
      message = 'this replica lost the lease of the queue mid-write; nothing was changed, try again';
      code = 'unavailable';
      reply.header('retry-after', '1');
    } else {
      request.log.error({ err: error }, 'unexpected error');
      message = `internal error (request id ${request.id}); the server log has the details`;
      code = 'internal_error';
    }
    refusals.set(request, oneLine(message));
    return reply.code(status).header(ERROR_CODE_HEADER, code).type(TEXT_TYPE).send(oneLine(message));
  });

  // The driver's own routes (webhooks) after the error handler: a scope registered before it
  // keeps Fastify's default one, which answered the webhook's 413 in JSON.
  if (deps.workers) for (const route of deps.driver.events?.routes ?? []) await mountDriverRoute(app, route);

  const authHook = (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void) => {
    const check = () => {
      const header = request.headers['x-api-token'];
      const token = Array.isArray(header) ? header[0] : header;
      const org = auth.organisationOf(token);
      if (!org) {
        done(new HttpError(401, token ? 'x-api-token: unknown token' : 'x-api-token: required (send your API token in this header)'));
        return;
      }
      request.org = org;
      done();
    };
    // A token created or revoked by `railyard token` counts from the next request.
    if (auth.stale()) auth.reload().then(check, done);
    else check();
  };

  const flakyService = new FlakyService(deps.store, now, reports?.read, links);
  // A forge that runs checks itself (the git forge) stores their reports as uploads and reads the flake-aware verdict's facts.
  deps.driver.ci.useTestResults?.((org, input) => flakyService.testRunResults(org, input));
  // A forge whose own CI runs the checks (GitHub, GitLab): CI's uploads for the test commit give the failing tests.
  deps.workers?.useCommitResults(flakyService);
  const handlers: Handlers = {
    ...mqHandlers(
      service,
      now,
      deps.workers ? deps.driver.ci.logPath?.bind(deps.driver.ci) : undefined,
      deps.workers ? deps.driver.ci.progress?.bind(deps.driver.ci) : undefined,
      links,
    ),
    ...flakyHandlers(flakyService, pageTokens),
    ...webhookHandlers(webhooks),
    status: (_input, { reply }) => {
      const { httpStatus, body } = health.status();
      // A load balancer takes the replica out on the 503; the body keeps Trunk's shape (impacted, red).
      if (httpStatus !== 200) reply.code(httpStatus).header('retry-after', '5').header(ERROR_CODE_HEADER, 'unavailable' satisfies ErrorCode);
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
          if (tooLong !== null) throw new HttpError(400, tooLong);
          const parsed = schema.safeParse(raw, { reportInput: true });
          if (!parsed.success) throw new HttpError(400, describeRequestError(parsed.error));
          const nul = nulPath(parsed.data);
          if (nul !== null) throw new HttpError(400, `${nul}: must not contain a NUL character (U+0000)`);
          input = parsed.data;
        }
        const result = await handler(input as never, { org: request.org, request, reply });
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
