/** `railyard serve`: the command's flags and the server's start-up (flag checks are in src/cli/serve-options.ts). */
import { Command, Flags } from '@oclif/core';
import { DATABASE_URL_WARNING, databaseUrlFlags, resolveDatabaseUrl } from '../cli/database-url.js';
import { githubOptions, listenError, parseOrgToken, portInUse, readTokenFile } from '../cli/serve-options.js';
import { takeSecrets } from '../flag-values.js';
import type { GitHubBackendOptions } from '../server/runtime.js';
import type { LogLevel } from '../server/index.js';

export default class Serve extends Command {
  static override summary = 'Run the Railyard API server (Trunk v1 compatible) on the embedded database';

  static override description =
    'Serves the v1 API under /v1 on HOST:PORT, storing its data in --data-dir (SQLite). ' +
    'Every request but /v1/status and /v1/openapi.json needs an x-api-token. Manage tokens with `railyard token`; ' +
    'a token can also come from --token-file or RAILYARD_SERVER_TOKEN. With no token at all, one is generated on the ' +
    'first start, printed once, and only its hash is stored. Logs to stdout through pino: one line per request ' +
    '(method, route, status, duration, organisation, request id) and per queue event (PR state changes, test runs, merges). ' +
    'Stops cleanly on SIGINT/SIGTERM.';

  static override examples = [
    {
      description: 'Try the API with simulated pull requests on a free port',
      command: '<%= config.bin %> serve --sandbox --port 0',
    },
    {
      description: "Two organisations over one git root: each owns its GitHub owner's repositories",
      command:
        '<%= config.bin %> serve --git-root /srv/git --org-token acme="$ACME_TOKEN" --org-token globex="$GLOBEX_TOKEN" ' +
        '--org-repos acme=github.com/acme/* --org-repos globex=github.com/globex/*',
    },
    {
      description: 'Serve two teams, each with its own token',
      command: '<%= config.bin %> serve --token-file /etc/railyard/team-a.token --org team-a',
    },
  ];

  static override flags = {
    host: Flags.string({ description: 'Interface to listen on', default: '127.0.0.1' }),
    port: Flags.integer({
      description: 'Port to listen on (0 = any free port)',
      default: 7311,
      min: 0,
      max: 65535,
    }),
    'data-dir': Flags.string({
      description: 'Directory of the embedded database (SQLite), run logs and repository caches',
      default: './.railyard',
    }),
    ...databaseUrlFlags,
    'database-pool-size': Flags.integer({
      description: 'PostgreSQL: connections in the pool',
      default: 10,
      min: 1,
      max: 1000,
    }),
    'database-statement-timeout': Flags.integer({
      description: 'PostgreSQL: seconds a statement may run before the database cancels it (0 = no limit)',
      default: 30,
      min: 0,
    }),
    'lease-seconds': Flags.integer({
      description: 'PostgreSQL: how long a replica drives a queue without renewing its lease; another replica takes over after it',
      default: 5,
      min: 1,
      max: 300,
    }),
    token: Flags.string({
      description:
        'An API token of the --org organisation (repeatable; for tests: a token on the command line shows in ps). Prefer --token-file or RAILYARD_SERVER_TOKEN',
      multiple: true,
    }),
    'token-file': Flags.string({
      description: 'A file holding an API token of the --org organisation (one per line); only its hash is stored',
      helpValue: 'FILE',
    }),
    'max-queues-per-org': Flags.integer({ description: 'Merge queues one organisation may create', default: 1000, min: 1 }),
    'max-prs-per-queue': Flags.integer({
      description: 'Pull requests one queue may hold before they conclude (submit answers 429 past it)',
      default: 1000,
      min: 1,
    }),
    org: Flags.string({ description: 'Organisation of the --token tokens', default: 'local' }),
    'org-token': Flags.string({
      description: 'A token of another organisation, as ORG=TOKEN (repeatable)',
      multiple: true,
    }),
    'org-repos': Flags.string({
      description:
        'Repositories that belong to an organisation, as ORG=host/owner/name where * matches one segment (repeatable); ' +
        'other repositories belong to the organisation that first creates a merge queue for them',
      helpValue: 'ORG=host/owner/*',
      multiple: true,
    }),
    sandbox: Flags.boolean({
      description: 'Pull requests come from the sandbox forge (simulated PRs and CI)',
      default: false,
      exclusive: ['git-root', 'github', 'gitlab'],
    }),
    'git-root': Flags.string({
      description: 'Serve the bare repositories at DIR/<host>/<owner>/<name>.git: PR N is refs/pull/N/head, checks come from railyard.json',
      helpValue: 'DIR',
    }),
    'checks-sandbox': Flags.string({
      description:
        'Git root: how checks (code from pull requests) are isolated. none: a directory and, when serving as root, a uid of their own, ' +
        'an allowlisted environment; bwrap: also inside bubblewrap (apt-get install bubblewrap), seeing only system directories and their checkout',
      options: ['none', 'bwrap'],
      default: 'none',
    }),
    'checks-dir': Flags.string({
      description: 'Git root: where each check gets its directory (checkout, HOME, TMPDIR); never inside --data-dir (default: the OS temp dir)',
      helpValue: 'DIR',
    }),
    'checks-timeout-minutes': Flags.integer({ description: 'Git root: wall-clock limit of one check (0 = none)', default: 60, min: 0 }),
    'checks-output-mib': Flags.integer({ description: 'Git root: output kept per check; the rest is cut with a note in its log', default: 16, min: 1 }),
    'checks-uid-base': Flags.integer({
      description: 'Git root, serving as root: checks run as uids from this one up (one per running check), never as root',
      default: 61184,
      min: 1,
    }),
    github: Flags.boolean({
      description: 'Serve repositories that live on GitHub (github.com or GitHub Enterprise Server); see docs/github.md',
      default: false,
      exclusive: ['git-root'],
    }),
    'github-api-url': Flags.string({ description: 'GitHub REST API URL (GHES: https://HOST/api/v3)', default: 'https://api.github.com' }),
    'github-host': Flags.string({ description: 'The repo.host this server serves; PRs of other hosts do not exist', default: 'github.com' }),
    'github-token-file': Flags.string({
      description: 'File holding a GitHub token (PAT or installation token); or set RAILYARD_GITHUB_TOKEN',
      helpValue: 'FILE',
    }),
    'github-app-id': Flags.integer({ description: 'GitHub App id (with --github-private-key-file)', min: 1 }),
    'github-private-key-file': Flags.string({ description: "File holding the GitHub App's private key (PEM)", helpValue: 'FILE' }),
    'github-webhook-secret-file': Flags.string({
      description: 'File holding the webhook secret (enables POST /webhooks/github); or set RAILYARD_GITHUB_WEBHOOK_SECRET',
      helpValue: 'FILE',
    }),
    'github-poll-seconds': Flags.string({ description: 'How often GitHub is polled (PRs and CI only without webhooks)', default: '30' }),
    'github-ci-start-seconds': Flags.string({
      description: 'Without requiredStatuses: a test commit with no check reported after this long fails (TEST_RUN_NO_CHECKS_REPORTED)',
      default: '120',
    }),
    'github-write-interval-ms': Flags.integer({
      description: "Minimum time between two writes to GitHub's REST API (GitHub advises 1000 for integrations)",
      default: 1000,
      min: 0,
    }),
    'github-merge-api': Flags.boolean({
      description:
        'Only when the target branches let nobody but Railyard push: land a squash/rebase PR tested alone on the current target through the merge API (GitHub shows it Merged), the tree checked after; see docs/github.md, "Merge methods"',
      default: false,
    }),
    gitlab: Flags.boolean({
      description: 'Serve projects that live on GitLab (gitlab.com or self-managed); see docs/gitlab.md',
      default: false,
      exclusive: ['git-root', 'github'],
    }),
    'gitlab-url': Flags.string({ description: 'GitLab base URL (self-managed: https://HOST, with its relative URL root)', default: 'https://gitlab.com' }),
    'gitlab-host': Flags.string({ description: 'The repo.host this server serves (default: the host of --gitlab-url); MRs of other hosts do not exist' }),
    'gitlab-token-file': Flags.string({
      description: 'File holding a GitLab project, group or personal access token with api scope; or set RAILYARD_GITLAB_TOKEN',
      helpValue: 'FILE',
    }),
    'gitlab-webhook-secret-file': Flags.string({
      description: 'File holding the hook secret token (enables POST /webhooks/gitlab); or set RAILYARD_GITLAB_WEBHOOK_SECRET',
      helpValue: 'FILE',
    }),
    'gitlab-poll-seconds': Flags.string({ description: 'How often GitLab is polled (MRs and CI only without hooks)', default: '30' }),
    'gitlab-ci-start-seconds': Flags.string({
      description: 'Without requiredStatuses: a test commit with no pipeline job or status after this long fails (TEST_RUN_NO_CHECKS_REPORTED)',
      default: '120',
    }),
    'landing-retry-seconds': Flags.integer({
      description:
        'How long a landing that failed on a blip of the forge (a 5xx, a dropped connection, a rate limit) is tried again, with growing waits, before its PRs fail (0 = never); a refusal fails at once',
      default: 600,
      min: 0,
    }),
    'sandbox-test-seconds': Flags.integer({ description: 'Sandbox: how long a test run takes', default: 5, min: 0 }),
    'sandbox-fail': Flags.string({
      description: 'Sandbox: runs containing any of these PR numbers fail (comma-separated, e.g. 3,7)',
      helpValue: 'N,M',
    }),
    'sandbox-failure-rate': Flags.string({ description: 'Sandbox: probability (0..1) that a run fails for no reason', default: '0' }),
    seed: Flags.integer({ description: 'Sandbox: seed of the random failures (same seed, same outcomes)', default: 1 }),
    'webhook-allow-private': Flags.boolean({
      description: 'Outgoing webhooks may go to loopback, private and link-local addresses (refused by default)',
      default: false,
    }),
    'webhook-allow-http': Flags.boolean({
      description: 'Outgoing webhook endpoints may be plain http:// URLs (https:// only by default)',
      default: false,
    }),
    'public-url': Flags.string({
      description: "The dashboard's address as people reach it, for links in webhook payloads (default: the listen address)",
      helpValue: 'URL',
    }),
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

  /** A mistyped flag names the one meant (src/cli/did-you-mean.ts). */
  protected override async catch(error: Error): Promise<unknown> {
    (await import('../cli/did-you-mean.js')).withFlagHint(error);
    return super.catch(error);
  }

  async run(): Promise<void> {
    // Out of the environment at once, like every secret serve reads: nothing it starts inherits it.
    const { RAILYARD_SERVER_TOKEN: envToken } = takeSecrets(process.env, ['RAILYARD_SERVER_TOKEN']);
    const { flags } = await this.parse(Serve);
    let orgTokens: { org: string; token: string }[];
    try {
      orgTokens = [
        ...(flags.token ?? []).map((token) => ({ org: flags.org, token })),
        ...(await readTokenFile(flags['token-file'])).map((token) => ({ org: flags.org, token })),
        ...(envToken?.trim() ? [{ org: flags.org, token: envToken.trim() }] : []),
        ...(flags['org-token'] ?? []).map(parseOrgToken),
      ];
    } catch (error) {
      this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
    }
    if (flags.token?.length || flags['org-token']?.length) {
      this.logToStderr(
        'warning: a token on the command line can be read by every user of this machine (ps, shell history): use --token-file FILE, RAILYARD_SERVER_TOKEN or `railyard token create`',
      );
    }

    // Loaded lazily like the server itself (a small module: only the parsing).
    const { conflictingPins, parseOrgRepoPin } = await import('../server/ownership.js');
    let orgRepos: ReturnType<typeof parseOrgRepoPin>[] = [];
    try {
      orgRepos = (flags['org-repos'] ?? []).map(parseOrgRepoPin);
    } catch (error) {
      this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
    }
    const conflict = conflictingPins(orgRepos);
    if (conflict) this.error(conflict, { exit: 2 });

    const failPrs = new Set<number>();
    for (const part of (flags['sandbox-fail'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)) {
      if (!/^\d+$/.test(part) || Number(part) < 1) this.error(`--sandbox-fail: "${part}" is not a pull request number`, { exit: 2 });
      failPrs.add(Number(part));
    }
    const failureRate = Number(flags['sandbox-failure-rate']);
    if (!Number.isFinite(failureRate) || failureRate < 0 || failureRate > 1) {
      this.error(`--sandbox-failure-rate: expected a probability between 0 and 1, got "${flags['sandbox-failure-rate']}"`, { exit: 2 });
    }
    if (!flags.sandbox && !flags['git-root'] && !flags.github && !flags.gitlab) {
      this.error('say where pull requests come from: --github (repositories on GitHub), --gitlab (projects on GitLab), --git-root DIR (bare git repositories) or --sandbox (simulated)', {
        exit: 2,
      });
    }
    let databaseUrl: string | undefined;
    try {
      const given = await resolveDatabaseUrl(flags);
      if (given.warn) this.logToStderr(DATABASE_URL_WARNING);
      databaseUrl = given.url;
    } catch (error) {
      this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
    }
    // Before anything is created (a data dir, a first token): a port another server holds is one line, not a stack.
    const inUse = await portInUse(flags.host, flags.port);
    if (inUse) {
      process.stderr.write(`railyard serve: ${inUse}\n`);
      this.exit(1);
    }
    let github: GitHubBackendOptions | undefined;
    if (flags.github) {
      try {
        github = await githubOptions(flags);
      } catch (error) {
        this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
      }
    }

    let gitlab: Awaited<ReturnType<typeof import('../forge/gitlab/settings.js').gitlabSettings>> | undefined;
    if (flags.gitlab) {
      try {
        gitlab = await (await import('../forge/gitlab/settings.js')).gitlabSettings(flags);
      } catch (error) {
        this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
      }
    }

    // Loaded lazily: other commands never pay for Fastify, the store or the engine.
    const logLevel = flags['log-level'] as LogLevel;
    const pretty = (flags['log-format'] ?? (process.stdout.isTTY ? 'pretty' : 'json')) === 'pretty';
    let logStream: NodeJS.WritableStream = process.stdout;
    if (!pretty && logLevel !== 'silent') {
      // JSON lines for machines: buffered and written without blocking requests, flushed on exit and on a crash.
      logStream = (await import('../server/log-destination.js')).asyncLogDestination(1).stream;
    } else if (pretty && logLevel !== 'silent') {
      const { default: pinoPretty } = await import('pino-pretty');
      logStream = pinoPretty({
        sync: true,
        colorize: Boolean(process.stdout.isTTY) && !process.env.NO_COLOR,
      });
    }
    // Errors of the queue workers go to the server's log once it exists.
    let logError = (message: string, error?: unknown) => console.error(message, error ?? '');

    const [{ buildServer }, { openDatabase }, runtime] = await Promise.all([
      import('../server/index.js'),
      import('../store/index.js'),
      import('../server/runtime.js'),
    ]);
    let backend: Awaited<ReturnType<typeof runtime.createBackend>>;
    const checks = {
      sandbox: flags['checks-sandbox'] as 'none' | 'bwrap',
      parentDir: flags['checks-dir'],
      uidBase: flags['checks-uid-base'],
      timeoutMs: flags['checks-timeout-minutes'] * 60_000,
      maxOutputBytes: flags['checks-output-mib'] * 1024 * 1024,
      hide: [flags['token-file'], flags['database-url-file']].filter((f): f is string => f !== undefined),
    };
    if (flags['git-root'] !== undefined) {
      const { checksDirProblem, gitRootExposure, isolationProblem } = await import('../runner/index.js');
      const problem = checksDirProblem(checks.parentDir ?? (await import('node:os')).tmpdir(), flags['data-dir']) ?? (await isolationProblem(checks));
      if (problem) this.error(problem, { exit: 2 });
      const exposed = checks.sandbox === 'none' && process.getuid?.() === 0 ? gitRootExposure(flags['git-root']) : null;
      if (exposed) this.logToStderr(`warning: ${exposed}`);
      if (checks.sandbox === 'none' && process.getuid?.() !== 0) {
        this.logToStderr(
          'warning: checks run code from pull requests as this server\'s own user, who can read --data-dir (the database, every run\'s logs): ' +
            'use --checks-sandbox bwrap, or run the server as root so that each check runs as a uid of its own',
        );
      }
    }
    try {
      backend = await runtime.createBackend({
        dataDir: flags['data-dir'],
        gitRoot: flags['git-root'],
        checks,
        github,
        gitlab,
        sandbox: { testSeconds: flags['sandbox-test-seconds'], failPrs, failureRate, seed: flags.seed },
        landingRetryMs: flags['landing-retry-seconds'] * 1000,
        log: (message, error) => logError(message, error),
      });
    } catch (error) {
      this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
    }

    let store: Awaited<ReturnType<typeof openDatabase>>;
    try {
      store = await openDatabase(flags['data-dir'], databaseUrl, flags['database-pool-size'], flags['database-statement-timeout']);
    } catch (error) {
      // One line, unwrapped: it names the URL (without its password) and the reason.
      process.stderr.write(`railyard serve: ${error instanceof Error ? error.message : String(error)}\n`);
      this.exit(2);
    }
    for (const { org, token } of orgTokens) await store.accounts.addToken(org, token);
    let generatedToken: string | undefined;
    if ((await store.accounts.listTokens()).length === 0) {
      const token = (generatedToken = (await import('../cli/tokens.js')).newToken());
      await store.accounts.addToken(flags.org, token);
      this.log(`Generated an API token for organisation "${flags.org}". It is shown only this once (only its hash is stored):`);
      this.log(`  ${token}`);
    }
    const replicas = databaseUrl
      ? new (await import('../server/replicas.js')).Replicas(store, {
          databaseUrl,
          leaseMs: flags['lease-seconds'] * 1000,
        })
      : undefined;
    const app = await buildServer({
      store,
      driver: backend.driver,
      workers: backend.workers,
      version: this.config.version,
      orgRepos,
      replicas,
      limits: { queuesPerOrg: flags['max-queues-per-org'], prsPerQueue: flags['max-prs-per-queue'] },
      webhooks: {
        allowPrivate: flags['webhook-allow-private'],
        allowHttp: flags['webhook-allow-http'],
        ...(flags['public-url'] ? { publicUrl: flags['public-url'] } : {}),
      },
      logLevel,
      logStream,
    });
    logError = (message, error) => app.log.error({ err: error }, message);
    try {
      await app.listen({ host: flags.host, port: flags.port });
    } catch (error) {
      // Taken between the check and now, or not ours to bind: one line, then a clean stop.
      process.stderr.write(`railyard serve: ${listenError(error, flags.port)}\n`);
      await app.close().catch(() => undefined);
      await store.close().catch(() => undefined);
      this.exit(1);
    }
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : flags.port;
    const host = flags.host.includes(':') ? `[${flags.host}]` : flags.host;
    this.log(`Railyard API listening on http://${host}:${port}/v1`);
    this.log(`Web dashboard on http://${host}:${port}/ (it asks for an API token once)`);
    // How to point the CLI at this server (a wildcard address is reached on the loopback).
    const cliHost = flags.host === '0.0.0.0' || flags.host === '::' ? '127.0.0.1' : host;
    this.log(`Point the CLI at it:\n  railyard config set api-url http://${cliHost}:${port}/v1`);
    this.log(`  railyard config set token ${generatedToken ?? 'TOKEN   (the token this server was given)'}`);
    if (github) {
      this.log(
        github.webhookSecret !== null
          ? `GitHub (${github.host}): webhooks accepted at http://${host}:${port}/webhooks/github`
          : `GitHub (${github.host}): no webhook secret, polling every ${github.pollMs / 1000} s`,
      );
    }

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
