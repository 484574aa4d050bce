// The emulator's HTTP side: one server for git over smart HTTP (`git http-backend`) and the REST
// API (routes in routes-pulls.ts and routes-repo.ts), with GitHub's auth, rate-limit headers,
// conditional requests, error bodies and the schema check of every answer.
import { createHash, randomBytes, randomUUID, verify as verifySig } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { EmulatorProtection } from './protection.js';
import { pullRoutes } from './routes-pulls.js';
import { repoRoutes } from './routes-repo.js';
import { rulesRoutes } from './routes-rules.js';
import { APP_EVENTS, APP_PERMISSIONS, iso, nodeId, userJson } from './json.js';
import {
  commitEnv,
  HttpError,
  notFound,
  RATE_LIMIT,
  userJsonId,
  type Answer,
  type AppState,
  type Ctx,
  type Installation,
  type Pr,
  type Repo,
  type Route,
  type TokenInfo,
} from './types.js';

export abstract class EmulatorHttp extends EmulatorProtection {
  readonly routes: Route[] = this.buildRoutes();

  // --- internals: HTTP -----------------------------------------------------------------------

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://x');
    const git = /^\/([^/]+)\/([^/]+)\.git(\/.*)$/.exec(url.pathname);
    if (git && !url.pathname.startsWith(`${this.prefix}/`))
      return this.handleGit(req, res, git[1], git[2], git[3], url.search.slice(1));
    if (this.prefix && !url.pathname.startsWith(`${this.prefix}/`) && url.pathname !== this.prefix) {
      res.statusCode = 404;
      res.end('Not Found');
      return;
    }
    return this.handleRest(req, res, url);
  }

  tokenFromBasic(header: string | undefined): string | null {
    if (!header) return null;
    const trimmed = header.trim();
    const space = trimmed.search(/\s/);
    if (space <= 0) return null;
    const m = [trimmed, trimmed.slice(0, space), trimmed.slice(space).trim()];
    if (!m[2]) return null;
    const scheme = m[1].toLowerCase();
    if (scheme === 'bearer' || scheme === 'token') return m[2];
    if (scheme !== 'basic') return null;
    const decoded = Buffer.from(m[2], 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    const user = i < 0 ? decoded : decoded.slice(0, i);
    const pass = i < 0 ? '' : decoded.slice(i + 1);
    if (pass && pass !== 'x-oauth-basic') return pass;
    return user || null;
  }

  validToken(text: string | null): TokenInfo | null {
    if (text === null) return null;
    const t = this.tokens.get(text);
    if (!t) return null;
    if (t.expiresAt !== undefined && t.expiresAt <= Date.now()) return null;
    return t;
  }

  canSee(t: TokenInfo, r: Repo): boolean {
    if (t.kind === 'pat') return true;
    const inst = this.installations.get(t.installationId!);
    return inst !== undefined && inst.owner === r.owner && inst.repo === r.name;
  }

  async handleGit(
    req: IncomingMessage,
    res: ServerResponse,
    owner: string,
    name: string,
    rest: string,
    query: string,
  ): Promise<void> {
    const r = this.repos.get(`${owner}/${name}`);
    const token = this.validToken(this.tokenFromBasic(req.headers.authorization));
    if (!token) {
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Basic realm="GitHub"', 'content-type': 'text/plain' });
      res.end(
        req.headers.authorization
          ? 'Invalid username or token. Password authentication is not supported for Git operations.\n'
          : 'Authentication required\n',
      );
      return;
    }
    if (!r || !this.canSee(token, r)) {
      req.resume();
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('Repository not found.\n');
      return;
    }
    const isPush = rest === '/git-receive-pack' && req.method === 'POST';
    // After a push, the emulator reacts (PR updates, push event, CI) before git's answer completes,
    // so a test's `git push` returns with GitHub's state already updated.
    const afterPush = isPush
      ? () => this.track(this.locked(r, () => this.syncRefs(r, token.login)))
      : undefined;
    const startedAt = Date.now();
    await this.git.serveHttpBackend(
      req,
      res,
      this.reposRoot,
      `/${owner}/${name}.git${rest}`,
      query,
      token.login,
      afterPush,
      rest === '/git-upload-pack' && req.method === 'POST' ? r.gitReadDelayMs : 0,
    );
    this.gitRequests.push({ owner, repo: name, method: req.method ?? 'GET', path: query ? `${rest}?${query}` : rest, at: startedAt, ms: Date.now() - startedAt });
  }

  rateHeaders(key: string, count: boolean): Record<string, string> {
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

  async handleRest(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    // Octokit sends `heads/x` as `heads%2Fx`; GitHub reads both.
    const path = url.pathname.slice(this.prefix.length).replace(/%2F/gi, '/') || '/';
    const method = req.method ?? 'GET';
    const startedAt = Date.now();
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const tokenText = this.tokenFromBasic(req.headers.authorization);
    const rateKey = tokenText ?? `ip:${req.socket.remoteAddress}`;
    const route = this.routes.find((rt) => rt.method === method && rt.re.test(path));
    const isRateLimitEndpoint = route?.template === '/rate_limit';
    let headers = this.rateHeaders(rateKey, !isRateLimitEndpoint);
    let answer: Answer;
    const forced = this.forced.shift();
    if (forced && forced.kind === 'primary') {
      const e = this.rateUsed.get(rateKey)!;
      e.used = RATE_LIMIT;
      headers = this.rateHeaders(rateKey, false);
      const who = this.tokens.get(tokenText ?? '');
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
        headers: { 'retry-after': String(forced.retryAfter) },
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
      const fault = this.landingFault(method, route, path);
      if (fault && !fault.after) answer = { status: 0 };
      else answer = await this.dispatch(route, req, path, url, raw, tokenText);
      if (fault) {
        // A blip of GitHub or the network (failLanding): no answer, or GitHub's HTML error page.
        this.requests.push({ method, path, status: fault.answer === 'drop' ? 0 : fault.answer, token: tokenText, at: startedAt, ms: Date.now() - startedAt });
        if (fault.answer === 'drop') {
          req.socket.destroy();
          return;
        }
        res.writeHead(fault.answer, { 'content-type': 'text/html' });
        res.end(`<html><body><h1>${fault.answer} ${fault.answer === 502 ? 'Bad Gateway' : 'Service Unavailable'}</h1></body></html>\n`);
        return;
      }
    }
    const body = answer.body === undefined ? '' : JSON.stringify(answer.body);
    const out: Record<string, string> = {
      ...headers,
      'x-github-request-id': randomBytes(8).toString('hex').toUpperCase(),
      'x-github-media-type': 'github.v3; format=json',
      ...(this.style === 'ghes' ? { 'x-github-enterprise-version': '3.19.0' } : {}),
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
    if (this.validator && status !== 304) {
      const v = this.validator.response(method, route?.template ?? path, status, answer.body);
      if (v) this.schemaViolations.push(`${method} ${path} ${status}: ${v}`);
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

  /** The landing fault this request meets (failLanding), taken off the list; null for most requests. */
  landingFault(method: string, route: Route, path: string): { answer: 502 | 503 | 'drop'; after: boolean } | null {
    const landing =
      (method === 'PATCH' && route.template === '/repos/{owner}/{repo}/git/refs/{ref}' && /\/git\/refs\/heads\//.test(path)) ||
      (method === 'PUT' && route.template === '/repos/{owner}/{repo}/pulls/{pull_number}/merge');
    if (!landing) return null;
    const m = /^\/repos\/([^/]+)\/([^/]+)\//.exec(path);
    const list = m ? this.landingFaults.get(`${m[1]}/${m[2]}`.toLowerCase()) : undefined;
    return list?.shift() ?? null;
  }

  async dispatch(
    route: Route,
    req: IncomingMessage,
    path: string,
    url: URL,
    raw: string,
    tokenText: string | null,
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
      token = this.validToken(tokenText);
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
      return await route.handler({ req, params, query: url.searchParams, body, token, tokenText, app });
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
  checkJwt(text: string | null): string | AppState {
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
    const app = this.apps.get(Number(claims.iss));
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

  repoFor(c: Ctx): Repo {
    const r = this.repos.get(`${c.params[0]}/${c.params[1]}`);
    if (!r || !c.token || !this.canSee(c.token, r)) throw new HttpError(404, 'Not Found');
    return r;
  }

  prFor(r: Repo, n: string): Pr {
    const p = /^\d+$/.test(n) ? r.prs.get(Number(n)) : undefined;
    if (!p) throw new HttpError(404, 'Not Found');
    return p;
  }

  async resolveRef(r: Repo, ref: string): Promise<string | null> {
    if (/^[0-9a-f]{40}$/.test(ref)) return this.resolve(r, ref);
    return (
      (await this.resolve(r, `refs/heads/${ref}`)) ??
      (await this.resolve(r, ref.startsWith('refs/') ? ref : `refs/${ref}`))
    );
  }

  refJson(r: Repo, ref: string, sha: string) {
    const api = `${this.urls.api}/repos/${r.owner}/${r.name}`;
    return {
      ref,
      node_id: nodeId('Ref', r.id),
      url: `${api}/git/${ref}`,
      object: { sha, type: 'commit', url: `${api}/git/commits/${sha}` },
    };
  }

  installationJson(inst: Installation, app: AppState) {
    return {
      id: inst.id,
      account: userJson(this.urls, inst.owner),
      repository_selection: 'selected',
      access_tokens_url: `${this.urls.api}/app/installations/${inst.id}/access_tokens`,
      repositories_url: `${this.urls.api}/installation/repositories`,
      html_url: `${this.urls.web}/settings/installations/${inst.id}`,
      app_id: app.id,
      app_slug: app.slug,
      target_id: userJsonId(inst.owner),
      target_type: 'User',
      permissions: { ...APP_PERMISSIONS },
      events: [...APP_EVENTS],
      created_at: iso(inst.createdAt),
      updated_at: iso(inst.createdAt),
      single_file_name: null,
      has_multiple_single_files: false,
      single_file_paths: [],
      suspended_by: null,
      suspended_at: null,
    };
  }

  /** Rebase-merge: replays head's commits onto base in a temporary worktree. */
  async rebase(r: Repo, baseSha: string, headSha: string, actor: string): Promise<string> {
    if (await this.isAncestor(r, baseSha, headSha)) return headSha;
    const wt = join(this.root, `wt-${randomUUID()}`);
    await this.git.git(r.dir, ['worktree', 'add', '--detach', '-q', wt, headSha]);
    try {
      const res = await this.git.run(['rebase', '-q', baseSha], {
        cwd: wt,
        env: commitEnv(actor),
        okCodes: [1, 128],
      });
      if (res.code !== 0) throw new HttpError(405, 'Pull Request is not mergeable');
      return (await this.git.run(['rev-parse', 'HEAD'], { cwd: wt })).stdout;
    } finally {
      await this.git.git(r.dir, ['worktree', 'remove', '--force', wt]).catch(() => undefined);
      rmSync(wt, { recursive: true, force: true });
      await this.git.git(r.dir, ['worktree', 'prune']).catch(() => undefined);
    }
  }

  async start(): Promise<void> {
    if (this.opts.validate) {
      const { loadValidator } = await import('./validate.js');
      this.validator = await loadValidator(this.style);
    }
    const server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) {
          res.statusCode = 500;
          res.setHeader('content-type', 'application/json; charset=utf-8');
        }
        res.end(JSON.stringify({ message: `emulator error: ${String(err)}` }));
      });
    });
    server.keepAliveTimeout = 1000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.server = server;
    const port = (server.address() as { port: number }).port;
    this.host = `127.0.0.1:${port}`;
    this.urls = { api: `http://${this.host}${this.prefix}`, web: `http://${this.host}` };
    this.apiUrl = this.urls.api;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.endWork();
    this.abort.abort();
    if (this.server) {
      this.server.closeAllConnections();
      await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    }
    await this.git.stop();
    await Promise.allSettled([...this.background]);
    await this.git.stop();
    rmSync(this.root, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
  }

  buildRoutes(): Route[] {
    const routes: Route[] = [];
    const seg = '([^/]+)';
    const add = (
      method: string,
      template: string,
      doc: string,
      auth: Route['auth'],
      handler: Route['handler'],
      re?: RegExp,
    ) => {
      const pattern = re ?? new RegExp(`^${template.replace(/\{[^{}]+\}/g, seg)}$`);
      routes.push({
        method,
        template,
        re: pattern,
        doc: `https://docs.github.com/${this.style === 'ghes' ? 'enterprise-server@3.19/' : ''}rest/${doc}`,
        auth,
        handler,
      });
    };
    pullRoutes(this, add);
    repoRoutes(this, add);
    rulesRoutes(this, add);
    return routes;
  }
}
