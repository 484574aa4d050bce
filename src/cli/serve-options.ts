/**
 * `railyard serve`'s flag parsing and checks: organisation tokens, the token file, the port,
 * and the `--github` options (secrets from files or the environment; src/flag-values.ts reads them).
 */
import { readFile } from 'node:fs/promises';
import type { GitHubAuth } from '../forge/github/client.js';
import type { GitHubBackendOptions } from '../server/runtime.js';
import { withoutTrailingSlashes } from '../contract/common.js';
import { seconds, secretFile } from '../flag-values.js';

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
}): Promise<GitHubBackendOptions> {
  let apiUrl: URL;
  try {
    apiUrl = new URL(flags['github-api-url']);
    if (apiUrl.protocol !== 'https:' && apiUrl.protocol !== 'http:') throw new Error('not http(s)');
  } catch {
    throw new Error(`--github-api-url: expected an http(s) URL such as https://api.github.com or https://HOST/api/v3, got "${flags['github-api-url']}"`);
  }
  if (apiUrl.username || apiUrl.password) throw new Error('--github-api-url: must not carry credentials (use --github-token-file)');
  const host = flags['github-host'].trim().toLowerCase();
  if (!/^[a-z0-9][a-z0-9.:-]*$/.test(host)) throw new Error(`--github-host: "${flags['github-host']}" is not a host name`);
  const envToken = process.env.RAILYARD_GITHUB_TOKEN;
  const envSecret = process.env.RAILYARD_GITHUB_WEBHOOK_SECRET;
  delete process.env.RAILYARD_GITHUB_TOKEN;
  delete process.env.RAILYARD_GITHUB_WEBHOOK_SECRET;
  const appId = flags['github-app-id'];
  const keyFile = flags['github-private-key-file'];
  let auth: GitHubAuth;
  if (appId !== undefined || keyFile !== undefined) {
    if (appId === undefined || keyFile === undefined) throw new Error('--github-app-id and --github-private-key-file go together (a GitHub App needs both)');
    if (flags['github-token-file']) throw new Error('--github-token-file: give either a token or a GitHub App, not both');
    const privateKey = await secretFile('github-private-key-file', keyFile);
    if (!privateKey.includes('PRIVATE KEY')) throw new Error(`--github-private-key-file: ${keyFile} does not hold a PEM private key`);
    auth = { kind: 'app', appId, privateKey };
  } else if (flags['github-token-file']) {
    auth = { kind: 'token', token: await secretFile('github-token-file', flags['github-token-file']) };
  } else if (envToken && envToken.trim()) {
    auth = { kind: 'token', token: envToken.trim() };
  } else {
    throw new Error('--github: say how to authenticate: --github-token-file FILE, RAILYARD_GITHUB_TOKEN, or --github-app-id N with --github-private-key-file FILE');
  }
  let webhookSecret: string | null = null;
  if (flags['github-webhook-secret-file']) webhookSecret = await secretFile('github-webhook-secret-file', flags['github-webhook-secret-file']);
  else if (envSecret && envSecret.trim()) webhookSecret = envSecret.trim();
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
