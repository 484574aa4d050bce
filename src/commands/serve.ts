/**
 * `railyard serve`: the command's flags, checked and turned into `ServeOptions` for `runServe`
 * (src/server/serve.ts). The forges' flags, the one picked and its settings come from the forge
 * registry (src/forge/registry.ts); the other flag checks are in src/cli/serve-options.ts.
 */
import { Command, Flags } from '@oclif/core';
import { DATABASE_URL_WARNING, databaseUrlFlags, resolveDatabaseUrl } from '../cli/database-url.js';
import { listenError, parseOrgToken, portInUse, readTokenFile, ticketOptions } from '../cli/serve-options.js';
import { newToken } from '../cli/tokens.js';
import { takeSecrets } from '../flag-values.js';
import { forgeFlags, forges, noForgeMessage, pickedForge, type ServeFlag } from '../forge/registry.js';
import type { LogLevel } from '../server/app.js';
import type { ServeOptions } from '../server/serve.js';

/** A forge's flag as oclif declares it. */
function oclifFlag({ type, ...options }: ServeFlag) {
  if (type === 'boolean') return Flags.boolean(options as Parameters<typeof Flags.boolean>[0]);
  if (type === 'integer') return Flags.integer(options as Parameters<typeof Flags.integer>[0]);
  return Flags.string(options as Parameters<typeof Flags.string>[0]);
}

/** Every forge's flags (src/forge/registry.ts), in its order. */
const FORGE_FLAGS = Object.fromEntries(
  Object.entries(forgeFlags()).map(([name, flag]) => [name, oclifFlag(flag)]),
);

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
    // The forges' own (src/forge/<name>/description.ts), then serve's.
    ...forges().flatMap((forge) => forge.examples ?? []),
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
      description:
        'PostgreSQL: how long a replica drives a queue without renewing its lease; another replica takes over after it',
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
      description:
        'A file holding an API token of the --org organisation (one per line); only its hash is stored',
      helpValue: 'FILE',
    }),
    'max-connections': Flags.integer({
      description: 'Client connections held at once; past it new connections are closed at once',
      default: 4096,
      min: 1,
    }),
    'max-queues-per-org': Flags.integer({
      description: 'Merge queues one organisation may create',
      default: 1000,
      min: 1,
    }),
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
    ...FORGE_FLAGS,
    'landing-retry-seconds': Flags.integer({
      description:
        'How long a landing that failed on a blip of the forge (a 5xx, a dropped connection, a rate limit) is tried again, with growing waits, before its PRs fail (0 = never); a refusal fails at once',
      default: 600,
      min: 0,
    }),
    'testing-minute-seconds': Flags.integer({
      description:
        "How long a minute of a queue's testingTimeoutMinutes lasts, in seconds: 60; less only for tests and demos that should see a run time out sooner (settings and texts still say minutes)",
      default: 60,
      min: 1,
      max: 60,
    }),
    'webhook-allow-private': Flags.boolean({
      description:
        'Outgoing webhooks may go to loopback, private and link-local addresses (refused by default)',
      default: false,
    }),
    'webhook-allow-http': Flags.boolean({
      description: 'Outgoing webhook endpoints may be plain http:// URLs (https:// only by default)',
      default: false,
    }),
    'ticket-api-url': Flags.string({
      description:
        "Where tickets of flaky and broken tests are opened: the tracker's address (default https://api.github.com for repositories with --ticket-system github; required for gitlab and jira). Jira: https://SITE.atlassian.net (Cloud, REST v3) or the Data Center address (REST v2); a path ending in /rest/api/2 or /rest/api/3 picks the version",
      helpValue: 'URL',
    }),
    'ticket-token-file': Flags.string({
      description:
        'A file holding the token tickets are opened with (or RAILYARD_TICKET_TOKEN); Jira Cloud: EMAIL:API_TOKEN',
      helpValue: 'FILE',
    }),
    'public-url': Flags.string({
      description:
        "The dashboard's address as people reach it, for links in webhook payloads (default: the listen address)",
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
    const { RAILYARD_SERVER_TOKEN: envToken, RAILYARD_TICKET_TOKEN: envTicketToken } = takeSecrets(
      process.env,
      ['RAILYARD_SERVER_TOKEN', 'RAILYARD_TICKET_TOKEN'],
    );
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
    let tickets: Awaited<ReturnType<typeof ticketOptions>>;
    try {
      tickets = await ticketOptions(flags['ticket-api-url'], flags['ticket-token-file'], envTicketToken);
    } catch (error) {
      this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
    }
    if (flags.token?.length || flags['org-token']?.length) {
      this.logToStderr(
        'warning: a token on the command line can be read by every user of this machine (ps, shell history): use --token-file FILE, RAILYARD_SERVER_TOKEN or `railyard token create`',
      );
    }

    // Loaded lazily like the server itself (a small module: only the parsing).
    const { conflictingPins, parseOrgRepoPin } = await import('../server/access/ownership.js');
    let orgRepos: ReturnType<typeof parseOrgRepoPin>[] = [];
    try {
      orgRepos = (flags['org-repos'] ?? []).map(parseOrgRepoPin);
    } catch (error) {
      this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
    }
    const conflict = conflictingPins(orgRepos);
    if (conflict) this.error(conflict, { exit: 2 });

    const forge = pickedForge(flags);
    if (!forge) this.error(noForgeMessage(), { exit: 2 });
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
    let settings: unknown;
    try {
      settings = await forge.settings(flags, {
        env: process.env,
        dataDir: flags['data-dir'],
        secretFiles: [flags['token-file'], flags['database-url-file'], flags['ticket-token-file']].filter(
          (f): f is string => f !== undefined,
        ),
        warn: (line) => this.logToStderr(line),
      });
    } catch (error) {
      this.error(error instanceof Error ? error.message : String(error), { exit: 2 });
    }

    const options: ServeOptions = {
      host: flags.host,
      port: flags.port,
      dataDir: flags['data-dir'],
      databaseUrl,
      databasePoolSize: flags['database-pool-size'],
      databaseStatementTimeoutSeconds: flags['database-statement-timeout'],
      leaseMs: flags['lease-seconds'] * 1000,
      org: flags.org,
      tokens: orgTokens,
      orgRepos,
      limits: { queuesPerOrg: flags['max-queues-per-org'], prsPerQueue: flags['max-prs-per-queue'] },
      maxConnections: flags['max-connections'],
      webhooks: {
        allowPrivate: flags['webhook-allow-private'],
        allowHttp: flags['webhook-allow-http'],
        ...(flags['public-url'] ? { publicUrl: flags['public-url'] } : {}),
        tickets,
      },
      landingRetryMs: flags['landing-retry-seconds'] * 1000,
      testingMinuteMs: flags['testing-minute-seconds'] * 1000,
      forge: { description: forge, settings },
      version: this.config.version,
      logLevel: flags['log-level'] as LogLevel,
      logFormat: flags['log-format'] as ServeOptions['logFormat'],
      newToken,
      listenError,
    };
    // Loaded lazily: other commands never pay for Fastify, the store or the engine.
    await (
      await import('../server/serve.js')
    ).runServe(options, {
      log: (line) => this.log(line),
      warn: (line) => this.logToStderr(line),
      fail: (message, code) => this.error(message, { exit: code }),
      exit: (code) => this.exit(code),
    });
    process.exit(0);
  }
}
