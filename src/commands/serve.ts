import { randomBytes } from 'node:crypto';
import { Command, Flags } from '@oclif/core';
import type { LogLevel } from '../server/index.js';

function parseOrgToken(value: string): { org: string; token: string } {
  const at = value.indexOf('=');
  if (at <= 0 || at === value.length - 1) throw new Error(`--org-token: expected ORG=TOKEN, got "${value}"`);
  return { org: value.slice(0, at), token: value.slice(at + 1) };
}

export default class Serve extends Command {
  static override summary = 'Run the Railyard API server (Trunk v1 compatible) on the embedded database';

  static override description =
    'Serves the v1 API under /v1 on HOST:PORT, storing its data in --data-dir (SQLite). ' +
    'Every request but /v1/status and /v1/openapi.json needs an x-api-token. Without --token, a token is ' +
    'generated on the first start, printed once, and only its hash is stored. Logs to stdout through pino: one line per request ' +
    '(method, route, status, duration, organisation, request id) and per queue event (PR state changes, test runs, merges). ' +
    'Stops cleanly on SIGINT/SIGTERM.';

  static override examples = [
    {
      description: 'Try the API with simulated pull requests on a free port',
      command: '<%= config.bin %> serve --sandbox --port 0',
    },
    {
      description: 'Serve two teams, each with its own token',
      command: '<%= config.bin %> serve --token "$TEAM_A_TOKEN" --org team-a --org-token team-b="$TEAM_B_TOKEN"',
    },
  ];

  static override flags = {
    host: Flags.string({ description: 'Interface to listen on', default: '127.0.0.1' }),
    port: Flags.integer({ description: 'Port to listen on (0 = any free port)', default: 7311, min: 0, max: 65535 }),
    'data-dir': Flags.string({ description: 'Directory of the database', default: './.railyard' }),
    token: Flags.string({
      description: 'An API token of the --org organisation (repeatable); only its hash is stored',
      multiple: true,
    }),
    org: Flags.string({ description: 'Organisation of the --token tokens', default: 'local' }),
    'org-token': Flags.string({
      description: 'A token of another organisation, as ORG=TOKEN (repeatable)',
      multiple: true,
    }),
    sandbox: Flags.boolean({
      description: 'Pull requests come from the sandbox forge (simulated PRs and CI)',
      default: false,
      exclusive: ['git-root'],
    }),
    'git-root': Flags.string({
      description: 'Serve the bare repositories at DIR/<host>/<owner>/<name>.git: PR N is refs/pull/N/head, checks come from railyard.json',
      helpValue: 'DIR',
    }),
    'sandbox-test-seconds': Flags.integer({ description: 'Sandbox: how long a test run takes', default: 5, min: 0 }),
    'sandbox-fail': Flags.string({
      description: 'Sandbox: runs containing any of these PR numbers fail (comma-separated, e.g. 3,7)',
      helpValue: 'N,M',
    }),
    'sandbox-failure-rate': Flags.string({ description: 'Sandbox: probability (0..1) that a run fails for no reason', default: '0' }),
    seed: Flags.integer({ description: 'Sandbox: seed of the random failures (same seed, same outcomes)', default: 1 }),
    'log-level': Flags.string({
      description:
        'Least severe log lines written to stdout (info: one line per request and per queue event)',
      options: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      default: 'info',
    }),
    'log-format': Flags.string({
      description:
        'Log lines as JSON (one object a line) or pretty (for people); default pretty on a terminal, JSON otherwise',
      options: ['json', 'pretty'],
    }),
  };

  async run(): Promise<void> {
    const { flags } = await this.parse(Serve);
    let orgTokens: { org: string; token: string }[];
    try {
      orgTokens = [
        ...(flags.token ?? []).map((token) => ({ org: flags.org, token })),
        ...(flags['org-token'] ?? []).map(parseOrgToken),
      ];
    } catch (error) {
      this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
    }

    const failPrs = new Set<number>();
    for (const part of (flags['sandbox-fail'] ?? '').split(',').map((p) => p.trim()).filter(Boolean)) {
      if (!/^\d+$/.test(part) || Number(part) < 1) this.error(`--sandbox-fail: "${part}" is not a pull request number`, { exit: 2 });
      failPrs.add(Number(part));
    }
    const failureRate = Number(flags['sandbox-failure-rate']);
    if (!Number.isFinite(failureRate) || failureRate < 0 || failureRate > 1) {
      this.error(`--sandbox-failure-rate: expected a probability between 0 and 1, got "${flags['sandbox-failure-rate']}"`, { exit: 2 });
    }
    if (!flags.sandbox && !flags['git-root']) {
      this.error('say where pull requests come from: --git-root DIR (bare git repositories) or --sandbox (simulated)', { exit: 2 });
    }

    // Loaded lazily: other commands never pay for Fastify, the store or the engine.
    const logLevel = flags['log-level'] as LogLevel;
    const pretty = (flags['log-format'] ?? (process.stdout.isTTY ? 'pretty' : 'json')) === 'pretty';
    let logStream: NodeJS.WritableStream = process.stdout;
    if (pretty && logLevel !== 'silent') {
      const { default: pinoPretty } = await import('pino-pretty');
      logStream = pinoPretty({
        sync: true,
        colorize: Boolean(process.stdout.isTTY) && !process.env.NO_COLOR,
      });
    }
    // Errors of the queue workers go to the server's log once it exists.
    let logError = (message: string, error?: unknown) => console.error(message, error ?? '');

    const [{ buildServer }, { openStore }, runtime] = await Promise.all([
      import('../server/index.js'),
      import('../store/index.js'),
      import('../server/runtime.js'),
    ]);
    let backend: Awaited<ReturnType<typeof runtime.createBackend>>;
    try {
      backend = await runtime.createBackend({
        dataDir: flags['data-dir'],
        gitRoot: flags['git-root'],
        sandbox: { testSeconds: flags['sandbox-test-seconds'], failPrs, failureRate, seed: flags.seed },
        log: (message, error) => logError(message, error),
      });
    } catch (error) {
      this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
    }

    const store = await openStore({ dataDir: flags['data-dir'] });
    for (const { org, token } of orgTokens) await store.addToken(org, token);
    if ((await store.listTokens()).length === 0) {
      const token = `ry_${randomBytes(24).toString('base64url')}`;
      await store.addToken(flags.org, token);
      this.log(`Generated an API token for organisation "${flags.org}". It is shown only this once (only its hash is stored):`);
      this.log(`  ${token}`);
    }
    const app = await buildServer({
      store,
      forge: backend.forge,
      workers: backend.workers,
      version: this.config.version,
      logLevel,
      logStream,
    });
    logError = (message, error) => app.log.error({ err: error }, message);
    await app.listen({ host: flags.host, port: flags.port });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : flags.port;
    const host = flags.host.includes(':') ? `[${flags.host}]` : flags.host;
    this.log(`Railyard API listening on http://${host}:${port}/v1`);

    await new Promise<void>((resolve) => {
      let stopping = false;
      const stop = (signal: NodeJS.Signals) => {
        if (stopping) {
          this.logToStderr(`${signal} again: exiting without waiting`);
          process.exit(1);
        }
        stopping = true;
        app.log.info({ signal }, 'stopping: finishing requests in flight and queued commands');
        // Stop accepting, finish in-flight requests and queued commands, then close the database.
        app
          .close()
          .then(() => store.close())
          .then(
            () => {
              app.log.info('stopped cleanly');
              resolve();
            },
            (error: unknown) => {
              app.log.error({ err: error }, 'error while stopping');
              this.logToStderr(
                `error while stopping: ${error instanceof Error ? error.message : String(error)}`,
              );
              process.exit(1);
            },
          );
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
    process.exit(0);
  }
}
