/** `railyard flaky upload`: upload JUnit XML test reports for flaky-test detection. */
import { Flags } from '@oclif/core';
import { BaseCommand, repoFlag } from '../../cli/base-command.js';
import { ConfigError, parseTime } from '../../cli/config.js';
import type { UploadMeta } from '../../upload/reports.js';
import type { Client } from '../../client/index.js';

/** Flags of `flaky upload` and `flaky run`: which reports, and which CI job they come from. */
export const uploadFlags = {
  junit: Flags.string({ char: 'j', description: 'JUnit XML report: path, directory or glob (repeatable)', multiple: true }),
  repo: repoFlag('GITHUB_REPOSITORY, else origin remote, else the saved repo'),
  org: Flags.string({ description: 'organisation slug [env: RAILYARD_ORG]' }),
  branch: Flags.string({ char: 'b', description: 'branch the tests ran on [default: GITHUB_HEAD_REF / GITHUB_REF_NAME, else the checked-out branch]' }),
  sha: Flags.string({ description: 'commit SHA the tests ran on [default: the PR head / GITHUB_SHA, else git HEAD]' }),
  pr: Flags.integer({ description: 'pull request number [default: from the GitHub event]', min: 1, max: 4_294_967_295 }),
  job: Flags.string({ description: 'CI job name [default: GITHUB_JOB]' }),
  attempt: Flags.integer({ description: 'CI run attempt, 1 for the first [default: GITHUB_RUN_ATTEMPT]', min: 1, max: 2_147_483_647 }),
  variant: Flags.string({ description: 'variant (e.g. an OS or shard kind): the same test in another variant is another test' }),
  'started-at': Flags.string({ description: 'when the tests started (ISO 8601, or a duration back from now: 10m)' }),
  codeowners: Flags.string({ description: 'CODEOWNERS file [default: .github/CODEOWNERS, CODEOWNERS or docs/CODEOWNERS in the git root]' }),
};

export type UploadFlags = {
  [K in keyof typeof uploadFlags]?: K extends 'junit' ? string[] : K extends 'pr' | 'attempt' ? number : string;
} & { 'api-url'?: string; token?: string };

/** Commands that upload test results: the request fields from flags, GitHub Actions, git and the config. */
export abstract class UploadCommand extends BaseCommand {
  protected async uploadTarget(flags: UploadFlags): Promise<{ client: Client; meta: UploadMeta; org: string }> {
    const { githubContext, gitContext, readCodeowners, checkMeta } = await import('../../upload/reports.js');
    const { resolveOrg } = await import('../../cli/flaky.js');
    const org = await resolveOrg(flags.org, await this.config_());
    const ci = githubContext();
    const repo = flags.repo ? await this.repo(flags.repo) : (ci.repo ?? (await this.repo(undefined)));
    const needGit = !flags.branch || !flags.sha || !flags.codeowners;
    const local = needGit ? gitContext() : { branch: null, sha: null, root: null };
    const codeowners = await readCodeowners(flags.codeowners, local.root ?? process.env.GITHUB_WORKSPACE ?? null);
    const pr = flags.pr ?? ci.prNumber;
    const attempt = flags.attempt ?? ci.attempt;
    const job = flags.job ?? ci.job;
    const meta = checkMeta({
      repo,
      org_url_slug: org,
      branch: flags.branch ?? ci.branch ?? local.branch ?? '',
      sha: flags.sha ?? ci.sha ?? local.sha ?? '',
      ...(pr ? { pr_number: pr } : {}),
      ...(job ? { job } : {}),
      ...(attempt ? { attempt } : {}),
      ...(flags.variant ? { variant: flags.variant } : {}),
      ...(flags['started-at'] ? { started_at: parseTime(flags['started-at'], '--started-at') } : {}),
      ...(codeowners !== null ? { codeowners } : {}),
    });
    const client = await this.client(flags);
    return { client, meta, org };
  }
}

export default class Upload extends UploadCommand {
  static override summary = 'Upload JUnit XML test reports for flaky-test detection';
  static override description =
    'Paths, directories and globs come from --junit and/or the arguments. The reports are sent in as many requests as needed ' +
    '(each under the 20 MiB body limit and 1000 reports); the server parses them and answers with counts. ' +
    'In GitHub Actions the repository, branch, SHA, pull request, job and attempt default from the workflow run; ' +
    'elsewhere branch and SHA default from the git checkout.';
  static override examples = [
    '<%= config.bin %> flaky upload --org acme --junit "reports/**/*.xml"',
    '<%= config.bin %> flaky upload --org acme --repo acme/web --branch main --sha 4f1c2e9 junit.xml --variant linux',
  ];
  static override strict = false;
  static override args = {};
  static override flags = uploadFlags;

  async run() {
    const { flags, argv } = await this.parse(Upload);
    const positional = (argv as string[]).filter((a) => a !== '--');
    const unknown = positional.find((a) => a.startsWith('-') && a !== '-');
    if (unknown) throw new ConfigError(`${unknown}: unknown flag (see --help)`);
    const patterns = [...(flags.junit ?? []), ...positional];
    const { findReports, readReports, uploadReports, planBatches, summaryRows } = await import('../../upload/reports.js');
    const files = await findReports(patterns);
    const reports = await readReports(files);
    const { client, meta } = await this.uploadTarget(flags);
    planBatches(meta, reports); // a report that cannot fit fails here, before anything is sent
    const { Progress } = await import('../../cli/progress.js');
    const progress = new Progress(process.stderr, 0);
    let summary;
    try {
      summary = await uploadReports(client, meta, reports, {
        onProgress: (done, total) => {
          if (total > 1 && done < total) progress.update(`upload: request ${done + 1} of ${total} (${reports.length} reports)`);
        },
      });
    } finally {
      progress.stop();
    }
    const { renderRows } = await import('../../cli/render.js');
    this.out(
      renderRows(
        summaryRows(summary),
        [
          { header: 'uploaded', get: (r) => r[0] },
          { header: 'count', get: (r) => r[1] },
        ],
        'table',
        this.color(),
      ),
    );
    return summary;
  }
}
