import ky, { HTTPError, TimeoutError as KyTimeoutError, type KyInstance } from 'ky';
import type { z } from 'zod';
import { withoutTrailingSlashes } from '../contract/common.js';
import {
  API_PREFIX,
  ERROR_CODE_HEADER,
  routes,
  type OperationName,
  type Page,
  type RequestBody,
  type ResponseBody,
  type RouteDef,
} from '../contract/index.js';

import { ApiError, NetworkError, ResponseShapeError, TimeoutError } from './errors.js';

export { ApiError, ClientError, isTransientError, NetworkError, ResponseShapeError, TimeoutError } from './errors.js';

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
}

function causeOf(error: unknown): { code?: string; message: string } {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth++) {
    const e = current as { code?: string; cause?: unknown; message?: string };
    if (e.code) return { code: e.code, message: `${e.code}${e.message && !e.message.includes(e.code) ? ` ${e.message}` : ''}` };
    if (!e.cause) return { message: e.message ?? String(current) };
    current = e.cause;
  }
  return { message: String(error) };
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
  call<Op extends OperationName>(op: Op, body: RequestBody<Op>, options?: RequestOptions): Promise<ResponseBody<Op>>;
  /** Every page of a flaky-test list operation, following next_page_token until it is "". */
  pages<Op extends FlakyListOperation>(
    op: Op,
    body: Omit<RequestBody<Op>, 'page_query'> & { page_size?: number },
    options?: RequestOptions & { onPage?: (page: Page, index: number) => void },
  ): AsyncGenerator<ResponseBody<Op>>;
}

export type FlakyListOperation = 'listFailingTests' | 'listUnhealthyTests' | 'listQuarantinedTests';

export function createClient(options: ClientOptions): Client {
  const baseUrl = withoutTrailingSlashes(options.baseUrl);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const retries = options.retries ?? 3;
  const headers: Record<string, string> = { 'user-agent': options.userAgent ?? 'railyard-cli' };
  if (options.token) headers['x-api-token'] = options.token;
  const http: KyInstance = ky.create({
    prefixUrl: baseUrl,
    timeout: timeoutMs,
    headers,
    throwHttpErrors: true,
  });

  async function call<Op extends OperationName>(
    op: Op,
    body: RequestBody<Op>,
    requestOptions: RequestOptions = {},
  ): Promise<ResponseBody<Op>> {
    const def = routes[op] as RouteDef;
    const signal = requestOptions.signal ?? options.signal;
    const path = def.path.replace(/^\//, '');
    try {
      const response = await http(path, {
        method: def.method,
        ...(def.method === 'GET'
          ? { searchParams: Object.fromEntries(Object.entries((body ?? {}) as Record<string, unknown>).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)])) }
          : { json: body ?? {} }),
        signal,
        retry: {
          limit: retries,
          methods: ['get', 'post'],
          statusCodes: def.retrySafe ? [408, 429, 500, 502, 503, 504] : [],
          afterStatusCodes: [429, 503],
          backoffLimit: 10_000,
          jitter: (delay) => delay * (0.5 + Math.random() * 0.5),
          retryOnTimeout: def.retrySafe,
          // A write is sent again only when it provably never reached the server.
          shouldRetry: def.retrySafe ? undefined : ({ error }) => (error instanceof HTTPError ? false : neverReachedServer(error)),
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
      if (def.response === 'text') return (await response.text()) as ResponseBody<Op>;
      const text = await response.text();
      let json: unknown;
      try {
        json = text.trim() === '' ? {} : JSON.parse(text);
      } catch (error) {
        throw new ResponseShapeError(`${op}: the server answered 200 with a body that is not JSON`, op, { cause: error });
      }
      const parsed = (def.response as z.ZodType).safeParse(json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new ResponseShapeError(
          `${op}: unexpected answer from ${baseUrl}: ${issue ? `${issue.path.join('.') || 'body'}: ${issue.message}` : 'invalid'}`,
          op,
          { cause: parsed.error },
        );
      }
      return parsed.data as ResponseBody<Op>;
    } catch (error) {
      throw await translate(op, error);
    }
  }

  function translateHttp(op: string, error: HTTPError): Promise<ApiError> {
    return error.response
      .text()
      .catch(() => '')
      .then(
        (text) =>
          new ApiError(op, error.response.status, text.split('\n')[0].trim().slice(0, 500), {
            code: error.response.headers.get(ERROR_CODE_HEADER) ?? undefined,
            cause: error,
          }),
      );
  }

  async function translate(op: string, error: unknown): Promise<unknown> {
    if (error instanceof HTTPError) return translateHttp(op, error);
    if (error instanceof KyTimeoutError) return new TimeoutError(op, timeoutMs, { cause: error });
    if (error instanceof ApiError || error instanceof ResponseShapeError) return error;
    if (error instanceof Error && error.name === 'AbortError') return error;
    if (error instanceof TypeError) return new NetworkError(op, baseUrl, causeOf(error).message, { cause: error });
    return error;
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
      const result = (await call(op, { ...rest, page_query: { page_size, page_token: token } } as RequestBody<Op>, requestOptions)) as ResponseBody<Op> & {
        page: Page;
      };
      requestOptions.onPage?.(result.page, index);
      yield result;
      token = result.page.next_page_token;
      if (!token) return;
      if (seen.has(token)) throw new ResponseShapeError(`${op}: the server returned the same page token twice`, op);
      seen.add(token);
    }
  }

  return { baseUrl, call: call as Client['call'], pages: pages as Client['pages'] };
}

export { API_PREFIX };
