import type { FlakyService } from '../flaky.js';
import { notFound } from '../errors.js';
import type { Handlers, OpsOfTag, RequestContext } from './types.js';

type FlakyOps = OpsOfTag<'flaky-tests'>;
export type FlakyHandlers = Pick<Handlers, FlakyOps>;

/** A flaky-test request names an organisation: it must be the token's (else 404, never revealing others). */
export function requireOrg(ctx: RequestContext, slug: string): void {
  if (slug !== ctx.org) throw notFound(`org_url_slug: no organisation "${slug}"`);
}

/** A handler of the token's organisation, once the request's org_url_slug is checked to be it. */
function inOrg<I extends { org_url_slug: string }, O>(run: (org: string, input: I) => O) {
  return (input: I, ctx: RequestContext): O => {
    requireOrg(ctx, input.org_url_slug);
    return run(ctx.org, input);
  };
}

/** The flaky-test operations (Trunk's and Railyard's extensions) over the flaky-test service. */
export function flakyHandlers(flaky: FlakyService): FlakyHandlers {
  return {
    listFailingTests: inOrg((org, input) => flaky.listFailing(org, input)),
    listUnhealthyTests: inOrg((org, input) => flaky.listUnhealthy(org, input)),
    getTestDetails: inOrg((org, input) => flaky.details(org, input)),
    listQuarantinedTests: inOrg((org, input) => flaky.listQuarantined(org, input)),
    // Trunk's request has no org_url_slug: the token's organisation is the scope.
    linkTicketToTestCase: (input, ctx) => flaky.linkTicket(ctx.org, input),
    uploadTestResults: inOrg((org, input) => flaky.upload(org, input)),
    getRepositorySettings: inOrg((org, input) => flaky.getSettings(org, input.repo)),
    updateRepositorySettings: inOrg((org, input) => flaky.updateSettings(org, input)),
    setTestQuarantine: inOrg((org, input) => flaky.setQuarantine(org, input)),
    checkQuarantine: inOrg((org, input) => flaky.checkQuarantine(org, input)),
  };
}
