/**
 * `railyard serve`'s flag parsing and checks: organisation tokens, the token file, the port,
 * and the `--github` options (secrets from files or the environment; src/flag-values.ts reads them).
 */
import { readFile } from 'node:fs/promises';
import type { GitHubAuth } from '../forge/github/client.js';
import type { GitHubBackendOptions } from '../server/runtime.js';
import { withoutTrailingSlashes } from '../contract/common.js';
import { hostName, instanceUrl, seconds, secretFile, secretOf, takeSecrets } from '../flag-values.js';

export function parseOrgToken(value: string): { org: string; token: string } {
  const at = value.indexOf('=');
  if (at <= 0 || at === value.length - 1) throw new Error(`--org-token: expected ORG=TOKEN, got "${value}"`);
  return { org: value.slice(0, at), token: value.slice(at + 1) };
}

/** The tokens of a token file: one per line, blank lines and `#` comments skipped. */
export async function readTokenFile(path: string | undefined): Promise<string[]> {
  if (path === undefined) return [];
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`--token-file: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const tokens = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  if (!tokens.length) throw new Error(`--token-file: ${path} holds no token`);
  return tokens;
}

/** Why the server cannot listen on host:port, in one line. */
export function listenError(error: unknown, port: number): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return `port ${port} is in use: stop the other server or use --port 0`;
  if (code === 'EACCES') return `port ${port} needs privileges: use a port above 1023 or --port 0`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return `--host: cannot listen on this machine's address (${code})`;
  return `cannot listen on port ${port}: ${error instanceof Error ? error.message : String(error)}`;
}

/** Null when host:port can be listened on now, else the one-line reason (port 0 always can). */
export async function portInUse(host: string, port: number): Promise<string | null> {
  if (port === 0) return null;
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error) => resolve(listenError(error, port)));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(null)));
  });
}

/** `serve --github` options: secrets from files or the environment only (removed from the environment once read). */
export async function githubOptions(flags: {
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
}, env: NodeJS.ProcessEnv = process.env): Promise<GitHubBackendOptions> {
  // First, before anything can throw: the secrets leave the environment (children never see them).
  const secrets = takeSecrets(env, ['RAILYARD_GITHUB_TOKEN', 'RAILYARD_GITHUB_WEBHOOK_SECRET']);
  const apiUrl = instanceUrl('github-api-url', flags['github-api-url'], 'https://api.github.com or https://HOST/api/v3', 'github-token-file');
  const host = hostName('github-host', flags['github-host']);
  const appId = flags['github-app-id'];
  const keyFile = flags['github-private-key-file'];
  let auth: GitHubAuth;
  if (appId !== undefined || keyFile !== undefined) {
    if (appId === undefined || keyFile === undefined) throw new Error('--github-app-id and --github-private-key-file go together (a GitHub App needs both)');
    if (flags['github-token-file']) throw new Error('--github-token-file: give either a token or a GitHub App, not both');
    const privateKey = await secretFile('github-private-key-file', keyFile);
    if (!privateKey.includes('PRIVATE KEY')) throw new Error(`--github-private-key-file: ${keyFile} does not hold a PEM private key`);
    auth = { kind: 'app', appId, privateKey };
  } else {
    const token = await secretOf('github-token-file', flags['github-token-file'], secrets.RAILYARD_GITHUB_TOKEN);
    if (token === null)
      throw new Error('--github: say how to authenticate: --github-token-file FILE, RAILYARD_GITHUB_TOKEN, or --github-app-id N with --github-private-key-file FILE');
    auth = { kind: 'token', token };
  }
  const webhookSecret = await secretOf('github-webhook-secret-file', flags['github-webhook-secret-file'], secrets.RAILYARD_GITHUB_WEBHOOK_SECRET);
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
