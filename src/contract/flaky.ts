import { z } from 'zod';
import { DateTimeInput, DateTimeOutput, looseEnum, looseInt, NonEmptyString, Repo } from './common.js';

/** Longest window list-failing-tests accepts: 7 days. */
export const MAX_FAILING_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

export const TEST_STATUSES = ['healthy', 'flaky', 'broken'] as const;
export type TestStatus = (typeof TEST_STATUSES)[number];

export const PageQuery = z.object({
  page_size: looseInt(1, 100),
  page_token: z.string().optional(),
});
export type PageQuery = z.infer<typeof PageQuery>;

export const Page = z.object({
  total_rows: z.number().int().min(0),
  total_pages: z.number().int().min(0),
  next_page_token: z.string(),
  prev_page_token: z.string(),
  last_page_token: z.string(),
  page_index: z.number().int().min(0),
});
export type Page = z.infer<typeof Page>;

const FlakyKey = { repo: Repo, org_url_slug: NonEmptyString };

export const ListFailingTestsRequest = z
  .object({ ...FlakyKey, start_time: DateTimeInput, end_time: DateTimeInput, page_query: PageQuery })
  .superRefine((req, ctx) => {
    const start = Date.parse(req.start_time);
    const end = Date.parse(req.end_time);
    if (end <= start) ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'must be after start_time' });
    else if (end - start > MAX_FAILING_WINDOW_MS)
      ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'must be at most 7 days after start_time' });
  });
export type ListFailingTestsRequest = z.infer<typeof ListFailingTestsRequest>;

export const ListUnhealthyTestsRequest = z.object({
  ...FlakyKey,
  page_query: PageQuery,
  status: looseEnum(['FLAKY', 'BROKEN'] as const),
});
export type ListUnhealthyTestsRequest = z.infer<typeof ListUnhealthyTestsRequest>;

export const GetTestDetailsRequest = z.object({ ...FlakyKey, test_id: z.uuid() });
export type GetTestDetailsRequest = z.infer<typeof GetTestDetailsRequest>;

export const ListQuarantinedTestsRequest = z.object({ ...FlakyKey, page_query: PageQuery });
export type ListQuarantinedTestsRequest = z.infer<typeof ListQuarantinedTestsRequest>;

export const LinkTicketRequest = z.object({
  test_case_id: z.uuid(),
  external_ticket_id: NonEmptyString,
  repo: Repo,
});
export type LinkTicketRequest = z.infer<typeof LinkTicketRequest>;

export const TestStatusObject = z.object({
  value: z.enum(TEST_STATUSES),
  reason: z.string(),
  timestamp: DateTimeOutput,
});

export const FailureSummary = z.object({
  summary: z.string(),
  occurrence_count: z.number().int().min(0),
  last_occurrence: DateTimeOutput.optional(),
});

const TestCaseCore = {
  id: z.string(),
  repository: z.object({ html_url: z.string() }),
  html_url: z.string(),
  name: z.string(),
  variant: z.string(),
  status: TestStatusObject,
  file_path: z.string().optional(),
  parent: z.string().optional(),
  classname: z.string().optional(),
  codeowners: z.array(z.string()),
  pull_requests_impacted_last_7d: z.number().int().min(0),
  quarantined: z.boolean(),
  ticket: z.object({ html_url: z.string() }).optional(),
};

/** A test in list-unhealthy-tests: without failure statistics. */
export const UnhealthyTestCase = z.object(TestCaseCore);
export type UnhealthyTestCase = z.infer<typeof UnhealthyTestCase>;

/** A test in list-failing-tests and get-test-details: with failure statistics. */
export const DetailedTestCase = z.object({
  ...TestCaseCore,
  most_common_failures: z.array(FailureSummary),
  failure_rate_last_7d: z.number(),
  failure_rate_last_24h: z.number(),
});
export type DetailedTestCase = z.infer<typeof DetailedTestCase>;

export const ListUnhealthyTestsResponse = z.object({ tests: z.array(UnhealthyTestCase), page: Page });
export type ListUnhealthyTestsResponse = z.infer<typeof ListUnhealthyTestsResponse>;

export const ListFailingTestsResponse = z.object({ tests: z.array(DetailedTestCase), page: Page });
export type ListFailingTestsResponse = z.infer<typeof ListFailingTestsResponse>;

export const GetTestDetailsResponse = z.object({ test: DetailedTestCase });
export type GetTestDetailsResponse = z.infer<typeof GetTestDetailsResponse>;

export const QuarantinedTest = z.object({
  name: z.string(),
  parent: z.string().nullable(),
  file: z.string().nullable(),
  classname: z.string().nullable(),
  status: z.enum(['HEALTHY', 'FLAKY', 'BROKEN']),
  codeowners: z.array(z.string()),
  quarantine_setting: z.enum(['ALWAYS_QUARANTINE', 'AUTO_QUARANTINE']),
  quarantined_at: DateTimeOutput,
  status_last_updated_at: DateTimeOutput,
  test_case_id: z.string(),
  variant: z.string(),
});
export type QuarantinedTest = z.infer<typeof QuarantinedTest>;

export const ListQuarantinedTestsResponse = z.object({
  quarantined_tests: z.array(QuarantinedTest),
  page: Page,
});
export type ListQuarantinedTestsResponse = z.infer<typeof ListQuarantinedTestsResponse>;
