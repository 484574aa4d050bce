/**
 * `serve --gitlab` settings from its flags: the base URL (no credentials in it), the host served,
 * the token and hook secret from files or the environment only (removed from the environment once
 * read), poll and CI-start intervals. Errors are one line naming the flag.
 */
import { withoutTrailingSlashes } from '../../contract/common.js';
import { hostName, instanceUrl, seconds, secretOf, takeSecrets } from '../../flag-values.js';
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
  // First, before anything can throw: the secrets leave the environment (children never see them).
  const secrets = takeSecrets(env, ['RAILYARD_GITLAB_TOKEN', 'RAILYARD_GITLAB_WEBHOOK_SECRET']);
  const url = instanceUrl('gitlab-url', flags['gitlab-url'], 'https://gitlab.com or https://gitlab.example.com', 'gitlab-token-file');
  const host = hostName('gitlab-host', flags['gitlab-host'] ?? url.host);
  const token = await secretOf('gitlab-token-file', flags['gitlab-token-file'], secrets.RAILYARD_GITLAB_TOKEN);
  if (token === null) throw new Error('--gitlab: give a token with api scope: --gitlab-token-file FILE or RAILYARD_GITLAB_TOKEN');
  const webhookSecret = await secretOf('gitlab-webhook-secret-file', flags['gitlab-webhook-secret-file'], secrets.RAILYARD_GITLAB_WEBHOOK_SECRET);
  return {
    url: withoutTrailingSlashes(url.toString()),
    host,
    token,
    webhookSecret,
    pollMs: seconds('gitlab-poll-seconds', flags['gitlab-poll-seconds'], 0.05) * 1000,
    ciStartMs: seconds('gitlab-ci-start-seconds', flags['gitlab-ci-start-seconds'], 0) * 1000,
  };
}
