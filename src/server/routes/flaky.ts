/** The flaky-test operations' handlers over the flaky-test service. */
import type { Page, PageQuery, Repo } from '../../contract/index.js';
import type { FlakyService } from '../flaky/service.js';
import { notFound } from '../errors.js';
import type { PageTokens } from '../flaky/page-tokens.js';
import type { Handlers, OpsOfTag, RequestContext } from './types.js';

type FlakyOps = OpsOfTag<'flaky-tests'>;
export type FlakyHandlers = Pick<Handlers, FlakyOps>;

/** A flaky-test request names an organisation: it must be the token's (else 404, never revealing others). */
export function requireOrg(ctx: RequestContext, slug: string): void {
  if (slug !== ctx.org)
    throw notFound(`org_url_slug: "${slug}" is not the token's organisation "${ctx.org}"`);
}

/**
 * The flaky-test operations (Trunk's and Railyard's extensions) over the flaky-test service.
 * Flaky-test data is stored per organisation: each organisation reads and writes its own records
 * of any repository, and no answer depends on whether another organisation uses that repository
 * (a 404 for "someone else's" against a 200 for "nobody's" let one organisation map which
 * repositories another uses; docs/decisions.md, "Trust, second pass"). Uploads therefore claim
 * nothing: only creating a merge queue, which drives the repository on its forge, does.
 */
export function flakyHandlers(flaky: FlakyService, tokens: PageTokens): FlakyHandlers {
  /** A handler of the token's organisation, once the request's org_url_slug is checked to be it and the repository is its own. */
  function inOrg<I extends { org_url_slug: string; repo: Repo }, O>(run: (org: string, input: I) => O) {
    return (input: I, ctx: RequestContext): O => {
      requireOrg(ctx, input.org_url_slug);
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
    linkTicketToTestCase: (input, ctx) => flaky.linkTicket(ctx.org, input),
    uploadTestResults: inOrg((org, input) => flaky.upload(org, input)),
    getRepositorySettings: inOrg((org, input) => flaky.getSettings(org, input.repo)),
    updateRepositorySettings: inOrg((org, input) => flaky.updateSettings(org, input)),
    setTestQuarantine: (input, ctx) => {
      requireOrg(ctx, input.org_url_slug);
      return flaky.setQuarantine(ctx.org, ctx.actor, input);
    },
    checkQuarantine: inOrg((org, input) => flaky.checkQuarantine(org, input)),
    getTestFailureHistory: inOrg((org, input) => flaky.failureHistory(org, input)),
  };
}
