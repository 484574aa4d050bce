import type { Page } from '../../contract/index.js';
import { notFound } from '../errors.js';
import type { Handlers, RequestContext } from './types.js';

type FlakyOps = 'listFailingTests' | 'listUnhealthyTests' | 'getTestDetails' | 'listQuarantinedTests' | 'linkTicketToTestCase';
export type FlakyHandlers = Pick<Handlers, FlakyOps>;

const EMPTY_PAGE: Page = {
  total_rows: 0,
  total_pages: 0,
  next_page_token: '',
  prev_page_token: '',
  last_page_token: '',
  page_index: 0,
};

/** A flaky-test request names an organisation: it must be the token's (else 404, never revealing others). */
export function requireOrg(ctx: RequestContext, slug: string): void {
  if (slug !== ctx.org) throw notFound(`org_url_slug: no organisation "${slug}"`);
}

/**
 * The flaky-test operations, validated by the contract, answering from the still empty test
 * tables. The flaky-tests work replaces this module.
 */
export const flakyHandlers: FlakyHandlers = {
  listFailingTests(input, ctx) {
    requireOrg(ctx, input.org_url_slug);
    return { tests: [], page: EMPTY_PAGE };
  },
  listUnhealthyTests(input, ctx) {
    requireOrg(ctx, input.org_url_slug);
    return { tests: [], page: EMPTY_PAGE };
  },
  getTestDetails(input, ctx) {
    requireOrg(ctx, input.org_url_slug);
    throw notFound(`test_id: no test ${input.test_id}`);
  },
  listQuarantinedTests(input, ctx) {
    requireOrg(ctx, input.org_url_slug);
    return { quarantined_tests: [], page: EMPTY_PAGE };
  },
  linkTicketToTestCase(input) {
    throw notFound(`test_case_id: no test ${input.test_case_id}`);
  },
};
