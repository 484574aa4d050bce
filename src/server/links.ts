/**
 * Every link Railyard prints or sends about a repository, a pull request or a test: the page on
 * the forge the repository lives on (the forge driver answers first: GitLab's from its instance
 * URL, which may be http, carry a port and a path prefix), else by forge kind; and the dashboard's
 * pages (hash routes of web/src/router.ts). The local git forge (`--git-root`) has no web pages:
 * where the contract requires a link (a tested PR's `prUrl`, a test's `html_url`), it is the
 * dashboard's page of the same thing, never an empty string or a made-up `https://host/…`; where
 * a link may be null (`railyard.pr_url` in webhook payloads), it is null.
 */
import type { Repo } from '../contract/index.js';
import type { ForgeDriver } from '../forge/types.js';

/** A function giving the forge's web page of a pull request (null: the forge has none). */
export type PrUrlOf = (repo: Repo, prNumber: number) => string | null;

/** What a forge driver may know of its web pages (src/forge/types.ts). */
export type DriverLinks = Pick<ForgeDriver, 'kind' | 'prUrl' | 'repoUrl'>;

/** `host/owner/name` for a URL: a host with a port stays as it is (GitHub Enterprise at host:8443). */
const pathOf = (repo: Repo) =>
  `${/^[\w.:[\]-]+$/.test(repo.host) ? repo.host : encodeURIComponent(repo.host)}/${repo.owner.split('/').map(encodeURIComponent).join('/')}/${encodeURIComponent(repo.name)}`;

/**
 * The forge's web page of a repository: the driver's own answer when it has one, else by kind:
 * `https://host/owner/name` (GitHub, GitHub Enterprise, GitLab, the sandbox, whose repositories
 * are named like GitHub's); none for local bare repositories.
 */
export function forgeRepoUrl(driver: DriverLinks): (repo: Repo) => string | null {
  return (repo) => driver.repoUrl?.(repo) ?? (driver.kind === 'git' ? null : `https://${pathOf(repo)}`);
}

/**
 * The forge's web page of a pull request: the driver's own answer when it has one, else by kind:
 * GitLab's merge requests, GitHub's pull requests (also the sandbox's); none for local bare
 * repositories.
 */
export function forgePrUrl(driver: DriverLinks): PrUrlOf {
  return (repo, n) => {
    const own = driver.prUrl?.(repo, n);
    if (own) return own;
    if (driver.kind === 'git') return null;
    return `https://${pathOf(repo)}/${driver.kind === 'gitlab' ? '-/merge_requests' : 'pull'}/${n}`;
  };
}

/** The dashboard's page at these route parts (`dashboard` is the server's public URL). */
function dashboardPage(dashboard: string, parts: string[]): string {
  let base = dashboard;
  while (base.endsWith('/')) base = base.slice(0, -1);
  return `${base}/#/${parts.map(encodeURIComponent).join('/')}`;
}

/** The dashboard page of a queue. */
export const queuePageUrl = (dashboard: string, repo: Repo, branch: string): string =>
  dashboardPage(dashboard, ['queue', repo.host, repo.owner, repo.name, branch]);

/** The dashboard page of a pull request in a queue. */
export const prPageUrl = (dashboard: string, repo: Repo, branch: string, prNumber: number): string =>
  dashboardPage(dashboard, ['pr', repo.host, repo.owner, repo.name, branch, String(prNumber)]);

/** The links of one server: its forge's pages, else its dashboard's. */
export interface Links {
  /** The PR's page on its forge (null: the forge has none). */
  forgePr: PrUrlOf;
  /** The PR's page on its forge, else its page on the dashboard (in the queue of `branch`). */
  pr(repo: Repo, branch: string, prNumber: number): string;
  /** The repository's page on its forge, else its flaky tests on the dashboard. */
  repository(repo: Repo): string;
  /**
   * A test's page: its file at HEAD on the forge (GitLab: `/-/blob/HEAD/…`), the repository's page
   * when the file is unknown or outside the repository, or the test's page on the dashboard.
   */
  test(repo: Repo, test: { id: string; file?: string | null }): string;
}

export function serverLinks(driver: DriverLinks, dashboard: () => string): Links {
  const forgePr = forgePrUrl(driver);
  const forgeRepo = forgeRepoUrl(driver);
  const blob = driver.kind === 'gitlab' ? '-/blob' : 'blob';
  return {
    forgePr,
    pr: (repo, branch, n) => forgePr(repo, n) ?? prPageUrl(dashboard(), repo, branch, n),
    repository: (repo) => forgeRepo(repo) ?? dashboardPage(dashboard(), ['flaky', repo.host, repo.owner, repo.name]),
    test(repo, test) {
      const page = forgeRepo(repo);
      if (page === null) return dashboardPage(dashboard(), ['flaky', repo.host, repo.owner, repo.name, 'test', test.id]);
      const file = test.file?.replace(/^\.?\/+/, '');
      return file && !file.startsWith('../') ? `${page}/${blob}/HEAD/${file.split('/').map(encodeURIComponent).join('/')}` : page;
    },
  };
}
