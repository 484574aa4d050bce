/**
 * The HTTP plumbing of the API server (app.ts): request schemas compiled once (on first use), request errors in
 * one line, the lenient JSON body parser, gzipped raw answers, Node's parser errors, driver routes.
 */
import { STATUS_CODES } from 'node:http';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { negotiate } from '@fastify/accept-negotiator';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { z } from 'zod';
import {
  describeZodError,
  JSON_TOO_DEEP_MESSAGE,
  jsonTooDeep,
  routes,
  type OperationName,
  type RouteDef,
} from '../contract/index.js';
import type { DriverRoute } from '../forge/types.js';
import { HttpError, oneLine } from './errors.js';
import type { RawAnswer } from './routes/types.js';

const TEXT_TYPE = 'text/plain; charset=utf-8';


/**
 * An operation's request schema, compiled on its first request and kept for the process (undefined
 * when it takes no input): z.compile builds a specialised validator with the same results and
 * errors as the schema (a rejected input is re-run through the schema itself), at a few percent of
 * its cost per request. Compiled when first needed, not at import: all 35 cost ~40 ms of CPU, paid
 * by every process that loads the server, most of which never see most operations.
 */
export function requestSchema(op: OperationName): z.ZodType | undefined {
  if (!compiled.has(op)) {
    const def: RouteDef = routes[op];
    compiled.set(op, def.request ? z.compile(def.request) : undefined);
  }
  return compiled.get(op);
}
const compiled = new Map<OperationName, z.ZodType | undefined>();

const fastifyRequire = createRequire(createRequire(import.meta.url).resolve('fastify'));
type SchemaCompilers = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type CompilerFactory = (externalSchemas: unknown, options: unknown) => unknown;
const loaded = new Map<string, CompilerFactory>();
/** Fastify's default compiler factory from the package Fastify itself depends on, loaded once. */
function fastifyCompiler(name: string): CompilerFactory {
  let factory = loaded.get(name);
  if (!factory) {
    factory = (fastifyRequire(name) as () => CompilerFactory)();
    loaded.set(name, factory);
  }
  return factory;
}
/**
 * Fastify's own schema compilers (ajv, fast-json-stringify), loaded the first time a route declares
 * a Fastify schema. No route does (requests are checked by the contract's zod schemas, answers are
 * JSON.stringify), but Fastify otherwise loads both when an app is created: ~120 modules, a sixth
 * of what a server loads.
 */
export const lazySchemaCompilers = {
  buildValidator: (externalSchemas: unknown, options: unknown) => fastifyCompiler('@fastify/ajv-compiler')(externalSchemas, options),
  buildSerializer: (externalSchemas: unknown, options: unknown) =>
    fastifyCompiler('@fastify/fast-json-stringify-compiler')(externalSchemas, options),
} as SchemaCompilers;

/**
 * `field: problem` for a rejected request. Issues carry their input (reportInput), so a missing
 * field reads `required` whatever its type (enum, union, ...), and a wrong type names the type.
 */
export function describeRequestError(error: z.ZodError): string {
  const issue = error.issues[0];
  if (
    issue &&
    issue.code !== 'custom' &&
    issue.path.length &&
    'input' in issue &&
    issue.input === undefined
  ) {
    return `${issue.path.map(String).join('.')}: required`;
  }
  return describeZodError(error);
}

/**
 * The path of the first string in a request holding a NUL character (U+0000), or null. No field
 * takes one: PostgreSQL's text cannot hold it (it answered such a repository name with a 500), no
 * repository, branch or test name contains one, and both databases must give the same answers.
 * Report contents are not fields: the JUnit reader turns the characters XML forbids, NUL among
 * them (captured output holds such bytes), into U+FFFD before anything is stored.
 */
export function nulPath(value: unknown, path: string[] = []): string | null {
  if (typeof value === 'string') {
    const reportContent = path.length === 3 && path[0] === 'reports' && path[2] === 'content';
    return value.includes('\0') && !reportContent ? path.join('.') || 'body' : null;
  }
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, item] of Object.entries(value)) {
    const found = nulPath(item, [...path, key]);
    if (found !== null) return found;
  }
  return null;
}

/** Large answers that are served again unchanged (getQueue of a long queue) go out gzipped to clients that accept it. */
const GZIP_FROM_BYTES = 16 * 1024;
/** The gzip of each such answer, kept for as long as the answer itself is. */
const gzipped = new WeakMap<Buffer, Buffer>();

export function sendRaw(request: FastifyRequest, reply: FastifyReply, answer: RawAnswer): FastifyReply {
  reply.type(answer.contentType);
  const { body } = answer;
  if (!answer.reusable || !Buffer.isBuffer(body) || body.length < GZIP_FROM_BYTES) return reply.send(body);
  reply.header('vary', 'accept-encoding');
  if (negotiate(request.headers['accept-encoding'] ?? '', ['gzip']) !== 'gzip') return reply.send(body);
  let gz = gzipped.get(body);
  if (!gz) {
    gz = gzipSync(body);
    gzipped.set(body, gz);
  }
  return reply.header('content-encoding', 'gzip').send(gz);
}

export function parseJsonBody(
  _request: FastifyRequest,
  text: string,
  done: (err: Error | null, body?: unknown) => void,
): void {
  // Lenient: any Content-Type (or none) is read as JSON; an empty body is an empty object.
  if (text.trim() === '') return done(null, {});
  // Depth first: JSON.parse of a deeply nested 20 MiB body holds the thread for seconds.
  if (jsonTooDeep(text)) return done(new HttpError(400, JSON_TOO_DEEP_MESSAGE));
  try {
    done(null, JSON.parse(text));
  } catch (error) {
    done(
      new HttpError(400, `body: invalid JSON (${error instanceof Error ? error.message : String(error)})`),
    );
  }
}

/** Node's HTTP parser refused a request (or it timed out): a one-line text/plain answer, then close. */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let status: number;
  let message: string;
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    message = 'request timed out: the headers and body did not arrive in time';
  } else if (error.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    message = 'request headers are too large (at most 16 KiB)';
  } else {
    status = 400;
    message = `malformed HTTP request (${error.code ?? 'parse error'})`;
  }
  if (socket.writable) {
    const body = oneLine(message);
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${TEXT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroySoon();
}

/** 25 MiB: the body limit of a driver's webhook route (GitHub's documented largest delivery). */
export const WEBHOOK_BODY_LIMIT_BYTES = 25 * 1024 * 1024;
/** 64 MiB: the most bytes of webhook bodies not yet verified held at once, over all connections. */
export const UNVERIFIED_BODIES_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The bytes of webhook bodies being read and not yet verified, over all connections: each request
 * reserves its declared length (the route's limit when it declares none) before its body is read
 * and gives it back when it is answered or its connection closes.
 */
let unverifiedBytes = 0;

/** Answers a webhook request without reading its body, and closes the connection. */
function refuseUnread(reply: FastifyReply, status: number, text: string, headers: Record<string, string> = {}): FastifyReply {
  return reply.code(status).headers(headers).header('connection', 'close').type(TEXT_TYPE).send(oneLine(text));
}

/**
 * Mounts a route a driver declared (e.g. `POST /webhooks/github`): in a scope of its own, the body
 * reaches the driver as the raw text (any content type: signatures are over the raw bytes) and
 * the driver's answer goes back as plain text. The headers are checked before the body is read
 * (`checkHeaders`); bodies are capped at WEBHOOK_BODY_LIMIT_BYTES, and a request that would take
 * the unverified bytes held past UNVERIFIED_BODIES_MAX_BYTES is a 503, its body unread.
 */
export async function mountDriverRoute(app: FastifyInstance, route: DriverRoute): Promise<void> {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    const raw = (_req: unknown, body: string, done: (err: Error | null, body?: unknown) => void) => done(null, body);
    scope.addContentTypeParser('*', { parseAs: 'string' }, raw);
    scope.addContentTypeParser('application/json', { parseAs: 'string' }, raw);
    scope.route({
      method: route.method,
      url: route.path,
      bodyLimit: WEBHOOK_BODY_LIMIT_BYTES,
      onRequest: (request, reply, done) => {
        const refused = route.checkHeaders?.(request.headers) ?? null;
        if (refused) return void refuseUnread(reply, refused.status, refused.text);
        const declared = Number(request.headers['content-length'] ?? Number.NaN);
        if (declared > WEBHOOK_BODY_LIMIT_BYTES)
          return void refuseUnread(reply, 413, `request body is larger than 25 MiB (${WEBHOOK_BODY_LIMIT_BYTES} bytes)`);
        const size = Number.isSafeInteger(declared) && declared >= 0 ? declared : WEBHOOK_BODY_LIMIT_BYTES;
        if (unverifiedBytes + size > UNVERIFIED_BODIES_MAX_BYTES)
          return void refuseUnread(reply, 503, 'too many webhook bodies are being received at once; try again shortly', { 'retry-after': '5' });
        unverifiedBytes += size;
        let held = true;
        // Answered, or the connection closed before: the body (or what arrived of it) is let go.
        reply.raw.once('close', () => {
          if (held) unverifiedBytes -= size;
          held = false;
        });
        done();
      },
      handler: async (request, reply) => {
        const answer = await route.handle({ headers: request.headers, body: typeof request.body === 'string' ? request.body : '' });
        return reply.code(answer.status).type('text/plain; charset=utf-8').send(answer.text);
      },
    });
  });
}
