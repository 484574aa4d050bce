/** The base of every client command: --api-url/--token resolution, --json, errors mapped to exit codes. */
import { extname } from 'node:path';
import { Command, Errors, Flags, type Interfaces } from '@oclif/core';
import type { Client } from '../client/index.js';
import type { Repo, SubmittedPullRequest } from '../contract/index.js';
import { useColor } from './color.js';
import {
  ConfigError,
  DEFAULT_API_URL,
  parseRepo,
  readConfig,
  repoFromGitOrigin,
  type Config,
} from './config.js';
import { RAILYARD_TOKEN_PREFIX } from '../contract/constants.js';
import { forTerminal, jsonForTerminal, printable } from './escape.js';
import { EXIT } from './exit.js';
import { FORMATS, type Format, type View } from './formats.js';

const repoText = (repo: Repo) => `${repo.host}/${repo.owner}/${repo.name}`;

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<
  (typeof BaseCommand)['baseFlags'] & T['flags']
>;

/** Shared flags and behaviour: --api-url/--token resolution, --json, errors → exit codes. */
export abstract class BaseCommand extends Command {
  static override enableJsonFlag = true;

  static override baseFlags = {
    'api-url': Flags.string({
      description: `API base URL [env: RAILYARD_API_URL; default ${DEFAULT_API_URL}]`,
      helpGroup: 'GLOBAL',
    }),
    token: Flags.string({
      description: 'API token [env: RAILYARD_TOKEN, TRUNK_API_TOKEN]',
      helpGroup: 'GLOBAL',
    }),
    'api-version': Flags.string({
      description:
        'API version to speak: v1 or v2 (the same commands and output) [env: RAILYARD_API_VERSION; default v1]',
      helpGroup: 'GLOBAL',
    }),
  };

  private configCache: Config | null = null;

  protected async config_(): Promise<Config> {
    this.configCache ??= await readConfig();
    return this.configCache;
  }

  protected async client(flags: {
    'api-url'?: string;
    token?: string;
    'api-version'?: string;
  }): Promise<Client> {
    const config = await this.config_();
    const apiVersion = apiVersionOf(
      flags['api-version'] || process.env.RAILYARD_API_VERSION || config['api-version'],
    );
    const configured = flags['api-url'] || process.env.RAILYARD_API_URL || config['api-url'];
    const baseUrl = configured || DEFAULT_API_URL;
    try {
      new URL(baseUrl);
    } catch {
      throw new ConfigError(`--api-url: not a URL: "${baseUrl}"`);
    }
    const token = flags.token || process.env.RAILYARD_TOKEN || process.env.TRUNK_API_TOKEN || config.token;
    if (!token) {
      throw new ConfigError(
        'no API token: pass --token, set RAILYARD_TOKEN, or run `railyard config set token VALUE`',
      );
    }
    if (!configured && token.startsWith(RAILYARD_TOKEN_PREFIX)) {
      // A Railyard token goes only to a server the user named, never to the default (Trunk's).
      throw new ConfigError(
        `no API URL for this Railyard token (${RAILYARD_TOKEN_PREFIX}…): point the CLI at your server with ` +
          '`railyard config set api-url http://HOST:PORT/v1` (what `railyard serve` prints), --api-url or ' +
          `RAILYARD_API_URL; it is not sent to the default, Trunk's ${DEFAULT_API_URL}`,
      );
    }
    const [{ createClient, maxResponseBytes }, { nodeFetch }] = await Promise.all([
      import('../client/index.js'),
      import('./http-fetch.js'),
    ]);
    let maxBytes: number;
    try {
      maxBytes = maxResponseBytes();
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
    const { versionedUrl } = await import('../client/index.js');
    return createClient({
      apiVersion,
      baseUrl: apiVersion === 'v2' ? versionedUrl(baseUrl, 'v2') : baseUrl,
      token,
      fetch: nodeFetch,
      maxResponseBytes: maxBytes,
      onRetry: ({ operation, attempt, reason }) => {
        process.stderr.write(`${operation}: ${printable(reason)}; retrying (${attempt})\n`);
      },
    });
  }

  /**
   * The repository a command is about: --repo, else the `origin` remote of the current checkout,
   * else the saved `repo` of the config file. The checkout wins over the config: a saved repo is a
   * default for outside any checkout, never a redirect of a checkout's own commands to another
   * repository. When the two differ, a note on stderr says which one is used.
   */
  protected async repo(flag: string | undefined): Promise<Repo> {
    if (flag) return parseRepo(flag);
    const config = await this.config_();
    const fromGit = repoFromGitOrigin();
    if (fromGit) {
      if (config.repo && !this.repoNoted) {
        const saved = parseRepo(config.repo);
        if (repoText(saved).toLowerCase() !== repoText(fromGit).toLowerCase()) {
          this.repoNoted = true;
          this.logToStderr(
            `railyard: using ${repoText(fromGit)} from the origin remote of this checkout, not the saved repo ${repoText(saved)} (pass --repo to choose)`,
          );
        }
      }
      return fromGit;
    }
    if (config.repo) return parseRepo(config.repo);
    throw new ConfigError(
      '--repo: required (host/owner/name or owner/name) outside a git checkout with an origin remote (or run `railyard config set repo host/owner/name`)',
    );
  }

  private repoNoted = false;

  protected color(): boolean {
    return useColor(process.stdout);
  }

  /**
   * How tables are shown: in colour and cut to the terminal's width on a terminal; as wide as they
   * need with --wide, piped, or written to --output (then without colour).
   */
  protected view(flags: { wide?: boolean; output?: string } = {}): View {
    const toFile = Boolean(flags.output);
    const terminal = Boolean(process.stdout.isTTY) && !toFile;
    const columns = terminal && !flags.wide ? process.stdout.columns : undefined;
    return { color: !toFile && this.color(), terminal, ...(columns ? { width: columns } : {}) };
  }

  /**
   * Writes rendered output unless --json is on (then run()'s return value is printed). On a
   * terminal, control characters are shown escaped (escape.ts's forTerminal); piped or redirected,
   * the text goes out byte for byte.
   */
  protected out(text: string): void {
    if (!this.jsonEnabled()) process.stdout.write(process.stdout.isTTY ? forTerminal(text) : text);
  }

  /** --json on a terminal: the same document with DEL, C1 and bidi controls as `\uXXXX` escapes; piped, oclif's own. */
  override logJson(json: unknown): void {
    if (!process.stdout.isTTY) return super.logJson(json);
    process.stdout.write(`${jsonForTerminal(JSON.stringify(json, null, 2))}\n`);
  }

  /** A notice or warning for the person: stderr, also with --json (stdout carries only the JSON). */
  protected notice(text: string): void {
    process.stderr.write(`${printable(text)}\n`);
  }

  /** Ends a --wait: exit 0 when merged, 1 when failed, cancelled or still waiting at the timeout. */
  protected concludeWait(result: {
    pr: SubmittedPullRequest;
    timedOut: boolean;
    blocked?: string;
  }): SubmittedPullRequest {
    const { pr } = result;
    const reason = pr.stateReason ? ` (${printable(pr.stateReason)})` : '';
    if (!result.timedOut && pr.state === 'merged') {
      this.out(`#${pr.prNumber} merged\n`);
      return pr;
    }
    if (this.jsonEnabled()) this.logJson(pr);
    if (result.blocked) {
      this.logToStderr(
        `#${pr.prNumber} is blocked until its author pushes: ${printable(result.blocked)} (it waits outside the queue and enters by itself once fixed)`,
      );
      this.exit(EXIT.blocked);
    }
    this.logToStderr(
      result.timedOut
        ? `#${pr.prNumber} is still ${pr.state}${reason} at the timeout`
        : `#${pr.prNumber} ${pr.state}${reason}`,
    );
    this.exit(EXIT.error);
  }

  protected override async catch(
    error: Error & { exitCode?: number; oclif?: { exit?: number } },
  ): Promise<unknown> {
    if (error instanceof Errors.ExitError) throw error;
    const { errorLine, isParseError } = await import('./cli-errors.js');
    if (isParseError(error)) {
      // A flag or argument oclif refused: one line in the house style, naming what is missing, with the flag meant when one is near.
      const message = errorLine(error, this.config.bin, this.id);
      if (this.jsonEnabled()) this.logJson({ error: { message } });
      else
        this.logToStderr(
          `Error: ${printable(message)}\nSee: ${this.config.bin} ${this.id?.replaceAll(':', ' ') ?? ''} --help`,
        );
      this.exit(EXIT.usage);
    }
    const { ApiError } = await import('../client/index.js');
    let exit: number = EXIT.error;
    if (error instanceof ConfigError) exit = EXIT.usage;
    else if (error instanceof ApiError && error.status === 401) exit = EXIT.auth;
    else if (error.oclif?.exit !== undefined) exit = error.oclif.exit;
    if (this.jsonEnabled()) {
      this.logJson({
        error: { message: error.message, ...(error instanceof ApiError ? { status: error.status } : {}) },
      });
      this.exit(exit);
    }
    // Ours and oclif's (a command's `this.error`) alike: `Error: …`, one line.
    const text = error.oclif ? errorLine(error, this.config.bin, this.id) : error.message;
    this.logToStderr(`Error: ${printable(text)}`);
    this.exit(exit);
  }
}

/**
 * --repo: the repository a command is about, as host/owner/name or owner/name. `fallback` names
 * where it comes from without the flag (null: no fallback; `what` then says what it selects).
 */
export function repoFlag(
  fallback: string | null = 'origin remote, else the saved repo',
  what = 'repository',
) {
  const description = `${what}: host/owner/name or owner/name${fallback ? ` [default: ${fallback}]` : ''}`;
  return Flags.string({ char: 'r', description });
}

/** --repo and --branch: which queue a command talks to. */
export const queueFlags = {
  repo: repoFlag(),
  branch: Flags.string({ char: 'b', description: 'target branch of the queue', default: 'main' }),
};

export const formatFlag = {
  format: Flags.string({
    char: 'f',
    description:
      "output format [default: from --output's extension (.csv .tsv .md .json), else table]; json is the --json document",
    options: [...FORMATS],
  }),
  wide: Flags.boolean({
    description: 'table: never cut long cells to fit the terminal',
  }),
};

/** The format a file's extension names, e.g. `report.csv` → csv; undefined for any other name. */
export function formatOfFile(path: string): Format | undefined {
  const ext = extname(path).toLowerCase();
  return (
    { '.csv': 'csv', '.tsv': 'tsv', '.md': 'markdown', '.markdown': 'markdown', '.json': 'json' } as const
  )[ext as '.csv'];
}

/**
 * --format, else the format --output's extension names, else table. A --format that contradicts the
 * extension (`--format csv --output x.json`) is a usage error: a script would get a file that its
 * name lies about.
 */
export function formatOf(flags: { format?: string; output?: string }): Format {
  const inferred = flags.output ? formatOfFile(flags.output) : undefined;
  if (flags.format && inferred && flags.format !== inferred) {
    throw new ConfigError(
      `--format: ${flags.format} contradicts --output ${flags.output} (a ${inferred} file): drop --format, or name the file to match`,
    );
  }
  return (flags.format ?? inferred ?? 'table') as Format;
}

/** The API version of --api-version, RAILYARD_API_VERSION or the config (v1 when none says). */
export function apiVersionOf(text: string | undefined): 'v1' | 'v2' {
  if (text === undefined || text === '') return 'v1';
  const version = text.trim().toLowerCase();
  if (version === 'v1' || version === 'v2') return version;
  throw new ConfigError(
    `--api-version: expected v1 or v2, got ${JSON.stringify(text)} (also RAILYARD_API_VERSION, config key api-version)`,
  );
}

/** A PR number argument (digits only). */
export function prNumber(text: string): number {
  if (!/^\d+$/.test(text)) throw new ConfigError(`pr: expected a pull request number, got "${text}"`);
  return Number(text);
}
