/**
 * The GitHub forge's doctor role: whether the server's token (a PAT, or a GitHub App's
 * installation) may do what the queue needs in a repository — push test branches and land
 * (`contents`), set the `railyard/merge-queue` status (`statuses`), read the target branch's rules
 * (what a blocked PR waits for). It reads, never writes: a PAT's role from `GET /repos/{o}/{r}`
 * (`permissions.push`), an App's from its installation, the rules by reading them.
 */
import type { Repo } from '../../contract/index.js';
import type { ForgeDoctor, ForgePermissionNotice } from '../types.js';
import { statusOf, type GitHubClient } from './client.js';

export class GitHubDoctor implements ForgeDoctor {
  constructor(private readonly client: GitHubClient) {}

  async permissions(repo: Repo, targetBranch: string): Promise<ForgePermissionNotice[]> {
    const where = `${repo.owner}/${repo.name}`;
    const out: ForgePermissionNotice[] = [];
    let app: Record<string, string> | null;
    try {
      app = await this.client.installationPermissions(repo.owner, repo.name);
    } catch (error) {
      const status = statusOf(error);
      if (status !== 404) throw error;
      return [
        {
          permission: 'installation',
          text: `The GitHub App is not installed on ${where}: install it on the repository (Settings → GitHub Apps) so the queue can read and land its pull requests.`,
        },
      ];
    }
    if (app) {
      if (app.contents !== 'write')
        out.push({
          permission: 'push',
          text: `The GitHub App cannot push to ${where} (Contents: ${app.contents ?? 'none'}): the queue can neither push test branches nor land; grant it Contents: write and accept the new permission on the installation.`,
        });
      if (app.statuses !== 'write')
        out.push({
          permission: 'statuses',
          text: `The GitHub App cannot set commit statuses in ${where} (Commit statuses: ${app.statuses ?? 'none'}): pull requests never show the queue's railyard/merge-queue status; grant it Commit statuses: write.`,
        });
    } else {
      let push: boolean | undefined;
      try {
        const r = await this.client.request<{ permissions?: { push?: boolean } }>(
          repo.owner,
          repo.name,
          'GET /repos/{owner}/{repo}',
        );
        push = r.data.permissions?.push;
      } catch (error) {
        if (statusOf(error) !== 404 && statusOf(error) !== 403) throw error;
        return [
          {
            permission: 'read',
            text: `The GitHub token cannot see ${where} (GitHub answered ${statusOf(error)}): give the token's account access to the repository (a classic PAT needs the repo scope).`,
          },
        ];
      }
      if (push === false) {
        out.push({
          permission: 'push',
          text: `The GitHub token cannot push to ${where} (its account has read access only): the queue can neither push test branches nor land; give the account write access to the repository.`,
        });
        out.push({
          permission: 'statuses',
          text: `The GitHub token cannot set commit statuses in ${where} (that needs write access): pull requests never show the queue's railyard/merge-queue status; give the account write access to the repository.`,
        });
      }
    }
    try {
      await this.client.request(repo.owner, repo.name, 'GET /repos/{owner}/{repo}/rules/branches/{branch}', {
        branch: targetBranch,
      });
    } catch (error) {
      const status = statusOf(error);
      if (status !== 403 && status !== 404) throw error;
      out.push({
        permission: 'rules',
        text: `The GitHub token cannot read the rules of ${targetBranch} in ${where} (GitHub answered ${status}): the queue cannot tell what a blocked pull request waits for; give it read access to the repository's metadata (Metadata: read).`,
      });
    }
    return out;
  }
}
