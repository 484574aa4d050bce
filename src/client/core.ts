/**
 * The typed HTTP client of the v1 API (ky): one call per operation of a route table, retries of
 * the retry-safe ones, errors in one line (client/errors.ts), pages of the flaky-test lists.
 */
import ky, { HTTPError, TimeoutError as KyTimeoutError, type KyInstance } from 'ky';
import type { z } from 'zod';
import { withoutTrailingSlashes } from '../contract/common.js';
import { ERROR_CODE_HEADER } from '../contract/errors.js';
import type { OperationName, Page, RequestBody, ResponseBody } from '../contract/index.js';
import { API_PREFIX, type RouteDef } from '../contract/route-def.js';

import { maxResponseBytes, readCapped, readHead, ResponseTooLargeError } from './answer.js';
import { ApiError, NetworkError, PlainHttpError, ResponseShapeError, TimeoutError } from './errors.js';

export {
  DEFAULT_MAX_RESPONSE_MIB,
  MAX_RESPONSE_ENV,
  maxResponseBytes,
  ResponseTooLargeError,
} from './answer.js';

export {
  ApiError,
  ClientError,
  isTransientError,
  NetworkError,
  PlainHttpError,
  ResponseShapeError,
  TimeoutError,
} from './errors.js';

export { DEFAULT_API_URL } from '../contract/constants.js';

export interface ClientOptions {
  /** Base URL ending in /v1, e.g. http://127.0.0.1:7311/v1 or https://api.trunk.io/v1. */
  baseUrl: string;
  token?: string;
  /** Per attempt; default 30 s. */
  timeoutMs?: number;
  /** Retries of retry-safe operations on 429 / 5xx / network errors / timeouts; default 3. */
  retries?: number;
  userAgent?: string;
  signal?: AbortSignal;
  /** Called before each retry (for progress output). */
  onRetry?: (info: { operation: string; attempt: number; error: Error; reason: string }) => void;
  /** The transport, with fetch's contract (default: the global fetch; the CLI passes cli/http-fetch.ts). */
  fetch?: typeof fetch;
  /**
   * The most bytes of one answer read before the call fails with ResponseTooLargeError (default:
   * RAILYARD_MAX_RESPONSE_MIB MiB, else 64 MiB).
   */
  maxResponseBytes?: number;
}

function causeOf(error: unknown): { code?: string; message: string; detail?: string } {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    const e = current as { code?: string; cause?: unknown; message?: string };
    if (e.code)
      return {
        code: e.code,
        message: firstLine(`${e.code}${e.message && !e.message.includes(e.code) ? ` ${e.message}` : ''}`),
        detail: e.message ?? '',
      };
    if (!e.cause) return { message: firstLine(e.message ?? String(current)) };
    current = e.cause;
  }
  return { message: firstLine(String(error)) };
}

const firstLine = (text: string) => text.split('\n')[0]!.trim();

/**
 * True when a TLS handshake got an answer that is not TLS: an https:// URL pointing at a plain-HTTP
 * server (OpenSSL's "wrong version number", or an HTTP answer read as a TLS record).
 */
function isPlainHttpAnswer(error: unknown): boolean {
  const { code, detail = '' } = causeOf(error);
  return (
    code === 'ERR_SSL_WRONG_VERSION_NUMBER' ||
    code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG' ||
    code === 'ERR_SSL_HTTP_REQUEST' ||
    // node:https names it by the failed write (`write EPROTO …:wrong version number`): read OpenSSL's whole text.
    (code === 'EPROTO' && /wrong version number|packet length too long|http request/i.test(detail))
  );
}

/**
 * Where a Trunk v1 API most likely is when `baseUrl` answered 404 to an operation: the same URL
 * ending in /v1, or null when it already does.
 */
export function likelyApiUrl(baseUrl: string): string | null {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return null;
  }
  const segments = url.pathname.split('/').filter(Boolean);
  if (segments.at(-1) === 'v1') return null;
  if (/^v\d+$/.test(segments.at(-1) ?? '')) segments.pop();
  return `${url.origin}/${[...segments, 'v1'].join('/')}`;
}

/** True when the request provably never reached the server, so even a write may be sent again. */
function neverReachedServer(error: unknown): boolean {
  const { code } = causeOf(error);
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN';
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface Client {
  readonly baseUrl: string;
  call<Op extends OperationName>(
    op: Op,
    body: RequestBody<Op>,
    options?: RequestOptions,
  ): Promise<ResponseBody<Op>>;
  /** Every page of a flaky-test list operation, following next_page_token until it is "". */
  pages<Op extends FlakyListOperation>(
    op: Op,
    body: Omit<RequestBody<Op>, 'page_query'> & { page_size?: number },
    options?: RequestOptions & { onPage?: (page: Page, index: number) => void },
  ): AsyncGenerator<ResponseBody<Op>>;
}

export type FlakyListOperation = 'listFailingTests' | 'listUnhealthyTests' | 'listQuarantinedTests';

/** The operations a client knows: the whole route table (createClient), or the part a caller needs. */
export type RouteTable = Partial<Record<OperationName, RouteDef>>;

/** One HTTP request of an operation, as a client sends it (the v1 client and the v2 one alike). */
export interface TransportRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** Below the base URL, without a leading slash. */
  path: string;
  searchParams?: Record<string, string>;
  json?: unknown;
  /** Whether it is sent again after a 429/5xx, a network error or a timeout. */
  retrySafe: boolean;
  signal?: AbortSignal;
}

/** Sends one request and answers its body's text (within the size cap); an error status throws an ApiError. */
export type Transport = (op: string, request: TransportRequest) => Promise<string>;

/**
 * The HTTP side of a client: ky with its retries, the size cap, the token (v1's `x-api-token`
 * header, or `Authorization: Bearer` for v2) and the errors in one line.
 */
export function createTransport(
  options: ClientOptions,
  auth: 'x-api-token' | 'bearer' = 'x-api-token',
): Transport {
  const baseUrl = withoutTrailingSlashes(options.baseUrl);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const retries = options.retries ?? 3;
  const maxBytes = options.maxResponseBytes ?? maxResponseBytes();
  const headers: Record<string, string> = { 'user-agent': options.userAgent ?? 'railyard-cli' };
  if (options.token) {
    if (auth === 'bearer') headers.authorization = `Bearer ${options.token}`;
    else headers['x-api-token'] = options.token;
  }
  const http: KyInstance = ky.create({
    prefixUrl: baseUrl,
    timeout: timeoutMs,
    headers,
    throwHttpErrors: true,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });

  async function send(op: string, request: TransportRequest): Promise<string> {
    const { retrySafe } = request;
    const signal = request.signal ?? options.signal;
    try {
      const response = await http(request.path, {
        method: request.method,
        ...(request.searchParams ? { searchParams: request.searchParams } : {}),
        ...(request.json !== undefined ? { json: request.json } : {}),
        signal,
        retry: {
          limit: retries,
          methods: ['get', 'post', 'put', 'patch', 'delete'],
          statusCodes: retrySafe ? [408, 429, 500, 502, 503, 504] : [],
          afterStatusCodes: [429, 503],
          backoffLimit: 10_000,
          jitter: (delay) => delay * (0.5 + Math.random() * 0.5),
          retryOnTimeout: retrySafe,
          // A write is sent again only when it provably never reached the server.
          // Never for a TLS handshake with a plain-HTTP server: it fails the same way every time.
          shouldRetry: ({ error }) =>
            isPlainHttpAnswer(error)
              ? false
              : retrySafe
                ? undefined
                : error instanceof HTTPError
                  ? false
                  : neverReachedServer(error),
        },
        hooks: {
          beforeRetry: [
            ({ error, retryCount }) => {
              options.onRetry?.({
                operation: op,
                attempt: retryCount,
                error,
                reason: error instanceof HTTPError ? `HTTP ${error.response.status}` : causeOf(error).message,
              });
            },
          ],
        },
      });
      // The body within the cap, and within the attempt's time limit (ky's covers only the wait for the headers).
      return await readCapped(
        response,
        op,
        maxBytes,
        () => new TimeoutError(op, timeoutMs),
        Date.now() + timeoutMs,
      );
    } catch (error) {
      throw await translate(op, error);
    }
  }

  /**
   * The one line of an error answer and its code: v1's plain text (the code in a header), or the
   * message and code of Trunk's JSON envelope (`{"error":{"code","message"}}`, as /v2 and Trunk's
   * own API answer).
   */
  function errorOf(text: string): { line: string; code?: string } {
    const trimmed = text.trim();
    if (trimmed.startsWith('{')) {
      try {
        const error = (JSON.parse(trimmed) as { error?: { message?: unknown; code?: unknown } }).error;
        if (typeof error?.message === 'string')
          return {
            line: error.message.split('\n')[0]!.trim().slice(0, 500),
            ...(typeof error.code === 'string' ? { code: error.code } : {}),
          };
      } catch {
        // not JSON after all: the text as it came
      }
    }
    return { line: trimmed.split('\n')[0]!.trim().slice(0, 500) };
  }

  function translateHttp(op: string, error: HTTPError): Promise<ApiError> {
    // Only the head of an error answer: its first line is all the message keeps.
    return readHead(error.response, 64 * 1024)
      .catch(() => '')
      .then((text) => {
        const { line, code } = errorOf(text);
        return new ApiError(op, error.response.status, line, {
          code: error.response.headers.get(ERROR_CODE_HEADER) ?? code,
          cause: error,
          // An operation path that is not found at a base URL without /v1: most likely the URL is wrong.
          hint:
            auth !== 'bearer' && error.response.status === 404 && likelyApiUrl(baseUrl)
              ? `did you mean --api-url ${likelyApiUrl(baseUrl)}?`
              : undefined,
        });
      });
  }

  async function translate(op: string, error: unknown): Promise<unknown> {
    if (error instanceof HTTPError) return translateHttp(op, error);
    if (error instanceof KyTimeoutError) return new TimeoutError(op, timeoutMs, { cause: error });
    if (
      error instanceof ApiError ||
      error instanceof ResponseShapeError ||
      error instanceof ResponseTooLargeError ||
      error instanceof TimeoutError
    )
      return error;
    if (error instanceof Error && error.name === 'AbortError') return error;
    if (error instanceof TypeError && isPlainHttpAnswer(error))
      return new PlainHttpError(op, baseUrl, { cause: error });
    if (error instanceof TypeError)
      return new NetworkError(op, baseUrl, causeOf(error).message, { cause: error });
    return error;
  }

  return send;
}

/**
 * A client over `table`: the Action passes only the merge-queue and flaky-test operations, so its
 * bundle carries no other schemas. An operation missing from the table is refused before sending.
 */
export function createClientFor(table: RouteTable, options: ClientOptions): Client {
  const baseUrl = withoutTrailingSlashes(options.baseUrl);
  const send = createTransport(options);

  async function call<Op extends OperationName>(
    op: Op,
    body: RequestBody<Op>,
    requestOptions: RequestOptions = {},
  ): Promise<ResponseBody<Op>> {
    const def = table[op];
    if (!def) throw new Error(`${op}: not an operation of this client's route table`);
    const text = await send(op, {
      method: def.method,
      path: def.path.replace(/^\//, ''),
      ...(def.method === 'GET'
        ? {
            searchParams: Object.fromEntries(
              Object.entries((body ?? {}) as Record<string, unknown>)
                .filter(([, v]) => v !== undefined)
                .map(([k, v]) => [k, String(v)]),
            ),
          }
        : { json: body ?? {} }),
      retrySafe: def.retrySafe,
      ...(requestOptions.signal ? { signal: requestOptions.signal } : {}),
    });
    if (def.response === 'text') return text as ResponseBody<Op>;
    return parseAnswer(op, text, def.response as z.ZodType, baseUrl) as ResponseBody<Op>;
  }

  async function* pages<Op extends FlakyListOperation>(
    op: Op,
    body: Omit<RequestBody<Op>, 'page_query'> & { page_size?: number },
    requestOptions: RequestOptions & { onPage?: (page: Page, index: number) => void } = {},
  ): AsyncGenerator<ResponseBody<Op>> {
    const { page_size = 100, ...rest } = body as Record<string, unknown> & { page_size?: number };
    let token = '';
    const seen = new Set<string>();
    for (let index = 0; ; index++) {
      const result = (await call(
        op,
        { ...rest, page_query: { page_size, page_token: token } } as RequestBody<Op>,
        requestOptions,
      )) as ResponseBody<Op> & {
        page: Page;
      };
      requestOptions.onPage?.(result.page, index);
      yield result;
      token = result.page.next_page_token;
      if (!token) return;
      if (seen.has(token))
        throw new ResponseShapeError(`${op}: the server returned the same page token twice`, op);
      seen.add(token);
    }
  }

  return { baseUrl, call: call as Client['call'], pages: pages as Client['pages'] };
}

/** A JSON answer checked against its schema: a ResponseShapeError naming the first mismatch otherwise. */
export function parseAnswer(op: string, text: string, schema: z.ZodType, baseUrl: string): unknown {
  let json: unknown;
  try {
    json = text.trim() === '' ? {} : JSON.parse(text);
  } catch (error) {
    throw new ResponseShapeError(`${op}: the server answered 200 with a body that is not JSON`, op, {
      cause: error,
    });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ResponseShapeError(
      `${op}: unexpected answer from ${baseUrl}: ${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'invalid'}`,
      op,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

export { API_PREFIX };
