// Git plumbing for the GitHub and GitLab emulators: every child process it starts is tracked so
// close() can end it; resolving revisions, ancestry and commits written straight into a bare repository.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';

const ZERO_SHA = '0000000000000000000000000000000000000000';

export const HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

export class GitRunner {
  readonly children = new Set<ChildProcess>();
  private stopped = false;

  /** Runs git; resolves with stdout (trimmed of its final newline). Rejects on a non-zero exit unless `okCodes` lists it. */
  async run(
    args: string[],
    opts: { cwd?: string; env?: Record<string, string>; input?: string; okCodes?: number[] } = {},
  ): Promise<{ stdout: string; code: number }> {
    if (this.stopped) return Promise.reject(new Error('the GitHub emulator is closed'));
    return new Promise((resolve, reject) => {
      const child = spawn('git', args, {
        cwd: opts.cwd,
        env: { ...process.env, ...gitEnv(), ...opts.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      this.children.add(child);
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', (e) => {
        this.children.delete(child);
        reject(e);
      });
      child.on('close', (code) => {
        this.children.delete(child);
        const stdout = Buffer.concat(out).toString('utf8').replace(/\n$/, '');
        const c = code ?? -1;
        if (c === 0 || opts.okCodes?.includes(c)) resolve({ stdout, code: c });
        else
          reject(
            new Error(`git ${args.join(' ')} failed (${c}): ${Buffer.concat(err).toString('utf8').trim()}`),
          );
      });
      child.stdin.on('error', () => {});
      child.stdin.end(opts.input ?? '');
    });
  }

  async git(
    gitDir: string,
    args: string[],
    opts: { env?: Record<string, string>; input?: string } = {},
  ): Promise<string> {
    return (await this.run(['--git-dir', gitDir, ...args], opts)).stdout;
  }

  /** The commit `rev` names in the bare repository `dir`, or null. */
  async resolve(dir: string, rev: string): Promise<string | null> {
    const res = await this.run(['--git-dir', dir, 'rev-parse', '--verify', '--quiet', `${rev}^{commit}`], { okCodes: [1, 128] });
    return res.code === 0 ? res.stdout : null;
  }

  /** Whether `a` is an ancestor of `b` (false when either is unknown). */
  async isAncestor(dir: string, a: string, b: string): Promise<boolean> {
    const res = await this.run(['--git-dir', dir, 'merge-base', '--is-ancestor', a, b], { okCodes: [1, 128] });
    return res.code === 0;
  }

  /**
   * A commit on `parent` writing `files` (null deletes a file; none: an empty commit), made with a
   * temporary index under `scratch` and the author/committer of `env`.
   */
  async commitFiles(
    dir: string,
    scratch: string,
    parent: string,
    files: Record<string, string | null>,
    message: string,
    env: Record<string, string>,
  ): Promise<string> {
    const index = join(scratch, `index-${randomUUID()}`);
    const withIndex = { GIT_INDEX_FILE: index };
    try {
      await this.git(dir, ['read-tree', parent], { env: withIndex });
      const lines: string[] = [];
      for (const [path, content] of Object.entries(files)) {
        if (content === null) lines.push(`0 ${ZERO_SHA}\t${path}`);
        else lines.push(`100644 ${await this.git(dir, ['hash-object', '-w', '--stdin'], { input: content })}\t${path}`);
      }
      if (lines.length > 0)
        await this.git(dir, ['update-index', '--add', '--remove', '--index-info'], { env: withIndex, input: lines.join('\n') + '\n' });
      const tree = await this.git(dir, ['write-tree'], { env: withIndex });
      return await this.git(dir, ['commit-tree', tree, '-p', parent, '-m', message], { env });
    } finally {
      rmSync(index, { force: true });
    }
  }

  /** Serves one smart-HTTP request with git http-backend (CGI). `pathInfo` is `/owner/repo.git/...`. */
  serveHttpBackend(
    req: IncomingMessage,
    res: ServerResponse,
    projectRoot: string,
    pathInfo: string,
    query: string,
    remoteUser: string,
    beforeEnd?: () => Promise<void>,
    /** The answer is held back this long after git wrote it (what it says was read before). */
    holdMs = 0,
  ): Promise<void> {
    if (this.stopped) {
      res.statusCode = 503;
      res.end();
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const env: Record<string, string> = {
        ...process.env,
        ...gitEnv(),
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: pathInfo,
        REQUEST_METHOD: req.method ?? 'GET',
        QUERY_STRING: query,
        REMOTE_USER: remoteUser,
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
      const child = spawn(HTTP_BACKEND, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
      this.children.add(child);
      req.pipe(child.stdin);
      child.stdin.on('error', () => {});
      child.stderr.on('data', () => {});
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
      child.stdout.on('data', (chunk: Buffer) => (holdMs > 0 ? held.push(chunk) : onData(chunk)));
      child.on('error', () => {
        this.children.delete(child);
        if (!res.headersSent) res.statusCode = 500;
        res.end();
        resolve();
      });
      child.on('close', () => {
        this.children.delete(child);
        const end = () => {
          res.end();
          resolve();
        };
        const finish = () => {
          for (const chunk of held) onData(chunk);
          if (!headersDone && !res.headersSent) res.statusCode = 500;
          if (beforeEnd) beforeEnd().then(end, end);
          else end();
        };
        if (holdMs > 0 && !this.stopped) setTimeout(finish, holdMs);
        else finish();
      });
    });
  }

  /** Refuses new processes, kills the running ones and resolves once they have all exited. */
  async stop(): Promise<void> {
    this.stopped = true;
    const exits = [...this.children].map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) resolve();
          else {
            c.once('exit', () => resolve());
            c.kill('SIGKILL');
          }
        }),
    );
    await Promise.all(exits);
  }
}

/** No user or system config, a fixed identity: the emulator's git must not depend on the machine. */
function gitEnv(): Record<string, string> {
  return {
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_AUTHOR_NAME: 'GitHub',
    GIT_AUTHOR_EMAIL: 'noreply@github.com',
    GIT_COMMITTER_NAME: 'GitHub',
    GIT_COMMITTER_EMAIL: 'noreply@github.com',
  };
}
