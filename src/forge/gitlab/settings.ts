/**
 * `serve --gitlab` settings from its flags: the base URL (no credentials in it), the host served,
 * the token and hook secret from files or the environment only (removed from the environment once
 * read), poll and CI-start intervals. Errors are one line naming the flag.
 */
import { withoutTrailingSlashes } from '../../contract/common.js';
import { seconds, secretFile } from '../../flag-values.js';
import type { GitLabSettings } from './driver.js';

export interface GitLabFlags {
  'gitlab-url': string;
  'gitlab-host'?: string;
  'gitlab-token-file'?: string;
  'gitlab-webhook-secret-file'?: string;
  'gitlab-poll-seconds': string;
  'gitlab-ci-start-seconds': string;
}

export async function gitlabSettings(
  flags: GitLabFlags,
  env: NodeJS.ProcessEnv = process.env,
): Promise<GitLabSettings> {
  let url: URL;
  try {
    url = new URL(flags['gitlab-url']);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('not http(s)');
  } catch {
    throw new Error(
      `--gitlab-url: expected an http(s) URL such as https://gitlab.com or https://gitlab.example.com, got "${flags['gitlab-url']}"`,
    );
  }
  if (url.username || url.password)
    throw new Error('--gitlab-url: must not carry credentials (use --gitlab-token-file)');
  const host = (flags['gitlab-host'] ?? url.host).trim().toLowerCase();
  if (!/^[a-z0-9][a-z0-9.:-]*$/.test(host))
    throw new Error(`--gitlab-host: "${flags['gitlab-host']}" is not a host name`);
  const envToken = env.RAILYARD_GITLAB_TOKEN;
  const envSecret = env.RAILYARD_GITLAB_WEBHOOK_SECRET;
  delete env.RAILYARD_GITLAB_TOKEN;
  delete env.RAILYARD_GITLAB_WEBHOOK_SECRET;
  let token: string;
  if (flags['gitlab-token-file']) token = await secretFile('gitlab-token-file', flags['gitlab-token-file']);
  else if (envToken && envToken.trim()) token = envToken.trim();
  else
    throw new Error(
      '--gitlab: give a token with api scope: --gitlab-token-file FILE or RAILYARD_GITLAB_TOKEN',
    );
  let webhookSecret: string | null = null;
  if (flags['gitlab-webhook-secret-file'])
    webhookSecret = await secretFile('gitlab-webhook-secret-file', flags['gitlab-webhook-secret-file']);
  else if (envSecret && envSecret.trim()) webhookSecret = envSecret.trim();
  return {
    url: withoutTrailingSlashes(url.toString()),
    host,
    token,
    webhookSecret,
    pollMs: seconds('gitlab-poll-seconds', flags['gitlab-poll-seconds'], 0.05) * 1000,
    ciStartMs: seconds('gitlab-ci-start-seconds', flags['gitlab-ci-start-seconds'], 0) * 1000,
  };
}
