/** The flaky-test operations' request and response schemas (lists, details, uploads, settings, quarantine). */
import { z } from 'zod';
import {
  BranchNameInput,
  DateTimeInput,
  DateTimeOutput,
  looseEnum,
  looseInt,
  Repo,
  ShortString,
} from './common.js';

/** Longest window list-failing-tests accepts: 7 days. */
export const MAX_FAILING_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

export const TEST_STATUSES = ['healthy', 'flaky', 'broken'] as const;
export type TestStatus = (typeof TEST_STATUSES)[number];

export const PageQuery = z.object({
  page_size: looseInt(1, 100),
  page_token: z.string().max(1024).optional(),
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

const FlakyKey = { repo: Repo, org_url_slug: ShortString };

export const ListFailingTestsRequest = z
  .object({ ...FlakyKey, start_time: DateTimeInput, end_time: DateTimeInput, page_query: PageQuery })
  .superRefine((req, ctx) => {
    const start = Date.parse(req.start_time);
    const end = Date.parse(req.end_time);
    if (end <= start)
      ctx.addIssue({ code: 'custom', path: ['end_time'], message: 'must be after start_time' });
    else if (end - start > MAX_FAILING_WINDOW_MS)
      ctx.addIssue({
        code: 'custom',
        path: ['end_time'],
        message: 'must be at most 7 days after start_time',
      });
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
  external_ticket_id: ShortString,
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

/** Marks a field of a Trunk answer as a Railyard addition in the OpenAPI document. */
const extension = <T extends z.ZodType>(schema: T, description: string): T =>
  schema.meta({ 'x-railyard-extension': true, description });

/** What a test's status rests on (a Railyard extension of the test answers; Trunk clients ignore it). */
export const TEST_VERDICTS = ['healthy', 'not_enough_runs', 'failure_rate', 'pass_on_retry'] as const;
export const TestVerdict = z.object({
  /**
   * `not_enough_runs`: `status.value` is healthy only because the failure-rate monitor has fewer
   * runs than it needs while the test has failed; `pass_on_retry`: flaky because it failed and then
   * passed on the same commit; `failure_rate`: flaky or broken by its failure rate.
   */
  kind: z.enum(TEST_VERDICTS),
  /** What a view shows for the status: `not enough runs yet (3 of 10)`, `flaky: passed on retry`, `broken`. */
  label: z.string(),
  /** Runs and failures the failure-rate monitor counts now: stable branches, its window, not excluded. */
  runs: z.number().int().min(0),
  failures: z.number().int().min(0),
  /** The runs it needs for a verdict (`failure_rate.min_sample`) and its window. */
  min_runs: z.number().int().min(0),
  window_hours: z.number().min(0),
  /** Failures in the last 7 days that a pass of the same test on the same commit followed. */
  failures_passed_on_retry_last_7d: z.number().int().min(0),
});
export type TestVerdict = z.infer<typeof TestVerdict>;

/** A test's own quarantine setting as set (a Railyard extension): who set it, why, and until when. */
export const QuarantineOverrideInfo = z.object({
  setting: z.enum(['ALWAYS_QUARANTINE', 'NEVER_QUARANTINE']),
  /** The label of the token that set it (`token <id>` for a token without a label); null when set before owners were kept. */
  owner: z.string().nullable(),
  reason: z.string().nullable(),
  set_at: DateTimeOutput.nullable(),
  /** When it lapses by itself (null: never); from then the repository's settings decide. */
  until: DateTimeOutput.nullable(),
  /** Whole seconds until `until` (0 once lapsed); null without an end. */
  seconds_left: z.number().int().min(0).nullable(),
  /** True once `until` has passed: it no longer counts. */
  expired: z.boolean(),
});
export type QuarantineOverrideInfo = z.infer<typeof QuarantineOverrideInfo>;

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
  verdict: extension(
    TestVerdict.optional(),
    'Railyard extension: what the status rests on (e.g. not enough runs yet for a verdict, or failures that passed on retry)',
  ),
  quarantine_override: extension(
    QuarantineOverrideInfo.optional(),
    "Railyard extension: the test's own quarantine setting (always or never), its owner, reason and end; absent without one",
  ),
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
  quarantine_owner: extension(
    z.string().nullable(),
    'Railyard extension: who set ALWAYS_QUARANTINE (a token label); null for AUTO_QUARANTINE',
  ),
  quarantine_reason: extension(
    z.string().nullable(),
    'Railyard extension: why, as its owner said; null for AUTO_QUARANTINE or without one',
  ),
  quarantined_until: extension(
    DateTimeOutput.nullable(),
    'Railyard extension: when ALWAYS_QUARANTINE lapses by itself; null: never',
  ),
  seconds_left: extension(
    z.number().int().min(0).nullable(),
    'Railyard extension: whole seconds until quarantined_until; null without an end',
  ),
});
export type QuarantinedTest = z.infer<typeof QuarantinedTest>;

export const ListQuarantinedTestsResponse = z.object({
  quarantined_tests: z.array(QuarantinedTest),
  page: Page,
});
export type ListQuarantinedTestsResponse = z.infer<typeof ListQuarantinedTestsResponse>;

// ---------------------------------------------------------------------------------------------
// Railyard extensions (not in Trunk's contract): test-result upload, repository settings,
// per-test quarantine overrides and the quarantine check used by `railyard flaky run`.

/** At most this many report files in one upload request (the CLI splits larger sets). */
export const MAX_REPORTS_PER_UPLOAD = 1000;

export const UploadReport = z.object({
  /** The report's path as the uploader saw it: named in errors. */
  name: ShortString,
  /** The JUnit XML text. */
  content: z.string(),
});
export type UploadReport = z.infer<typeof UploadReport>;

export const UploadTestResultsRequest = z.object({
  ...FlakyKey,
  branch: BranchNameInput,
  sha: z
    .string()
    .trim()
    .regex(/^[0-9a-fA-F]{4,64}$/, 'must be a commit SHA (hex)'),
  pr_number: looseInt(1, 4_294_967_295).optional(),
  job: z.string().trim().max(256).optional(),
  /** Stored as a 32-bit integer (PostgreSQL's `integer`): a CI attempt number is far below. */
  attempt: looseInt(1, 2_147_483_647).optional(),
  variant: z.string().trim().max(256).optional(),
  started_at: DateTimeInput.optional(),
  /** Text of the repository's CODEOWNERS file; stored for the repository when sent. */
  codeowners: z.string().max(1_000_000).optional(),
  reports: z.array(UploadReport).min(1).max(MAX_REPORTS_PER_UPLOAD),
});
export type UploadTestResultsRequest = z.infer<typeof UploadTestResultsRequest>;

export const UploadTestResultsResponse = z.object({
  upload_id: z.string(),
  files: z.number().int().min(0),
  /** Distinct tests in the upload (retries of one test count once). */
  tests: z.number().int().min(0),
  passed: z.number().int().min(0),
  failed: z.number().int().min(0),
  skipped: z.number().int().min(0),
  /** Passed only after failing in the same upload (pass-on-retry evidence). */
  flaky: z.number().int().min(0),
  /** Tests never seen before in this repository. */
  new_tests: z.number().int().min(0),
  /** True when the upload looks like an infrastructure outage and is kept out of detection. */
  excluded_from_detection: z.boolean(),
});
export type UploadTestResultsResponse = z.infer<typeof UploadTestResultsResponse>;

const Fraction = z.number().min(0).max(1);

/** The longest ticket_url_template: every ticket link of every test of the repository carries it. */
export const TICKET_URL_TEMPLATE_MAX = 2048;

/** Where tickets of unhealthy tests are opened (`off`: nowhere). */
export const TICKET_SYSTEMS = ['github', 'gitlab', 'jira', 'off'] as const;
export type TicketSystem = (typeof TICKET_SYSTEMS)[number];

/** Detection and quarantine settings of one repository (every field has a default). */
export const RepositorySettings = z.object({
  quarantining_enabled: z.boolean(),
  auto_quarantine_flaky: z.boolean(),
  pass_on_retry: z.object({ enabled: z.boolean(), recovery_days: z.number().int().min(1).max(15) }),
  failure_rate: z.object({
    enabled: z.boolean(),
    /** Branch globs: `*` matches any characters including `/`, `?` one character. */
    branches: z.array(ShortString).min(1).max(10),
    window_hours: z.number().int().min(1).max(720),
    min_sample: z.number().int().min(1).max(100_000),
    flaky_activation: Fraction,
    flaky_resolution: Fraction,
    broken_threshold: Fraction,
  }),
  /** Uploads with at least this share of failed tests are kept out of detection… */
  infra_failure_threshold: Fraction,
  /** …when they have at least this many tests. */
  infra_failure_min_tests: z.number().int().min(1).max(1_000_000),
  /**
   * Where linked tickets live; `{id}` is replaced by the ticket id. Only http(s) URLs: the dashboard
   * renders the result as a link, and `javascript:` or `data:` there would run in its page.
   */
  ticket_url_template: z
    .string()
    .max(TICKET_URL_TEMPLATE_MAX)
    .refine((t) => /^https?:\/\/[^\s/]/i.test(t), {
      message: 'must be an http:// or https:// URL, e.g. https://jira.example.com/browse/{id}',
    })
    .refine((t) => t.includes('{id}'), { message: 'must contain {id} (where the ticket id goes)' }),
  /** Tickets opened for tests turning flaky or broken, closed when they are healthy again. */
  ticket_system: looseEnum(TICKET_SYSTEMS),
  /** Where: GitHub `owner/name`, GitLab project path, Jira project key ('' while off). */
  ticket_project: z.string().max(255),
});
export type RepositorySettings = z.infer<typeof RepositorySettings>;

export const GetRepositorySettingsRequest = z.object(FlakyKey);
export type GetRepositorySettingsRequest = z.infer<typeof GetRepositorySettingsRequest>;

export const UpdateRepositorySettingsRequest = z.object({
  ...FlakyKey,
  settings: z
    .object({
      ...RepositorySettings.shape,
      pass_on_retry: RepositorySettings.shape.pass_on_retry.partial(),
      failure_rate: RepositorySettings.shape.failure_rate.partial(),
    })
    .partial(),
});
export type UpdateRepositorySettingsRequest = z.infer<typeof UpdateRepositorySettingsRequest>;

export const QUARANTINE_OVERRIDES = ['ALWAYS_QUARANTINE', 'NEVER_QUARANTINE', 'AUTO'] as const;
export type QuarantineOverride = (typeof QUARANTINE_OVERRIDES)[number];

/** The longest reason a quarantine override keeps. */
export const QUARANTINE_REASON_MAX = 1024;

export const SetTestQuarantineRequest = z
  .object({
    ...FlakyKey,
    test_id: z.uuid(),
    /** AUTO removes the override (the repository's settings decide). */
    setting: looseEnum(QUARANTINE_OVERRIDES),
    /** When the override lapses by itself (ALWAYS_QUARANTINE or NEVER_QUARANTINE only); must be in the future. */
    until: DateTimeInput.optional(),
    /** Why (ALWAYS_QUARANTINE or NEVER_QUARANTINE only); shown with the override. */
    reason: z.string().trim().min(1).max(QUARANTINE_REASON_MAX).optional(),
  })
  .superRefine((req, ctx) => {
    if (req.setting !== 'AUTO') return;
    if (req.until !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['until'],
        message: 'only with ALWAYS_QUARANTINE or NEVER_QUARANTINE (AUTO removes the override)',
      });
    if (req.reason !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['reason'],
        message: 'only with ALWAYS_QUARANTINE or NEVER_QUARANTINE (AUTO removes the override)',
      });
  });
export type SetTestQuarantineRequest = z.infer<typeof SetTestQuarantineRequest>;

export const SetTestQuarantineResponse = z.object({
  /** Whether the test is quarantined now, under the repository's settings. */
  quarantined: z.boolean(),
  /** The override as stored; null after AUTO. */
  quarantine_override: QuarantineOverrideInfo.nullable(),
  /** Set when the override does not do what it says now: quarantining is off for the repository. */
  warning: z.string().optional(),
});
export type SetTestQuarantineResponse = z.infer<typeof SetTestQuarantineResponse>;

export const CheckQuarantineRequest = z.object({
  ...FlakyKey,
  test_ids: z.array(z.uuid()).max(100_000),
});
export type CheckQuarantineRequest = z.infer<typeof CheckQuarantineRequest>;

export const CheckQuarantineResponse = z.object({
  quarantining_enabled: z.boolean(),
  /** The asked ids that are quarantined now. */
  quarantined_test_ids: z.array(z.string()),
});
export type CheckQuarantineResponse = z.infer<typeof CheckQuarantineResponse>;

/** Longest history getTestFailureHistory returns, in days. */
export const MAX_HISTORY_DAYS = 90;

export const GetTestFailureHistoryRequest = z.object({
  ...FlakyKey,
  test_id: z.uuid(),
  /** Days in the window, ending with today (UTC). */
  days: looseInt(1, MAX_HISTORY_DAYS).default(30),
});
export type GetTestFailureHistoryRequest = z.infer<typeof GetTestFailureHistoryRequest>;

export const FailureHistoryDay = z.object({
  /** The UTC day, YYYY-MM-DD. */
  date: z.string(),
  runs: z.number().int().min(0),
  failures: z.number().int().min(0),
  /** failures / runs; null on a day without runs. */
  failure_rate: Fraction.nullable(),
  /** Runs of the test in uploads excluded from detection that day (not in runs or failures). */
  excluded_runs: z.number().int().min(0),
});
export type FailureHistoryDay = z.infer<typeof FailureHistoryDay>;

/** The most excluded uploads a test's history lists. */
export const MAX_EXCLUDED_UPLOADS = 20;

/** An upload kept out of detection (infrastructure failure protection), as a test's history shows it. */
export const ExcludedUpload = z.object({
  upload_id: z.string(),
  started_at: DateTimeOutput,
  branch: z.string(),
  sha: z.string(),
  job: z.string().nullable(),
  pr_number: z.number().int().nullable(),
  /** Distinct tests in the upload, and how many of them failed. */
  tests: z.number().int().min(0),
  failed: z.number().int().min(0),
  /** The test's own result in it. */
  outcome: z.enum(['passed', 'failed', 'flaky']),
});
export type ExcludedUpload = z.infer<typeof ExcludedUpload>;

export const GetTestFailureHistoryResponse = z.object({
  test_id: z.string(),
  /** One entry per UTC day of the window, oldest first, days without runs included. */
  days: z.array(FailureHistoryDay),
  /**
   * The uploads of the window with this test that were kept out of detection because most of
   * their tests failed (`infra_failure_threshold` of at least `infra_failure_min_tests`), newest
   * first, at most 20; `excluded_uploads_total` counts them all.
   */
  excluded_uploads: z.array(ExcludedUpload),
  excluded_uploads_total: z.number().int().min(0),
});
export type GetTestFailureHistoryResponse = z.infer<typeof GetTestFailureHistoryResponse>;
