/**
 * The GitHub forge as `railyard serve` knows it (`serve --github`): its flags; its settings from
 * them (secrets from files or the environment only, removed from the environment once read;
 * src/flag-values.ts reads them), errors one line naming the flag; its start-up line (webhooks or
 * polling); its web pages (`https://host/owner/name`, `/pull/N`, `/blob/REF/PATH`). No SDK here:
 * the driver (Octokit) is imported only when picked.
 */
import { withoutTrailingSlashes } from '../../contract/common.js';
import { hostName, instanceUrl, seconds, secretFile, secretOf, takeSecrets } from '../../flag-values.js';
import { GITHUB_PAGES, hostedLinks } from '../shared/web-links.js';
import type { ForgeDescription } from '../types.js';
import type { GitHubAuth } from './client.js';
import type { GitHubSettings } from './driver.js';

export interface GitHubFlags {
  'github-api-url': string;
  'github-host': string;
  'github-token-file'?: string;
  'github-app-id'?: number;
  'github-private-key-file'?: string;
  'github-webhook-secret-file'?: string;
  'github-poll-seconds': string;
  'github-ci-start-seconds': string;
  'github-write-interval-ms': number;
  'github-merge-api': boolean;
}

/** `serve --github` settings: secrets from files or the environment only (removed from the environment once read). */
export async function githubOptions(
  flags: GitHubFlags,
  env: NodeJS.ProcessEnv = process.env,
): Promise<GitHubSettings> {
  // First, before anything can throw: the secrets leave the environment (children never see them).
  const secrets = takeSecrets(env, ['RAILYARD_GITHUB_TOKEN', 'RAILYARD_GITHUB_WEBHOOK_SECRET']);
  const apiUrl = instanceUrl(
    'github-api-url',
    flags['github-api-url'],
    'https://api.github.com or https://HOST/api/v3',
    'github-token-file',
  );
  const host = hostName('github-host', flags['github-host']);
  const appId = flags['github-app-id'];
  const keyFile = flags['github-private-key-file'];
  let auth: GitHubAuth;
  if (appId !== undefined || keyFile !== undefined) {
    if (appId === undefined || keyFile === undefined)
      throw new Error('--github-app-id and --github-private-key-file go together (a GitHub App needs both)');
    if (flags['github-token-file'])
      throw new Error('--github-token-file: give either a token or a GitHub App, not both');
    const privateKey = await secretFile('github-private-key-file', keyFile);
    if (!privateKey.includes('PRIVATE KEY'))
      throw new Error(`--github-private-key-file: ${keyFile} does not hold a PEM private key`);
    auth = { kind: 'app', appId, privateKey };
  } else {
    const token = await secretOf(
      'github-token-file',
      flags['github-token-file'],
      secrets.RAILYARD_GITHUB_TOKEN,
    );
    if (token === null)
      throw new Error(
        '--github: say how to authenticate: --github-token-file FILE, RAILYARD_GITHUB_TOKEN, or --github-app-id N with --github-private-key-file FILE',
      );
    auth = { kind: 'token', token };
  }
  const webhookSecret = await secretOf(
    'github-webhook-secret-file',
    flags['github-webhook-secret-file'],
    secrets.RAILYARD_GITHUB_WEBHOOK_SECRET,
  );
  return {
    apiUrl: withoutTrailingSlashes(apiUrl.toString()),
    host,
    auth,
    webhookSecret,
    pollMs: seconds('github-poll-seconds', flags['github-poll-seconds'], 0.05) * 1000,
    ciStartMs: seconds('github-ci-start-seconds', flags['github-ci-start-seconds'], 0) * 1000,
    writeIntervalMs: flags['github-write-interval-ms'],
    mergeApi: flags['github-merge-api'],
  };
}

export const github: ForgeDescription<GitHubSettings> = {
  kind: 'github',
  picker: 'github',
  hint: '--github (repositories on GitHub)',
  flags: {
    github: {
      type: 'boolean',
      description:
        'Serve repositories that live on GitHub (github.com or GitHub Enterprise Server); see docs/github.md',
      default: false,
    },
    'github-api-url': {
      type: 'string',
      description: 'GitHub REST API URL (GHES: https://HOST/api/v3)',
      default: 'https://api.github.com',
    },
    'github-host': {
      type: 'string',
      description: 'The repo.host this server serves; PRs of other hosts do not exist',
      default: 'github.com',
    },
    'github-token-file': {
      type: 'string',
      description: 'File holding a GitHub token (PAT or installation token); or set RAILYARD_GITHUB_TOKEN',
      helpValue: 'FILE',
    },
    'github-app-id': {
      type: 'integer',
      description: 'GitHub App id (with --github-private-key-file)',
      min: 1,
    },
    'github-private-key-file': {
      type: 'string',
      description: "File holding the GitHub App's private key (PEM)",
      helpValue: 'FILE',
    },
    'github-webhook-secret-file': {
      type: 'string',
      description:
        'File holding the webhook secret (enables POST /webhooks/github); or set RAILYARD_GITHUB_WEBHOOK_SECRET',
      helpValue: 'FILE',
    },
    'github-poll-seconds': {
      type: 'string',
      description:
        'How often GitHub is polled: the PRs in the queue and the CI of test commits, with or without webhooks (they only make it faster)',
      default: '30',
    },
    'github-ci-start-seconds': {
      type: 'string',
      description:
        'Without requiredStatuses: a test commit with no check reported after this long fails (TEST_RUN_NO_CHECKS_REPORTED)',
      default: '120',
    },
    'github-write-interval-ms': {
      type: 'integer',
      description:
        "Minimum time between two writes to GitHub's REST API, on top of GitHub's documented limits (80 a minute, 500 an hour, one at a time), which are always kept",
      default: 0,
      min: 0,
    },
    'github-merge-api': {
      type: 'boolean',
      description:
        'Only when the target branches let nobody but Railyard push: land a squash/rebase PR tested alone on the current target through the merge API (GitHub shows it Merged), the tree checked after; see docs/github.md, "Merge methods"',
      default: false,
    },
  },
  settings: (flags, { env }) => githubOptions(flags as unknown as GitHubFlags, env),
  startup: (settings, url) => [
    settings.webhookSecret !== null
      ? `GitHub (${settings.host}): webhooks accepted at ${url}/webhooks/github, polling every ${settings.pollMs / 1000} s too`
      : `GitHub (${settings.host}): no webhook secret, polling every ${settings.pollMs / 1000} s`,
  ],
  links: () => hostedLinks(GITHUB_PAGES),
  driver: async (settings, common) => (await import('./driver.js')).createGitHubDriver(settings, common),
};
