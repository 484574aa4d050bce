import type { Page, PageQuery, Repo } from '../../contract/index.js';
import type { FlakyService } from '../flaky.js';
import { notFound, ofTokenOrg } from '../errors.js';
import { ownerKey, type RepoOwners } from '../ownership.js';
import type { PageTokens } from '../page-tokens.js';
import type { Handlers, OpsOfTag, RequestContext } from './types.js';

type FlakyOps = OpsOfTag<'flaky-tests'>;
export type FlakyHandlers = Pick<Handlers, FlakyOps>;

/** A flaky-test request names an organisation: it must be the token's (else 404, never revealing others). */
export function requireOrg(ctx: RequestContext, slug: string): void {
  if (slug !== ctx.org) throw notFound(`org_url_slug: "${slug}" is not the token's organisation "${ctx.org}"`);
}

const noRepository = (repo: Repo, org: string) =>
  notFound(`repo: no test results for ${ownerKey(repo)} ${ofTokenOrg(org)}`);

/** The flaky-test operations (Trunk's and Railyard's extensions) over the flaky-test service. */
export function flakyHandlers(flaky: FlakyService, owners: RepoOwners, tokens: PageTokens): FlakyHandlers {
  /** Reads: another organisation's repository is a 404. */
  const read = (org: string, repo: Repo) => {
    if (!owners.allows(org, repo)) throw noRepository(repo, org);
  };
  /** Writes that store tests or settings make the organisation the repository's owner (first come). */
  const claim = async (org: string, repo: Repo) => {
    if (!(await owners.claim(org, repo))) throw noRepository(repo, org);
  };

  /** A handler of the token's organisation, once the request's org_url_slug is checked to be it and the repository is its own. */
  function inOrg<I extends { org_url_slug: string; repo: Repo }, O>(run: (org: string, input: I) => O) {
    return (input: I, ctx: RequestContext): O => {
      requireOrg(ctx, input.org_url_slug);
      read(ctx.org, input.repo);
      return run(ctx.org, input);
    };
  }

  /** A paged list: page tokens are opened and sealed for the organisation around the service's cursors. */
  function paged<
    I extends { org_url_slug: string; repo: Repo; page_query: PageQuery },
    O extends { page: Page },
  >(run: (org: string, input: I) => Promise<O>) {
    return inOrg(async (org, input: I): Promise<O> => {
      const page_token = tokens.open(org, input.page_query.page_token);
      const out = await run(org, { ...input, page_query: { ...input.page_query, page_token } });
      return { ...out, page: tokens.sealPage(org, out.page) };
    });
  }

  return {
    listFailingTests: paged((org, input) => flaky.listFailing(org, input)),
    listUnhealthyTests: paged((org, input) => flaky.listUnhealthy(org, input)),
    getTestDetails: inOrg((org, input) => flaky.details(org, input)),
    listQuarantinedTests: paged((org, input) => flaky.listQuarantined(org, input)),
    // Trunk's request has no org_url_slug: the token's organisation is the scope.
    linkTicketToTestCase: (input, ctx) => {
      read(ctx.org, input.repo);
      return flaky.linkTicket(ctx.org, input);
    },
    uploadTestResults: inOrg(async (org, input) => {
      await claim(org, input.repo);
      return flaky.upload(org, input);
    }),
    getRepositorySettings: inOrg((org, input) => flaky.getSettings(org, input.repo)),
    updateRepositorySettings: inOrg(async (org, input) => {
      await claim(org, input.repo);
      return flaky.updateSettings(org, input);
    }),
    setTestQuarantine: inOrg((org, input) => flaky.setQuarantine(org, input)),
    checkQuarantine: inOrg((org, input) => flaky.checkQuarantine(org, input)),
    getTestFailureHistory: inOrg((org, input) => flaky.failureHistory(org, input)),
  };
}
