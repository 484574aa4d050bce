/**
 * The GitLab REST client of the forge: @gitbeaker/rest with our own request handler, so that
 * GitLab's rate limits are honoured (a 429 waits for `Retry-After`, a nearly spent
 * `RateLimit-Remaining` pauses polling until `RateLimit-Reset`) instead of @gitbeaker's default
 * (ten retries within a quarter of a second), every request is counted (the bench's figure), and a
 * request never hangs (timeout). The token goes in `PRIVATE-TOKEN`, never in a URL.
 */
import {
  createRequesterFn,
  getMatchingRateLimiter,
  GitbeakerRequestError,
  type RequestHandlerFn,
  type ResourceOptions,
} from '@gitbeaker/requester-utils';
import { Gitlab } from '@gitbeaker/rest';
import { withoutTrailingSlashes } from '../../contract/common.js';

export interface GitLabClientOptions {
  /** `https://gitlab.com` or a self-managed instance's base URL (with its relative URL root, if any). */
  url: string;
  /** Project, group or personal access token with `api` scope. */
  token: string;
  /** Retries after a 429 / 502 / 503 before the request fails (default 3). */
  retries?: number;
  /** Longest wait for one `Retry-After` (default 60 s); a longer one fails the request. */
  maxRetryAfterMs?: number;
  /** Per-request timeout (default 30 s). */
  timeoutMs?: number;
  log?: (message: string) => void;
}

/** The HTTP status of an error thrown by @gitbeaker, if it carries one. */
export function statusOf(error: unknown): number | undefined {
  const s = (error as { cause?: { response?: { status?: unknown } } } | null)?.cause?.response?.status;
  return typeof s === 'number' ? s : undefined;
}

/** GitLab's message of an error (`{"message": …}` or `{"error": …}`), or the error's own. */
export function messageOf(error: unknown): string {
  const d = (error as { cause?: { description?: unknown } } | null)?.cause?.description;
  if (typeof d === 'string' && d) return d;
  return error instanceof Error ? error.message : String(error);
}

const RETRY_STATUSES = new Set([429, 502, 503]);

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/** Seconds (or an HTTP date) of a Retry-After header, as milliseconds; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  const s = Number(value);
  if (Number.isFinite(s)) return Math.max(0, s * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

async function bodyOf(response: Response): Promise<unknown> {
  if (response.status === 204) return null;
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (type === 'application/json') return (await response.json()) ?? {};
  if (type.startsWith('text/')) return await response.text();
  return await response.blob();
}

export type GitLabApi = InstanceType<typeof Gitlab<false>>;

/** @gitbeaker's API object plus what the forge needs around it (pause state, request count). */
export class GitLabClient {
  readonly api: GitLabApi;
  /** Set while GitLab asked us to wait: pollers skip their REST work until then. */
  pausedUntil = 0;
  /** REST requests sent (every attempt counts). */
  requests = 0;
  private readonly log: (message: string) => void;

  constructor(private readonly options: GitLabClientOptions) {
    this.log = options.log ?? ((m) => console.error(m));
    const handler: RequestHandlerFn = (endpoint, opts) => this.send(endpoint, opts ?? {});
    this.api = new Gitlab({
      host: withoutTrailingSlashes(options.url),
      token: options.token,
      queryTimeout: options.timeoutMs ?? 30_000,
      requesterFn: createRequesterFn(
        (_service: ResourceOptions, request) => Promise.resolve(request),
        handler,
      ),
    });
  }

  /** True while GitLab asked us to wait: pollers skip a round instead of spinning. */
  get paused(): boolean {
    return Date.now() < this.pausedUntil;
  }

  private async send(endpoint: string, opts: Record<string, unknown>) {
    const { prefixUrl, searchParams, method, headers, body, signal, rateLimiters } = opts as {
      prefixUrl?: string;
      searchParams?: string;
      method?: string;
      headers?: Record<string, string>;
      body?: string | FormData;
      signal?: AbortSignal;
      rateLimiters?: Parameters<typeof getMatchingRateLimiter>[1];
    };
    const base = prefixUrl ? (prefixUrl.endsWith('/') ? prefixUrl : `${prefixUrl}/`) : undefined;
    const url = new URL(endpoint, base);
    url.search = searchParams ?? '';
    const retries = this.options.retries ?? 3;
    const maxWait = this.options.maxRetryAfterMs ?? 60_000;
    const limit = getMatchingRateLimiter(endpoint, rateLimiters, method);
    for (let attempt = 0; ; attempt++) {
      await limit();
      const timeout = AbortSignal.timeout(this.options.timeoutMs ?? 30_000);
      const request = new Request(url, {
        method,
        headers,
        body,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      this.requests++;
      const response = await fetch(request);
      this.observe(response);
      if (response.ok) {
        return {
          body: (await bodyOf(response)) as never,
          headers: Object.fromEntries(response.headers.entries()),
          status: response.status,
        };
      }
      if (RETRY_STATUSES.has(response.status) && attempt < retries) {
        const asked = retryAfterMs(response.headers.get('retry-after'));
        const wait = asked ?? Math.min(maxWait, 1000 * 2 ** attempt);
        if (wait <= maxWait) {
          await response.arrayBuffer().catch(() => undefined);
          this.pausedUntil = Math.max(this.pausedUntil, Date.now() + wait);
          this.log(
            `GitLab answered ${response.status} to ${method ?? 'GET'} ${url.pathname}: retrying in ${Math.ceil(wait / 1000)} s`,
          );
          await sleep(wait, signal);
          continue;
        }
      }
      const text = await response.text();
      let description = text;
      if ((response.headers.get('content-type') ?? '').includes('application/json')) {
        try {
          const parsed = JSON.parse(text) as { message?: unknown; error?: unknown };
          const m = parsed?.message ?? parsed?.error ?? '';
          description = typeof m === 'string' ? m : JSON.stringify(m);
        } catch {
          // not JSON after all: keep the text
        }
      }
      throw new GitbeakerRequestError(description || `${response.status} ${response.statusText}`, {
        cause: { description, request, response },
      });
    }
  }

  /** `RateLimit-Remaining` nearly spent: stop polling until `RateLimit-Reset` (writes still go out). */
  private observe(response: Response): void {
    const remaining = Number(response.headers.get('ratelimit-remaining'));
    const reset = Number(response.headers.get('ratelimit-reset'));
    const limit = Number(response.headers.get('ratelimit-limit'));
    if (Number.isFinite(remaining) && Number.isFinite(reset) && Number.isFinite(limit) && limit > 0) {
      if (remaining < Math.max(5, limit * 0.02)) this.pausedUntil = Math.max(this.pausedUntil, reset * 1000);
    }
  }
}
