/**
 * The GitLab forge as `railyard serve` knows it (`serve --gitlab`): its flags; its settings from
 * them (the base URL, no credentials in it; the host served; the token and hook secret from files
 * or the environment only, removed from the environment once read; poll and CI-start intervals),
 * errors one line naming the flag; its web pages, from the instance's own address (a self-managed
 * GitLab may be http://host:port/gitlab). No SDK here: the driver is imported only when picked.
 */
import { withoutTrailingSlashes } from '../../contract/common.js';
import type { Repo } from '../../contract/index.js';
import { hostName, instanceUrl, seconds, secretOf, takeSecrets } from '../../flag-values.js';
import { hostedLinks, repoPath } from '../shared/web-links.js';
import type { ForgeDescription, ForgeLinks } from '../types.js';
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
  const url = instanceUrl(
    'gitlab-url',
    flags['gitlab-url'],
    'https://gitlab.com or https://gitlab.example.com',
    'gitlab-token-file',
  );
  const host = hostName('gitlab-host', flags['gitlab-host'] ?? url.host);
  const token = await secretOf(
    'gitlab-token-file',
    flags['gitlab-token-file'],
    secrets.RAILYARD_GITLAB_TOKEN,
  );
  if (token === null)
    throw new Error(
      '--gitlab: give a token with api scope: --gitlab-token-file FILE or RAILYARD_GITLAB_TOKEN',
    );
  const webhookSecret = await secretOf(
    'gitlab-webhook-secret-file',
    flags['gitlab-webhook-secret-file'],
    secrets.RAILYARD_GITLAB_WEBHOOK_SECRET,
  );
  return {
    url: withoutTrailingSlashes(url.toString()),
    host,
    token,
    webhookSecret,
    pollMs: seconds('gitlab-poll-seconds', flags['gitlab-poll-seconds'], 0.05) * 1000,
    ciStartMs: seconds('gitlab-ci-start-seconds', flags['gitlab-ci-start-seconds'], 0) * 1000,
  };
}

/**
 * GitLab's pages: a project of the host served under the instance's own address, one of another
 * host at `https://host/group/project`; merge requests at `/-/merge_requests/N`, files at
 * `/-/blob/REF/PATH`.
 */
export function gitlabLinks(settings: Pick<GitLabSettings, 'url' | 'host'>): ForgeLinks {
  const base = withoutTrailingSlashes(settings.url);
  const served = settings.host.toLowerCase();
  return hostedLinks({ pr: '-/merge_requests', file: '-/blob' }, (repo: Repo) =>
    repo.host.toLowerCase() === served ? `${base}/${repo.owner}/${repo.name}` : `https://${repoPath(repo)}`,
  );
}

export const gitlab: ForgeDescription<GitLabSettings> = {
  kind: 'gitlab',
  picker: 'gitlab',
  hint: '--gitlab (projects on GitLab)',
  flags: {
    gitlab: {
      type: 'boolean',
      description:
        'Serve projects that live on GitLab (gitlab.com or self-managed); see docs/gitlab.md',
      default: false,
    },
    'gitlab-url': {
      type: 'string',
      description: 'GitLab base URL (self-managed: https://HOST, with its relative URL root)',
      default: 'https://gitlab.com',
    },
    'gitlab-host': {
      type: 'string',
      description:
        'The repo.host this server serves (default: the host of --gitlab-url); MRs of other hosts do not exist',
    },
    'gitlab-token-file': {
      type: 'string',
      description:
        'File holding a GitLab project, group or personal access token with api scope; or set RAILYARD_GITLAB_TOKEN',
      helpValue: 'FILE',
    },
    'gitlab-webhook-secret-file': {
      type: 'string',
      description:
        'File holding the hook secret token (enables POST /webhooks/gitlab); or set RAILYARD_GITLAB_WEBHOOK_SECRET',
      helpValue: 'FILE',
    },
    'gitlab-poll-seconds': {
      type: 'string',
      description: 'How often GitLab is polled (MRs and CI only without hooks)',
      default: '30',
    },
    'gitlab-ci-start-seconds': {
      type: 'string',
      description:
        'Without requiredStatuses: a test commit with no pipeline job or status after this long fails (TEST_RUN_NO_CHECKS_REPORTED)',
      default: '120',
    },
  },
  settings: (flags, { env }) => gitlabSettings(flags as unknown as GitLabFlags, env),
  links: gitlabLinks,
  driver: async (settings, common) => (await import('./driver.js')).createGitLabDriver(settings, common),
};
