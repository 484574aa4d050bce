// Git over smart HTTP for the forge emulators: one request served by `git http-backend` (a CGI
// process per request, tracked by the emulator's GitRunner), its CGI headers turned into the HTTP
// answer. A hook can run before the answer ends (a push processed first) and an answer can be held
// back (a slow git read). Also the bits of a request both emulators read: HTTP Basic credentials.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { GitRunner } from './runner.js';

export const HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

export interface HttpBackendRequest {
  /** GIT_PROJECT_ROOT: the directory the repositories live under. */
  projectRoot: string;
  /** `/owner/repo.git/...`, below `projectRoot`. */
  pathInfo: string;
  query: string;
  /** REMOTE_USER, what a pre-receive hook sees as the pusher. */
  remoteUser: string;
  /** Runs after git finished and before the answer ends. */
  beforeEnd?: () => Promise<void>;
  /** The answer is held back this long after git wrote it (what it says was read before). */
  holdMs?: number;
}

/** Serves one smart-HTTP request with git http-backend; resolves once the answer has ended. */
export function serveHttpBackend(
  git: GitRunner,
  req: IncomingMessage,
  res: ServerResponse,
  o: HttpBackendRequest,
): Promise<void> {
  const holdMs = o.holdMs ?? 0;
  if (git.stopped) {
    res.statusCode = 503;
    res.end();
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const env: Record<string, string> = {
      ...process.env,
      ...git.env(),
      GIT_PROJECT_ROOT: o.projectRoot,
      GIT_HTTP_EXPORT_ALL: '1',
      PATH_INFO: o.pathInfo,
      REQUEST_METHOD: req.method ?? 'GET',
      QUERY_STRING: o.query,
      REMOTE_USER: o.remoteUser,
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      SERVER_PROTOCOL: 'HTTP/1.1',
    };
    if (req.headers['content-type']) env.CONTENT_TYPE = req.headers['content-type'];
    if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
    const enc = req.headers['content-encoding'];
    if (typeof enc === 'string') env.HTTP_CONTENT_ENCODING = enc;
    const proto = req.headers['git-protocol'];
    if (typeof proto === 'string') env.HTTP_GIT_PROTOCOL = proto;
    const child = git.spawn(HTTP_BACKEND, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    req.pipe(child.stdin!);
    child.stdin!.on('error', () => {});
    child.stderr!.on('data', () => {});
    let head = Buffer.alloc(0);
    let headersDone = false;
    const held: Buffer[] = [];
    const onData = (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      let end = head.indexOf('\r\n\r\n');
      let sepLen = 4;
      if (end < 0) {
        end = head.indexOf('\n\n');
        sepLen = 2;
      }
      if (end < 0) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString('latin1').split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i < 0) continue;
        const name = line.slice(0, i).trim();
        const value = line.slice(i + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else res.setHeader(name, value);
      }
      res.statusCode = status;
      const rest = head.subarray(end + sepLen);
      if (rest.length > 0) res.write(rest);
    };
    child.stdout!.on('data', (chunk: Buffer) => (holdMs > 0 ? held.push(chunk) : onData(chunk)));
    child.on('error', () => {
      if (!res.headersSent) res.statusCode = 500;
      res.end();
      resolve();
    });
    child.on('close', () => {
      const end = () => {
        res.end();
        resolve();
      };
      const finish = () => {
        for (const chunk of held) onData(chunk);
        if (!headersDone && !res.headersSent) res.statusCode = 500;
        if (o.beforeEnd) o.beforeEnd().then(end, end);
        else end();
      };
      if (holdMs > 0 && !git.stopped) setTimeout(finish, holdMs);
      else finish();
    });
  });
}

/** The user name and password of an `Authorization: Basic …` header, or null for another scheme. */
export function basicCredentials(header: string | undefined): { user: string; password: string } | null {
  const m = header ? /^Basic\s+(\S+)$/i.exec(header.trim()) : null;
  if (!m) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  return i < 0
    ? { user: decoded, password: '' }
    : { user: decoded.slice(0, i), password: decoded.slice(i + 1) };
}
