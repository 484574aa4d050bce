/**
 * Every link Railyard prints or sends about a repository, a pull request or a test: the page on
 * the forge the repository lives on (the forge's `ForgeLinks`, from its description), and the
 * dashboard's pages (hash routes of web/src/router.ts). A forge without web pages (the local git
 * forge, `--git-root`): where the contract requires a link (a tested PR's `prUrl`, a test's
 * `html_url`), it is the dashboard's page of the same thing, never an empty string or a made-up
 * `https://host/…`; where a link may be null (`railyard.pr_url` in webhook payloads), it is null.
 */
import type { Repo } from '../contract/index.js';
import type { ForgeLinks } from '../forge/types.js';

/** A function giving the forge's web page of a pull request (null: the forge has none). */
export type PrUrlOf = (repo: Repo, prNumber: number) => string | null;

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
   * A test's page: its file at HEAD on the forge, the repository's page when the file is unknown or
   * outside the repository, or the test's page on the dashboard.
   */
  test(repo: Repo, test: { id: string; file?: string | null }): string;
  /** The repository's flaky tests on the dashboard. */
  dashboardRepository(repo: Repo): string;
  /** A test's page on the dashboard: its status, history and failures. */
  dashboardTest(repo: Repo, testId: string): string;
}

/** The links of a server whose forge has these pages (undefined: none). */
export function serverLinks(forge: ForgeLinks | undefined, dashboard: () => string): Links {
  const forgePr: PrUrlOf = (repo, n) => forge?.pr(repo, n) ?? null;
  const forgeRepo = (repo: Repo) => forge?.repository(repo) ?? null;
  return {
    forgePr,
    pr: (repo, branch, n) => forgePr(repo, n) ?? prPageUrl(dashboard(), repo, branch, n),
    repository: (repo) => forgeRepo(repo) ?? dashboardPage(dashboard(), ['flaky', repo.host, repo.owner, repo.name]),
    dashboardRepository: (repo) => dashboardPage(dashboard(), ['flaky', repo.host, repo.owner, repo.name]),
    dashboardTest: (repo, id) => dashboardPage(dashboard(), ['flaky', repo.host, repo.owner, repo.name, 'test', id]),
    test(repo, test) {
      const page = forgeRepo(repo);
      if (page === null) return dashboardPage(dashboard(), ['flaky', repo.host, repo.owner, repo.name, 'test', test.id]);
      const file = test.file?.replace(/^\.?\/+/, '');
      return file && !file.startsWith('../') ? (forge?.file(repo, 'HEAD', file) ?? page) : page;
    },
  };
}
