// The GitLab emulator's REST v4 subset (`/api/v4`): routing on the raw path (a project is its numeric
// id or its URL-encoded full path; an unencoded slash is another route), PRIVATE-TOKEN / Bearer
// auth with token scopes and expiry, GitLab's error bodies (`{"message": …}`, `{"error": …}` for unknown routes and bad
// parameters), offset paging headers, RateLimit-* headers and forced 429s with Retry-After.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { routes, type Answer, type Ctx, type RouteDef } from './routes.js';
import type { Api } from './routes.js';
import { hasScope, SCOPES, tokenExpired, type TokenInfo } from './world.js';

export interface RequestRecord {
  method: string;
  path: string;
  status: number;
  token: string | null;
}

const LIMIT = 2000;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(JSON.stringify(body));
  }
}

interface Compiled extends RouteDef {
  parts: string[];
}

export class Rest {
  readonly requests: RequestRecord[] = [];
  /** Validates an answer (the emulator's self-test); returns a violation or null. */
  validator: ((method: string, template: string, status: number, body: unknown) => string | null) | null =
    null;
  readonly violations: string[] = [];
  private forced: number[] = [];
  private readonly used = new Map<string, { count: number; reset: number }>();
  private readonly table: Compiled[];

  constructor(private readonly api: Api) {
    this.table = routes().map((r) => ({ ...r, parts: r.path.split('/').filter(Boolean) }));
  }

  /** The next `n` requests answer 429 with `Retry-After: retryAfterSeconds`. */
  rateLimitNext(n: number, retryAfterSeconds: number): void {
    for (let i = 0; i < n; i++) this.forced.push(retryAfterSeconds);
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? 'GET';
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const tokenText = tokenOf(req);
    const key = tokenText ?? `ip:${req.socket.remoteAddress}`;
    const rate = this.rateHeaders(key);
    const path = url.pathname.slice('/api/v4'.length);
    const forced = this.forced.shift();
    if (forced !== undefined) {
      this.requests.push({ method, path, status: 429, token: tokenText });
      res.writeHead(429, { ...rate, 'retry-after': String(forced), 'content-type': 'text/plain' });
      res.end('Retry later\n');
      return;
    }
    const segs = url.pathname.slice('/api/v4'.length).split('/').filter(Boolean);
    let route: Compiled | undefined;
    let params: string[] = [];
    for (const r of this.table) {
      if (r.method !== method || r.parts.length !== segs.length) continue;
      const got: string[] = [];
      if (
        r.parts.every((part, i) =>
          part.startsWith(':') ? (got.push(decodeURIComponent(segs[i])), true) : part === segs[i],
        )
      ) {
        route = r;
        params = got;
        break;
      }
    }
    let answer: Answer;
    if (!route) answer = { status: 404, body: { error: '404 Not Found' } };
    else answer = await this.dispatch(route, req, url, raw, tokenText, params);
    this.requests.push({ method, path, status: answer.status, token: tokenText });
    if (this.validator && route) {
      const v = this.validator(method, route.path, answer.status, answer.body);
      if (v) this.violations.push(`${method} ${route.path} ${answer.status}: ${v}`);
    }
    const headers: Record<string, string> = {
      ...rate,
      'x-request-id': Math.random().toString(36).slice(2),
      ...answer.headers,
    };
    if (answer.body === undefined) {
      res.writeHead(answer.status, headers);
      res.end();
      return;
    }
    headers['content-type'] = 'application/json';
    res.writeHead(answer.status, headers);
    res.end(JSON.stringify(answer.body));
  }

  private async dispatch(
    route: Compiled,
    req: IncomingMessage,
    url: URL,
    raw: string,
    tokenText: string | null,
    params: string[],
  ): Promise<Answer> {
    let body: Record<string, unknown> = {};
    if (raw.length > 0) {
      const type = req.headers['content-type'] ?? '';
      if (type.includes('application/x-www-form-urlencoded'))
        body = Object.fromEntries(new URLSearchParams(raw));
      else {
        try {
          const parsed: unknown = JSON.parse(raw);
          if (parsed && typeof parsed === 'object' && !Array.isArray(parsed))
            body = parsed as Record<string, unknown>;
        } catch {
          return { status: 400, body: { error: 'The provided content-type is not supported.' } };
        }
      }
    }
    // Query parameters count as parameters too (GitLab's Grape reads both).
    for (const [k, v] of url.searchParams) if (!(k in body)) body[k] = v;
    const token: TokenInfo | null =
      tokenText === null ? null : (this.api.world.tokens.get(tokenText) ?? null);
    if (!token) return { status: 401, body: { message: '401 Unauthorized' } };
    if (tokenExpired(token))
      return { status: 401, body: { error: 'invalid_token', error_description: 'Token has expired.' } };
    // GitLab's scopes: `api` for everything, `read_api` for reads, some routes take more (route.scopes).
    const scopes = route.scopes ?? (route.method === 'GET' ? SCOPES.restRead : SCOPES.restWrite);
    if (scopes.length > 0 && !hasScope(token, scopes))
      return {
        status: 403,
        body: {
          error: 'insufficient_scope',
          error_description: 'The request requires higher privileges than provided by the access token.',
          scope: scopes.join(' '),
        },
      };
    const ctx: Ctx = { params, body, query: url.searchParams, token };
    try {
      return await route.handler(this.api, ctx);
    } catch (e) {
      if (e instanceof HttpError) return { status: e.status, body: e.body };
      throw e;
    }
  }

  private rateHeaders(key: string): Record<string, string> {
    const now = Math.floor(Date.now() / 1000);
    let e = this.used.get(key);
    if (!e || e.reset <= now) {
      e = { count: 0, reset: now + 60 };
      this.used.set(key, e);
    }
    e.count++;
    return {
      'ratelimit-name': 'throttle_authenticated_api',
      'ratelimit-limit': String(LIMIT),
      'ratelimit-observed': String(e.count),
      'ratelimit-remaining': String(Math.max(0, LIMIT - e.count)),
      'ratelimit-reset': String(e.reset),
      'ratelimit-resettime': new Date(e.reset * 1000).toUTCString(),
    };
  }
}

/** `PRIVATE-TOKEN: …` or `Authorization: Bearer …` (what @gitbeaker sends for token and OAuth auth). */
function tokenOf(req: IncomingMessage): string | null {
  const pt = req.headers['private-token'];
  if (typeof pt === 'string' && pt) return pt;
  const auth = req.headers.authorization;
  const m = auth ? /^Bearer\s+(\S+)$/i.exec(auth.trim()) : null;
  return m ? m[1] : null;
}

/** Offset paging as GitLab answers it: `page`/`per_page` (default 20, at most 100) and the x-* and link headers. */
export function paged<T>(items: T[], query: URLSearchParams, baseUrl: string): Answer {
  const perPage = Math.min(100, Math.max(1, Number(query.get('per_page') ?? 20) || 20));
  const page = Math.max(1, Number(query.get('page') ?? 1) || 1);
  const total = items.length;
  const pages = Math.max(1, Math.ceil(total / perPage));
  const slice = items.slice((page - 1) * perPage, page * perPage);
  const link = (n: number) => {
    const u = new URL(baseUrl);
    for (const [k, v] of query) u.searchParams.set(k, v);
    u.searchParams.set('page', String(n));
    u.searchParams.set('per_page', String(perPage));
    return u.toString();
  };
  const links = [];
  if (page < pages) links.push(`<${link(page + 1)}>; rel="next"`);
  if (page > 1) links.push(`<${link(page - 1)}>; rel="prev"`);
  links.push(`<${link(1)}>; rel="first"`, `<${link(pages)}>; rel="last"`);
  return {
    status: 200,
    body: slice,
    headers: {
      'x-page': String(page),
      'x-per-page': String(perPage),
      'x-total': String(total),
      'x-total-pages': String(pages),
      'x-next-page': page < pages ? String(page + 1) : '',
      'x-prev-page': page > 1 ? String(page - 1) : '',
      link: links.join(', '),
    },
  };
}
