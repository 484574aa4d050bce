/** A real Railyard server (buildServer over SQLite) on 127.0.0.1 for tests. */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { buildServer, type ServerDeps } from '../../src/server/index.js';
import { parseOrgRepoPin } from '../../src/server/access/ownership.js';
import { Replicas } from '../../src/server/queue/replicas.js';
import type { GitSettings } from '../../src/forge/git/description.js';
import type { SandboxOutcomes } from '../../src/forge/sandbox/index.js';
import { createBackend } from '../../src/server/runtime.js';
import { openStore } from '../../src/store/index.js';
import type { Permission } from '../../src/contract/permissions.js';

export interface TestServerOptions {
  /** PRs come from the sandbox forge (default), with these outcomes (default: runs take 5 s and pass). */
  sandbox?: Partial<SandboxOutcomes>;
  /** PRs come from the bare repositories under this directory instead (the git forge and runner). */
  gitRoot?: string;
  /** Clock tick / repository poll intervals (ms). */
  tickMs?: number;
  pollMs?: number;
  /** Reuse a data dir (e.g. to restart a server on the same data); default: a fresh temp dir, removed on close. */
  dataDir?: string;
  /** token → organisation; default `{ 'test-token': 'local' }`. */
  tokens?: Record<string, string>;
  /** token → its label (`token create --label`; a token not named here has none). */
  labels?: Record<string, string>;
  /** token → its permissions (a token not named here has every permission). */
  permissions?: Record<string, Permission[]>;
  /** The server's clock (default Date.now): flaky-test windows and recovery are read against it. */
  now?: () => number;
  /** `serve --org-repos` values, e.g. `acme=github.com/acme/*`. */
  orgRepos?: string[];
  /** PostgreSQL instead of SQLite: the server runs as one replica among any others on this database. */
  databaseUrl?: string;
  /** PostgreSQL's statement_timeout for the server's connections (`serve --statement-timeout`). */
  statementTimeoutMs?: number;
  /** Replicas: lease length (default 5 s, short in tests that fail over). */
  leaseMs?: number;
  /** PostgreSQL: how often leases are renewed and new queues taken up (default a fifth of leaseMs). */
  renewMs?: number;
  /** HTTP timeouts (ms), e.g. short ones to test slow clients. */
  timeouts?: ServerDeps['timeouts'];
  /** Limits per organisation and per queue. */
  limits?: ServerDeps['limits'];
  /**
   * Where the workers and replicas report failures (default: stderr). A test that provokes
   * failures on purpose (a database stopped, connections terminated) collects them here and
   * asserts on them, so that a stack trace on the suite's stderr always means something.
   */
  log?: (message: string, error?: unknown) => void;
  /** Git forge: how checks are isolated and limited (`serve --checks-*`). */
  checks?: GitSettings['checks'];
  /** Outgoing webhooks (tests deliver to 127.0.0.1: pass allowPrivate and allowHttp). */
  webhooks?: ServerDeps['webhooks'];
  /** How often quarantine overrides whose end has come are announced (ms; default the server's 30 s). */
  lapseSweepMs?: number;
  /** The webhook deliverer's worker entry (default: the built one, as `serve` runs it on SQLite; false: the request thread). */
  delivererWorker?: string | false;
}

export interface TestServer {
  /** `http://127.0.0.1:PORT/v1` */
  url: string;
  /** The first token given (or `test-token`). */
  token: string;
  /** Its organisation. */
  org: string;
  dataDir: string;
  close(): Promise<void>;
}

/** A real Railyard server (buildServer over SQLite) on 127.0.0.1 and a free port. */
export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const ownDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'railyard-test-')));
  const tokens = opts.tokens ?? { 'test-token': 'local' };
  const entries = Object.entries(tokens);
  if (!entries.length) throw new Error('startTestServer: tokens must not be empty');
  const store = opts.databaseUrl
    ? await openStore({
        databaseUrl: opts.databaseUrl,
        poolSize: 5,
        statementTimeoutMs: opts.statementTimeoutMs,
      })
    : await openStore({ dataDir });
  const replicas = opts.databaseUrl
    ? new Replicas(store, {
        databaseUrl: opts.databaseUrl,
        leaseMs: opts.leaseMs,
        renewMs: opts.renewMs,
        log: opts.log,
      })
    : undefined;
  for (const [token, org] of entries)
    await store.accounts.addToken(org, token, opts.labels?.[token], opts.permissions?.[token]);
  const { driver, workers } = await createBackend({
    dataDir,
    forge:
      opts.gitRoot !== undefined
        ? { kind: 'git', settings: { gitRoot: opts.gitRoot, checks: opts.checks } satisfies GitSettings }
        : { kind: 'sandbox', settings: opts.sandbox ?? {} },
    tickMs: opts.tickMs ?? 200,
    pollMs: opts.pollMs ?? 200,
    log: opts.log,
  });
  // Flaky-test reports are read on worker threads from the built worker (`npm test` builds first).
  const reportWorker = resolve(import.meta.dirname, '../../build/flaky/ingest-worker.js');
  if (!existsSync(reportWorker))
    throw new Error(`startTestServer: ${reportWorker} is missing; run npm run build`);
  // On SQLite webhooks are delivered from the built worker thread, as `railyard serve` does.
  const delivererWorker =
    opts.delivererWorker ?? resolve(import.meta.dirname, '../../build/server/webhooks/deliverer-worker.js');
  if (delivererWorker && !existsSync(delivererWorker))
    throw new Error(`startTestServer: ${delivererWorker} is missing; run npm run build`);
  const orgRepos = (opts.orgRepos ?? []).map(parseOrgRepoPin);
  // The dashboard at / is the built one (build/web), when it was built.
  const webRoot = resolve(import.meta.dirname, '../../build/web');
  const app = await buildServer({
    store,
    driver,
    workers,
    logLevel: 'error',
    // The server's own error lines (JSON, one a line) go to the same place as the workers' reports.
    ...(opts.log ? { logStream: logLines(opts.log) } : {}),
    now: opts.now,
    reportWorker,
    delivererWorker,
    orgRepos,
    replicas,
    timeouts: opts.timeouts,
    limits: opts.limits,
    webhooks: opts.webhooks,
    lapseSweepMs: opts.lapseSweepMs,
    webRoot: existsSync(webRoot) ? webRoot : false,
  });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  const port = new URL(address).port;
  let closed = false;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    token: entries[0][0],
    org: entries[0][1],
    dataDir,
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      await store.close();
      if (ownDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** A stream of the server's JSON log lines handed one by one to `log` (message, then the error's message). */
function logLines(log: (message: string, error?: unknown) => void): Writable {
  let rest = '';
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const lines = (rest + chunk.toString()).split('\n');
      rest = lines.pop() ?? '';
      for (const line of lines.filter(Boolean)) {
        try {
          const entry = JSON.parse(line) as { msg?: string; err?: { message?: string } };
          log(entry.msg ?? line, entry.err?.message);
        } catch {
          log(line);
        }
      }
      done();
    },
  });
}
