import type { FlakyService } from '../flaky.js';
import { notFound } from '../errors.js';
import type { Handlers, OpsOfTag, RequestContext } from './types.js';

type FlakyOps = OpsOfTag<'flaky-tests'>;
export type FlakyHandlers = Pick<Handlers, FlakyOps>;

/** A flaky-test request names an organisation: it must be the token's (else 404, never revealing others). */
export function requireOrg(ctx: RequestContext, slug: string): void {
  if (slug !== ctx.org) throw notFound(`org_url_slug: no organisation "${slug}"`);
}

/** The flaky-test operations (Trunk's and Railyard's extensions) over the flaky-test service. */
export function flakyHandlers(flaky: FlakyService): FlakyHandlers {
  return {
    listFailingTests(input, ctx) {
      requireOrg(ctx, input.org_url_slug);
      return flaky.listFailing(ctx.org, input);
    },
    listUnhealthyTests(input, ctx) {
      requireOrg(ctx, input.org_url_slug);
      return flaky.listUnhealthy(ctx.org, input);
    },
    getTestDetails(input, ctx) {
      requireOrg(ctx, input.org_url_slug);
      return flaky.details(ctx.org, input);
    },
    listQuarantinedTests(input, ctx) {
      requireOrg(ctx, input.org_url_slug);
      return flaky.listQuarantined(ctx.org, input);
    },
    // Trunk's request has no org_url_slug: the token's organisation is the scope.
    linkTicketToTestCase: (input, ctx) => flaky.linkTicket(ctx.org, input),
    uploadTestResults(input, ctx) {
      requireOrg(ctx, input.org_url_slug);
      return flaky.upload(ctx.org, input);
    },
    getRepositorySettings(input, ctx) {
      requireOrg(ctx, input.org_url_slug);
      return flaky.getSettings(ctx.org, input.repo);
    },
    updateRepositorySettings(input, ctx) {
      requireOrg(ctx, input.org_url_slug);
      return flaky.updateSettings(ctx.org, input);
    },
    setTestQuarantine(input, ctx) {
      requireOrg(ctx, input.org_url_slug);
      return flaky.setQuarantine(ctx.org, input);
    },
    checkQuarantine(input, ctx) {
      requireOrg(ctx, input.org_url_slug);
      return flaky.checkQuarantine(ctx.org, input);
    },
  };
}
