/**
 * `railyard serve`'s run, from its options (src/commands/serve.ts builds them from flags): the log
 * stream, the forge's driver and the queue workers, the database and its tokens, the replicas
 * (PostgreSQL), the app listening, the start-up lines (the forge's after the server's own), and a
 * clean stop on SIGINT/SIGTERM. Modules are imported here, lazily, so that no other command pays for
 * Fastify, the store or the engine.
 */
import type { TicketOptions } from './tickets/config.js';
import type { ForgeDescription } from '../forge/types.js';
import type { LogLevel } from './app.js';
import type { OrgRepoPin } from './access/ownership.js';

export interface ServeOptions {
  host: string;
  port: number;
  dataDir: string;
  /** PostgreSQL when given; the embedded SQLite database in `dataDir` otherwise. */
  databaseUrl?: string;
  databasePoolSize: number;
  databaseStatementTimeoutSeconds: number;
  /** PostgreSQL: how long a replica drives a queue without renewing its lease. */
  leaseMs: number;
  /** The organisation a first token is generated for when there is none. */
  org: string;
  /** Tokens to store (only their hashes are). */
  tokens: { org: string; token: string }[];
  orgRepos: OrgRepoPin[];
  limits: { queuesPerOrg: number; prsPerQueue: number };
  /** Client connections held at once; past it new ones are closed at once. */
  maxConnections: number;
  webhooks: { allowPrivate: boolean; allowHttp: boolean; publicUrl?: string; tickets?: TicketOptions };
  landingRetryMs: number;
  /** How long a minute of testingTimeoutMinutes lasts (60 000 but in tests and demos); default 60 000. */
  testingMinuteMs?: number;
  /** The forge picked and its settings (its description's `settings`). */
  forge: { description: ForgeDescription; settings: unknown };
  version: string;
  logLevel: LogLevel;
  /** Default: pretty on a terminal, JSON otherwise. */
  logFormat?: 'json' | 'pretty';
  /** The CLI's own words, which the server does not import: a new API token, and why listening failed. */
  newToken(): string;
  listenError(error: unknown, port: number): string;
}

/** How `runServe` speaks: stdout lines, stderr lines, and a refused or failed start (never returns). */
export interface ServeIo {
  log(line: string): void;
  warn(line: string): void;
  /** A refused start: `message` for people, then exit with `code`. */
  fail(message: string, code: number): never;
  /** Exit with `code` (after a `railyard serve: …` line of its own on stderr). */
  exit(code: number): never;
}

/** Runs the server until SIGINT or SIGTERM, then stops it cleanly and returns. */
export async function runServe(options: ServeOptions, io: ServeIo): Promise<void> {
  const message = (error: unknown) => (error instanceof Error ? error.message : String(error));
  // The tracker's address obeys the rules of outgoing webhooks (it is checked again at each connection).
  const ticketUrl = options.webhooks.tickets?.apiUrl;
  if (ticketUrl) {
    const { checkEndpointUrl } = await import('./webhooks/ssrf.js');
    try {
      checkEndpointUrl(ticketUrl, options.webhooks);
    } catch (error) {
      io.fail(`--ticket-api-url: ${message(error).replace(/^url: /, '')}`, 2);
    }
  }
  // Descriptors first: a flood of connections must not starve git, the database or the logs.
  const { limitConnections, raiseOpenFilesLimit } = await import('./connections.js');
  const openFiles = raiseOpenFilesLimit();
  if (openFiles.note) io.warn(`railyard serve: ${openFiles.note}`);
  const { logLevel } = options;
  const pretty = (options.logFormat ?? (process.stdout.isTTY ? 'pretty' : 'json')) === 'pretty';
  let logStream: NodeJS.WritableStream = process.stdout;
  let settleLog = async () => {};
  if (!pretty && logLevel !== 'silent') {
    // JSON lines for machines: buffered and written without blocking requests, flushed on exit and on a crash.
    const destination = (await import('./log-destination.js')).asyncLogDestination(1);
    logStream = destination.stream;
    settleLog = () => destination.settle();
  } else if (pretty && logLevel !== 'silent') {
    const { default: pinoPretty } = await import('pino-pretty');
    logStream = pinoPretty({
      sync: true,
      colorize: Boolean(process.stdout.isTTY) && !process.env.NO_COLOR,
    });
  }
  // Errors of the queue workers go to the server's log once it exists.
  let logError = (line: string, error?: unknown) => console.error(line, error ?? '');

  const [{ buildServer }, { openDatabase }, { createBackend }] = await Promise.all([
    import('./app.js'),
    import('../store/index.js'),
    import('./runtime.js'),
  ]);
  if (options.testingMinuteMs !== undefined && options.testingMinuteMs !== 60_000) {
    (await import('../engine/index.js')).setTestingMinuteMs(options.testingMinuteMs);
    io.warn(
      `railyard serve: a minute of testingTimeoutMinutes lasts ${options.testingMinuteMs / 1000} s here (--testing-minute-seconds): for tests and demos only`,
    );
  }
  const { description, settings } = options.forge;
  let backend: Awaited<ReturnType<typeof createBackend>>;
  try {
    backend = await createBackend({
      dataDir: options.dataDir,
      forge: { kind: description.kind, settings },
      landingRetryMs: options.landingRetryMs,
      log: (line, error) => logError(line, error),
    });
  } catch (error) {
    io.fail(message(error), 2);
  }

  let store: Awaited<ReturnType<typeof openDatabase>>;
  try {
    store = await openDatabase(
      options.dataDir,
      options.databaseUrl,
      options.databasePoolSize,
      options.databaseStatementTimeoutSeconds,
    );
  } catch (error) {
    // One line, unwrapped: it names the URL (without its password) and the reason.
    process.stderr.write(`railyard serve: ${message(error)}\n`);
    io.exit(2);
  }
  for (const { org, token } of options.tokens) await store.accounts.addToken(org, token);
  let generatedToken: string | undefined;
  if ((await store.accounts.listTokens()).length === 0) {
    const token = (generatedToken = options.newToken());
    await store.accounts.addToken(options.org, token);
    io.log(
      `Generated an API token for organisation "${options.org}". It is shown only this once (only its hash is stored):`,
    );
    io.log(`  ${token}`);
  }
  const replicas = options.databaseUrl
    ? new (await import('./queue/replicas.js')).Replicas(store, {
        databaseUrl: options.databaseUrl,
        leaseMs: options.leaseMs,
      })
    : undefined;
  const app = await buildServer({
    store,
    driver: backend.driver,
    workers: backend.workers,
    version: options.version,
    orgRepos: options.orgRepos,
    replicas,
    limits: options.limits,
    webhooks: options.webhooks,
    logLevel,
    logStream,
  });
  logError = (line, error) => app.log.error({ err: error }, line);
  try {
    limitConnections(app.server, options.maxConnections, (line) => logError(line, undefined));
    await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    // Taken between the check and now, or not ours to bind: one line, then a clean stop.
    process.stderr.write(`railyard serve: ${options.listenError(error, options.port)}\n`);
    await app.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    io.exit(1);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const url = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  io.log(`Railyard API listening on ${url}/v1`);
  io.log(`Web dashboard on ${url}/ (it asks for an API token once)`);
  for (const line of description.startup?.(settings, url) ?? []) io.log(line);
  // How to point the CLI at this server (a wildcard address is reached on the loopback).
  const cliHost =
    options.host === '0.0.0.0' || options.host === '::'
      ? '127.0.0.1'
      : options.host.includes(':')
        ? `[${options.host}]`
        : options.host;
  io.log(`Point the CLI at it:\n  railyard config set api-url http://${cliHost}:${port}/v1`);
  io.log(`  railyard config set token ${generatedToken ?? 'TOKEN   (the token this server was given)'}`);

  await new Promise<void>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        io.warn(`${signal} again: exiting without waiting`);
        process.exit(1);
      }
      stopping = true;
      app.log.info({ signal }, 'stopping: finishing requests in flight and queued commands');
      // Stop accepting, finish in-flight requests and queued commands, then close the database.
      app
        .close()
        .then(() => store.close())
        .then(
          async () => {
            // The last line after every earlier one: the write in flight ends before exit flushes.
            await settleLog();
            app.log.info('stopped cleanly');
            await settleLog();
            resolve();
          },
          (error: unknown) => {
            app.log.error({ err: error }, 'error while stopping');
            io.warn(`error while stopping: ${message(error)}`);
            process.exit(1);
          },
        );
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
