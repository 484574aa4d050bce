/**
 * Web addresses of forges whose pages live at `https://host/owner/name` (GitHub, GitHub
 * Enterprise, GitLab, the sandbox, whose repositories are named like GitHub's): a repository's
 * page, a pull request's (`/pull/N`, GitLab's `/-/merge_requests/N`) and a file's at a commit
 * (`/blob/REF/PATH`, GitLab's `/-/blob/REF/PATH`). A forge's description builds its `ForgeLinks`
 * from these.
 */
import type { Repo } from '../../contract/index.js';
import type { ForgeLinks } from '../types.js';

/** `host/owner/name` for a URL: a host with a port stays as it is (GitHub Enterprise at host:8443). */
export const repoPath = (repo: Repo): string =>
  `${/^[\w.:[\]-]+$/.test(repo.host) ? repo.host : encodeURIComponent(repo.host)}/${repo.owner.split('/').map(encodeURIComponent).join('/')}/${encodeURIComponent(repo.name)}`;

/** Where a forge's pages of pull requests and files sit under a repository's page. */
export interface PageLayout {
  /** The path before a pull request's number, e.g. `pull`. */
  pr: string;
  /** The path before a ref and a file, e.g. `blob`. */
  file: string;
}

/** GitHub's layout (also the sandbox's). */
export const GITHUB_PAGES: PageLayout = { pr: 'pull', file: 'blob' };

/**
 * The links of a forge with `layout`, its repositories' pages at `repository(repo)` (default:
 * `https://host/owner/name`).
 */
export function hostedLinks(
  layout: PageLayout,
  repository: (repo: Repo) => string = (repo) => `https://${repoPath(repo)}`,
): ForgeLinks {
  return {
    repository,
    pr: (repo, n) => `${repository(repo)}/${layout.pr}/${n}`,
    file: (repo, ref, path) =>
      `${repository(repo)}/${layout.file}/${encodeURIComponent(ref)}/${path.split('/').map(encodeURIComponent).join('/')}`,
  };
}
