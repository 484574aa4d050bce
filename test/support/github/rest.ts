// The GitHub emulator's REST API (`/api/v3` for GHES, the root for api.github.com): routing on the
// route table (routes.ts), auth (PATs, installation tokens, App JWTs), GitHub's error bodies,
// rate-limit headers and forced 403/429s, weak ETags with 304s, landing faults, and the schema check
// of every answer. Every request is recorded with its timing.
import { createHash, randomBytes, randomUUID, verify as verifySig } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LandingFaults } from './faults.js';
import { userJsonId } from './json.js';
import { routes, type Answer, type Api, type Route } from './routes.js';
import type { AppState, TokenInfo } from './world.js';

/** Requests per token per hour. */
export const RATE_LIMIT = 5000;

export interface RequestRecord {
  method: string;
  path: string;
  status: number;
  token: string | null;
  /** When the request arrived (ms since the epoch) and how long the answer took. */
  at: number;
  ms: number;
}

/** A GitHub error: `{ message, documentation_url, status, …extra }` with `status`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export class Rest {
  readonly requests: RequestRecord[] = [];
  private readonly rateUsed = new Map<string, { used: number; reset: number }>();
  private forced: Array<{ kind: 'primary' | 'secondary'; retryAfter: number | null; status: 403 | 429 }> = [];
  private readonly table: Route[];

  constructor(
    private readonly api: Api,
    private readonly faults: LandingFaults,
  ) {
    this.table = routes(api);
  }

  /** The next `n` requests answer as a primary (403) or secondary (403/429 with retry-after) limit. */
  rateLimitNext(
    n: number,
    kind: 'primary' | 'secondary',
    retryAfterSeconds: number | null,
    status: 403 | 429,
  ): void {
    for (let i = 0; i < n; i++) this.forced.push({ kind, retryAfter: retryAfterSeconds, status });
  }

  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const w = this.api.world;
    // Octokit sends `heads/x` as `heads%2Fx`; GitHub reads both.
    const path = url.pathname.slice(w.prefix.length).replace(/%2F/gi, '/') || '/';
    const method = req.method ?? 'GET';
    const startedAt = Date.now();
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const tokenText = tokenOf(req.headers.authorization);
    const rateKey = tokenText ?? `ip:${req.socket.remoteAddress}`;
    const route = this.table.find((rt) => rt.method === method && rt.re.test(path));
    const isRateLimitEndpoint = route?.template === '/rate_limit';
    let headers = this.rateHeaders(rateKey, !isRateLimitEndpoint);
    let answer: Answer;
    const forced = this.forced.shift();
    if (forced && forced.kind === 'primary') {
      const e = this.rateUsed.get(rateKey)!;
      e.used = RATE_LIMIT;
      headers = this.rateHeaders(rateKey, false);
      const who = w.tokens.get(tokenText ?? '');
      answer = {
        status: 403,
        body: {
          message: `API rate limit exceeded for ${who?.kind === 'installation' ? `installation ID ${who.installationId}` : `user ID ${who ? userJsonId(who.login) : 0}`}. If you reach out to GitHub Support for help, please include the request ID ${randomUUID()}.`,
          documentation_url:
            'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits',
          status: '403',
        },
      };
      // The window resets after a second, so clients that wait for reset do not wait long.
      e.reset = Math.floor(Date.now() / 1000) + 1;
      headers['x-ratelimit-reset'] = String(e.reset);
      e.used = 0;
    } else if (forced) {
      answer = {
        status: forced.status,
        headers: forced.retryAfter === null ? {} : { 'retry-after': String(forced.retryAfter) },
        body: {
          message: `You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID ${randomUUID()}.`,
          documentation_url:
            'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
          status: String(forced.status),
        },
      };
    } else if (!route) {
      answer = notFound('https://docs.github.com/rest');
    } else {
      const fault = this.faults.take(method, route.template, path);
      if (fault && !fault.after) answer = { status: 0 };
      else answer = await this.dispatch(route, req, path, url, raw, tokenText, headers);
      if (fault) {
        // A blip of GitHub or the network (failLanding): no answer, or GitHub's HTML error page.
        this.requests.push({
          method,
          path,
          status: fault.answer === 'drop' ? 0 : fault.answer,
          token: tokenText,
          at: startedAt,
          ms: Date.now() - startedAt,
        });
        LandingFaults.answer(fault, req, res);
        return;
      }
    }
    const body = answer.body === undefined ? '' : JSON.stringify(answer.body);
    const out: Record<string, string> = {
      ...headers,
      'x-github-request-id': randomBytes(8).toString('hex').toUpperCase(),
      'x-github-media-type': 'github.v3; format=json',
      ...(w.style === 'ghes' ? { 'x-github-enterprise-version': '3.19.0' } : {}),
      ...answer.headers,
    };
    let status = answer.status;
    if (method === 'GET' && status === 200) {
      const etag = `W/"${createHash('sha256').update(body).digest('hex')}"`;
      out.etag = etag;
      out['cache-control'] = 'private, max-age=60, s-maxage=60';
      out.vary = 'Accept, Authorization, Cookie, X-GitHub-OTP';
      const inm = req.headers['if-none-match'];
      if (inm && inm.split(',').some((t) => t.trim() === etag || t.trim() === etag.slice(2))) {
        status = 304;
        // Conditional requests that answer 304 do not count against the rate limit.
        const e = this.rateUsed.get(rateKey);
        if (e && !isRateLimitEndpoint) e.used = Math.max(0, e.used - 1);
        Object.assign(out, this.rateHeaders(rateKey, false));
      }
    }
    this.requests.push({ method, path, status, token: tokenText, at: startedAt, ms: Date.now() - startedAt });
    if (w.validator && status !== 304) {
      const v = w.validator.response(method, route?.template ?? path, status, answer.body);
      if (v) w.schemaViolations.push(`${method} ${path} ${status}: ${v}`);
    }
    if (status === 304 || answer.body === undefined) {
      res.writeHead(status, out);
      res.end();
      return;
    }
    out['content-type'] = 'application/json; charset=utf-8';
    res.writeHead(status, out);
    res.end(body);
  }

  private rateHeaders(key: string, count: boolean): Record<string, string> {
    const now = Math.floor(Date.now() / 1000);
    let e = this.rateUsed.get(key);
    if (!e || e.reset <= now) {
      e = { used: 0, reset: now + 3600 };
      this.rateUsed.set(key, e);
    }
    if (count) e.used++;
    return {
      'x-ratelimit-limit': String(RATE_LIMIT),
      'x-ratelimit-remaining': String(Math.max(0, RATE_LIMIT - e.used)),
      'x-ratelimit-reset': String(e.reset),
      'x-ratelimit-used': String(e.used),
      'x-ratelimit-resource': 'core',
    };
  }

  private async dispatch(
    route: Route,
    req: IncomingMessage,
    path: string,
    url: URL,
    raw: string,
    tokenText: string | null,
    rate: Record<string, string>,
  ): Promise<Answer> {
    const params = route.re
      .exec(path)!
      .slice(1)
      .map((s) => decodeURIComponent(s));
    let body: Record<string, unknown> = {};
    if (raw.length > 0) {
      try {
        const parsed: unknown = JSON.parse(raw);
        if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
          throw new Error('not an object');
        body = parsed as Record<string, unknown>;
      } catch {
        return {
          status: 400,
          body: { message: 'Problems parsing JSON', documentation_url: route.doc, status: '400' },
        };
      }
    }
    let token: TokenInfo | null = null;
    let app: AppState | null = null;
    if (route.auth === 'jwt') {
      const checked = this.checkJwt(tokenText);
      if (typeof checked === 'string')
        return { status: 401, body: { message: checked, documentation_url: route.doc, status: '401' } };
      app = checked;
    } else if (route.auth === 'token') {
      if (tokenText === null)
        return {
          status: 401,
          body: { message: 'Requires authentication', documentation_url: route.doc, status: '401' },
        };
      token = this.api.world.validToken(tokenText);
      if (!token)
        return {
          status: 401,
          body: {
            message: 'Bad credentials',
            documentation_url: 'https://docs.github.com/rest',
            status: '401',
          },
        };
    }
    try {
      return await route.handler({ req, params, query: url.searchParams, body, token, tokenText, app, rate });
    } catch (e) {
      if (e instanceof HttpError) {
        return {
          status: e.status,
          body: { message: e.message, documentation_url: route.doc, ...e.extra, status: String(e.status) },
        };
      }
      throw e;
    }
  }

  /** Verifies an App JWT (RS256, iss = app id, exp in the future and at most 10 minutes after iat); returns GitHub's message when bad. */
  private checkJwt(text: string | null): string | AppState {
    if (text === null) return 'A JSON web token could not be decoded';
    const parts = text.split('.');
    if (parts.length !== 3) return 'A JSON web token could not be decoded';
    let header: { alg?: string };
    let claims: { iss?: string | number; exp?: number; iat?: number };
    try {
      header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8')) as { alg?: string };
      claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return 'A JSON web token could not be decoded';
    }
    if (header.alg !== 'RS256') return 'A JSON web token could not be decoded';
    const app = this.api.world.apps.get(Number(claims.iss));
    if (!app) return `Integration not found`;
    const ok = verifySig(
      'RSA-SHA256',
      Buffer.from(`${parts[0]}.${parts[1]}`),
      app.publicKey,
      Buffer.from(parts[2], 'base64url'),
    );
    if (!ok) return 'A JSON web token could not be decoded';
    const now = Math.floor(Date.now() / 1000);
    if (typeof claims.exp !== 'number' || claims.exp <= now)
      return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires";
    if (typeof claims.iat !== 'number' || claims.iat > now + 60)
      return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued";
    if (claims.exp - claims.iat > 600 + 60) return "'Expiration time' claim ('exp') is too far in the future";
    return app;
  }
}

/**
 * The token of an Authorization header, for REST and git alike: `Bearer|token <t>`, or HTTP Basic
 * with the token as password (`x-access-token:<t>`) or as user name (`<t>:x-oauth-basic`, `<t>:`).
 */
export function tokenOf(header: string | undefined): string | null {
  if (!header) return null;
  const trimmed = header.trim();
  const space = trimmed.search(/\s/);
  if (space <= 0) return null;
  const scheme = trimmed.slice(0, space).toLowerCase();
  const value = trimmed.slice(space).trim();
  if (!value) return null;
  if (scheme === 'bearer' || scheme === 'token') return value;
  if (scheme !== 'basic') return null;
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  const user = i < 0 ? decoded : decoded.slice(0, i);
  const pass = i < 0 ? '' : decoded.slice(i + 1);
  if (pass && pass !== 'x-oauth-basic') return pass;
  return user || null;
}

/** GitHub's 404 for an unknown route. */
export function notFound(doc: string): Answer {
  return { status: 404, body: { message: 'Not Found', documentation_url: doc, status: '404' } };
}
