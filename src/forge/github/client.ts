/** The GitHub REST client of the GitHub forge (Octokit with retries and throttling; token or App auth). */
import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/core';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import type { RequestParameters } from '@octokit/core/types';
import { withoutTrailingSlashes } from '../../contract/common.js';
import { gitNetworkFailure, networkFailure, transientStatus } from '../shared/blips.js';
import { DROPPED, WriteLine, WritePriority, type WriteOptions } from './writes.js';

/** How the forge authenticates: one token for every repository, or a GitHub App (a token per installation). */
export type GitHubAuth =
  | { kind: 'token'; token: string }
  | { kind: 'app'; appId: number; privateKey: string };

export interface GitHubClientOptions {
  /** `https://api.github.com` or `https://HOST/api/v3`. */
  apiUrl: string;
  auth: GitHubAuth;
  /** Minimum time between two writes (POST/PATCH/PUT/DELETE) of one token or installation, GitHub's advice: 1000 ms. */
  writeIntervalMs?: number;
  /** Retries after a rate-limit answer before the request fails (default 3). */
  rateLimitRetries?: number;
  log?: (message: string) => void;
}

const MyOctokit = Octokit.plugin(retry, throttling);
type Client = InstanceType<typeof MyOctokit>;

/** Remaining lifetime at which a cached installation token is replaced. */
const REFRESH_MARGIN_MS = 5 * 60_000;

interface CachedToken {
  token: string;
  /** When to fetch a new one. */
  refreshAt: number;
}

/**
 * plugin-throttling queues every mutating request through a group with
 * `schedule(options, fn, ...args)`; writes are paced by the client's own WriteLine (per token, by
 * priority), so this group lets them straight through.
 */
function passThrough() {
  const limiter = {
    schedule<T>(first: unknown, ...rest: unknown[]): Promise<T> {
      const [fn, ...args] = (typeof first === 'function' ? [first, ...rest] : rest) as [
        (...a: unknown[]) => Promise<T>,
        ...unknown[],
      ];
      return fn(...args);
    },
  };
  return { key: () => limiter };
}

/** Sends one request inside a write's turn (see GitHubClient.write). */
export type Requester = <T = unknown>(
  route: string,
  params?: RequestParameters,
) => Promise<{ status: number; data: T; headers: Record<string, unknown> }>;

/** A GitHub REST answer's status, for errors thrown by Octokit. */
export function statusOf(error: unknown): number | undefined {
  const s = (error as { status?: unknown } | null)?.status;
  return typeof s === 'number' ? s : undefined;
}

/**
 * Request parameters that turn Octokit's own retries off for one request: a landing call is never
 * sent again blindly (it may have landed before the answer was lost); the queue workers try it
 * again once the lander has checked what happened.
 */
export const NO_RETRY = { request: { retries: 0 } } as const;

/**
 * Whether a failed request or git command against GitHub is a blip worth trying again, in a few
 * words for people ("GitHub answered 502"; src/forge/shared/blips.ts): a 5xx, 408 or 429, a
 * secondary rate limit, a connection that failed or dropped; null for an answer (4xx, a refusal).
 */
export function gitHubBlip(error: unknown): string | null {
  const status = statusOf(error);
  if (status !== undefined && (error as { name?: unknown }).name === 'HttpError') {
    // Octokit turns a failed fetch into a RequestError 500 with no response.
    if ((error as { response?: unknown }).response === undefined) {
      const why =
        networkFailure(error) ??
        (error instanceof Error ? error.message.split('\n')[0]!.trim() : String(error));
      return `the connection to GitHub failed (${why})`;
    }
    if (transientStatus(status)) return `GitHub answered ${status}`;
    const message = error instanceof Error ? error.message : '';
    if (status === 403 && /secondary rate limit|rate limit exceeded/i.test(message))
      return `GitHub's rate limit (403)`;
    return null;
  }
  const network = networkFailure(error);
  if (network) return `the connection to GitHub failed (${network})`;
  const git = gitNetworkFailure(error);
  return git ? `git could not reach GitHub (${git})` : null;
}

/**
 * The GitHub REST client of the forge: Octokit with the retry and throttling plugins (rate limits
 * and `retry-after` honoured, writes spaced out), authenticated per repository, with conditional
 * GETs (ETags: a 304 answer costs no rate limit) for everything the forge polls.
 */
export class GitHubClient {
  private readonly octokit: Client;
  /** The write line of each token / installation (`token`, `installation <id>`). */
  private readonly lines = new Map<string, WriteLine>();
  private readonly tokens = new Map<string, CachedToken>();
  private readonly installations = new Map<string, number>();
  private readonly etags = new Map<string, { etag: string; data: unknown }>();
  private readonly appAuth: ReturnType<typeof createAppAuth> | null;
  private readonly log: (message: string) => void;
  /** Set while GitHub asked us to wait (rate limit): pollers skip their REST work until then. */
  pausedUntil = 0;
  /** Set when GitHub answered a rate limit (its Retry-After or reset): no write starts until then. */
  writesPausedUntil = 0;

  constructor(private readonly options: GitHubClientOptions) {
    this.log = options.log ?? ((m) => console.error(m));
    const retries = options.rateLimitRetries ?? 3;
    const onLimit =
      (kind: string) =>
      (retryAfter: number, opts: { method: string; url: string }, _o: unknown, retryCount: number) => {
        this.pausedUntil = Math.max(this.pausedUntil, Date.now() + retryAfter * 1000);
        this.writesPausedUntil = Math.max(this.writesPausedUntil, Date.now() + retryAfter * 1000);
        this.log(
          `GitHub ${kind} rate limit on ${opts.method} ${opts.url}: waiting ${retryAfter} s${retryCount < retries ? '' : ', then giving up'}`,
        );
        return retryCount < retries;
      };
    const make = () => {
      const octokit = new MyOctokit({
        baseUrl: withoutTrailingSlashes(options.apiUrl),
        userAgent: 'railyard',
        log: {
          debug: () => {},
          info: () => {},
          warn: (m: string) => this.log(m),
          error: (m: string) => this.log(m),
        },
        retry: { doNotRetry: [400, 401, 403, 404, 409, 410, 422, 451] },
        throttle: {
          onRateLimit: onLimit('primary'),
          onSecondaryRateLimit: onLimit('secondary'),
          write: passThrough() as never,
          notifications: passThrough() as never,
          // A secondary limit without retry-after: GitHub asks for at least a minute.
          fallbackSecondaryRateRetryAfter: 60,
        },
      });
      octokit.hook.after('request', (response) => {
        // Nearly out of requests: stop polling until the window resets (writes still go out).
        const remaining = Number(response.headers['x-ratelimit-remaining']);
        const reset = Number(response.headers['x-ratelimit-reset']);
        if (Number.isFinite(remaining) && remaining < 20 && Number.isFinite(reset))
          this.pausedUntil = Math.max(this.pausedUntil, reset * 1000);
      });
      return octokit;
    };
    this.octokit = make();
    this.appAuth =
      options.auth.kind === 'app'
        ? createAppAuth({ appId: options.auth.appId, privateKey: options.auth.privateKey })
        : null;
  }

  /** True while GitHub asked us to wait: pollers skip a round instead of spinning. */
  get paused(): boolean {
    return Date.now() < this.pausedUntil;
  }

  /** The token that acts on `owner/repo` (the configured token, or the App's installation token, cached). */
  async tokenFor(owner: string, repo: string, refresh = false): Promise<string> {
    const auth = this.options.auth;
    if (auth.kind === 'token') return auth.token;
    const key = `${owner}/${repo}`.toLowerCase();
    let installation = this.installations.get(key);
    if (installation === undefined) {
      const jwt = await this.jwt();
      const r = await this.octokit.request('GET /repos/{owner}/{repo}/installation', {
        owner,
        repo,
        headers: { authorization: `bearer ${jwt}` },
      });
      installation = r.data.id;
      this.installations.set(key, installation);
    }
    const ikey = String(installation);
    const cached = this.tokens.get(ikey);
    if (cached && !refresh && Date.now() < cached.refreshAt) return cached.token;
    const jwt = await this.jwt();
    const r = await this.octokit.request('POST /app/installations/{installation_id}/access_tokens', {
      installation_id: installation,
      headers: { authorization: `bearer ${jwt}` },
    });
    const expires = Date.parse(r.data.expires_at);
    const life = expires - Date.now();
    // Cached until 5 minutes before it expires; a token issued for less than 10 minutes is renewed halfway.
    const refreshAt = Date.now() + (life >= 2 * REFRESH_MARGIN_MS ? life - REFRESH_MARGIN_MS : life / 2);
    this.tokens.set(ikey, { token: r.data.token, refreshAt });
    return r.data.token;
  }

  /** With App auth: the App's permissions in `owner/repo` (its installation); null with a token. */
  async installationPermissions(owner: string, repo: string): Promise<Record<string, string> | null> {
    if (this.options.auth.kind === 'token') return null;
    const r = await this.octokit.request('GET /repos/{owner}/{repo}/installation', {
      owner,
      repo,
      headers: { authorization: `bearer ${await this.jwt()}` },
    });
    return (r.data.permissions ?? {}) as Record<string, string>;
  }

  private async jwt(): Promise<string> {
    const a = await this.appAuth!({ type: 'app' });
    return a.token;
  }

  /**
   * A REST request acting on `owner/repo`; an installation token GitHub no longer accepts is renewed
   * once. Writes wait their turn on the token's write line (`urgent`: a landing, first in line).
   */
  async request<T = unknown>(
    owner: string,
    repo: string,
    route: string,
    params: RequestParameters = {},
    options: { urgent?: boolean } = {},
  ): Promise<{ status: number; data: T; headers: Record<string, unknown> }> {
    const r = await this.send<T>(owner, repo, route, params, {
      priority: options.urgent ? WritePriority.land : WritePriority.update,
    });
    if (r === null) throw new Error(`${route}: dropped`); // only writes with a key or stillWanted are dropped
    return r;
  }

  /**
   * A write with its place in line: `priority`, a `key` that a newer write replaces while it
   * waits, `stillWanted` asked when its turn comes. What it sends may be decided at that moment:
   * `params()` (instead of `params`), or `run(request)` for a write that needs its own requests
   * (e.g. an edit that falls back to a new comment). Null when it was dropped.
   */
  async write<T = unknown>(
    owner: string,
    repo: string,
    route: string,
    params: RequestParameters,
    options: WriteOptions & {
      params?: () => RequestParameters;
      run?: (
        request: Requester,
      ) => Promise<{ status: number; data: unknown; headers: Record<string, unknown> }>;
    },
  ): Promise<{ status: number; data: T; headers: Record<string, unknown> } | null> {
    await this.tokenFor(owner, repo); // finds the installation, whose line the write waits on
    const request: Requester = (r, p = {}) => this.attempt(owner, repo, r, p) as never;
    const job = options.run
      ? () => options.run!(request)
      : () => this.attempt(owner, repo, route, options.params ? options.params() : params);
    const r: unknown = await this.lineFor(owner, repo).schedule(job, options);
    return r === DROPPED ? null : (r as { status: number; data: T; headers: Record<string, unknown> });
  }

  private async send<T>(
    owner: string,
    repo: string,
    route: string,
    params: RequestParameters,
    options: WriteOptions,
  ): Promise<{ status: number; data: T; headers: Record<string, unknown> } | null> {
    if (/^GET\s/i.test(route)) return this.attempt(owner, repo, route, params) as never;
    await this.tokenFor(owner, repo);
    const r: unknown = await this.lineFor(owner, repo).schedule(
      () => this.attempt(owner, repo, route, params),
      options,
    );
    return r === DROPPED ? null : (r as { status: number; data: T; headers: Record<string, unknown> });
  }

  /** One request with a current token (an installation token GitHub refuses is renewed once). */
  private async attempt(
    owner: string,
    repo: string,
    route: string,
    params: RequestParameters,
  ): Promise<{ status: number; data: unknown; headers: Record<string, unknown> }> {
    const once = async (refresh: boolean) => {
      const token = await this.tokenFor(owner, repo, refresh);
      return this.octokit.request(route, {
        owner,
        repo,
        ...params,
        headers: { ...(params.headers ?? {}), authorization: `token ${token}` },
      });
    };
    try {
      return (await once(false)) as never;
    } catch (error) {
      if (statusOf(error) === 401 && this.options.auth.kind === 'app') return (await once(true)) as never;
      throw error;
    }
  }

  /** The write line of the token acting on `owner/repo`. */
  private lineFor(owner: string, repo: string): WriteLine {
    const installation = this.installations.get(`${owner}/${repo}`.toLowerCase());
    const key = installation === undefined ? 'token' : `installation ${installation}`;
    let line = this.lines.get(key);
    if (!line)
      this.lines.set(
        key,
        (line = new WriteLine({
          intervalMs: this.options.writeIntervalMs ?? 0,
          pausedUntil: () => this.writesPausedUntil,
        })),
      );
    return line;
  }

  /** Writes sent and dropped so far, over every line. */
  get writeCounts(): { sent: number; dropped: number; waiting: number } {
    let sent = 0;
    let dropped = 0;
    let waiting = 0;
    for (const l of this.lines.values())
      [sent, dropped, waiting] = [sent + l.sent, dropped + l.dropped, waiting + l.length];
    return { sent, dropped, waiting };
  }

  /** Drops the writes still waiting (the server stops). */
  close(): void {
    for (const l of this.lines.values()) l.close();
  }

  /** A conditional GET: answers from the last copy when GitHub says 304 Not Modified. */
  async getCached<T = unknown>(
    owner: string,
    repo: string,
    route: string,
    params: RequestParameters = {},
  ): Promise<T> {
    const key = `${owner}/${repo} ${route} ${JSON.stringify(params)}`.toLowerCase();
    const hit = this.etags.get(key);
    try {
      const r = await this.request<T>(
        owner,
        repo,
        route,
        hit ? { ...params, headers: { 'if-none-match': hit.etag } } : params,
      );
      const etag = r.headers.etag;
      if (typeof etag === 'string') {
        if (this.etags.size > 5000) this.etags.delete(this.etags.keys().next().value!);
        this.etags.set(key, { etag, data: r.data });
      }
      return r.data;
    } catch (error) {
      if (statusOf(error) === 304 && hit) return hit.data as T;
      throw error;
    }
  }

  /** Forget the cached answer of a route (its next GET is unconditional). */
  forget(owner: string, repo: string, route: string, params: RequestParameters = {}): void {
    this.etags.delete(`${owner}/${repo} ${route} ${JSON.stringify(params)}`.toLowerCase());
  }
}
