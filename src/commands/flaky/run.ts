/** `railyard flaky run`: run a test command, upload its JUnit reports, and pass the job when every failure is quarantined. */
import { Flags } from '@oclif/core';
import { ConfigError } from '../../cli/config.js';
import type { UploadReport } from '../../contract/index.js';
import type { JUnitCase } from '../../flaky/junit.js';
import { uploadFlags, UploadCommand } from './upload.js';

/** The exit code a shell reports for a command that could not be started. */
const CANNOT_START = 127;
/** Test ids per checkQuarantine request (the contract allows 100,000). */
const CHECK_BATCH = 10_000;

export interface RunOutcome {
  command: string[];
  command_exit_code: number;
  exit_code: number;
  reports: string[];
  upload: unknown;
  failed_tests: Array<{ id: string; name: string; file: string | null; classname: string | null }>;
  quarantined_test_ids: string[];
  /** ok: asked the server; skipped: nothing to ask; failed: the server could not answer (nothing quarantined). */
  quarantine_check: 'ok' | 'skipped' | 'failed';
  warnings: string[];
}

export default class Run extends UploadCommand {
  static override summary = 'Run a test command, upload its JUnit reports, and pass the job when every failure is quarantined';
  static override description =
    'Runs the command after `--` (no shell), then takes the JUnit reports matching --junit that it wrote (modified since it started), ' +
    'uploads them, and asks the server which failed tests are quarantined. Exit code: 0 when the command failed and every failed test ' +
    'is quarantined; otherwise the command\'s own exit code (also when its reports hold no failed test, so a build error is never ' +
    'masked, and when the server cannot be reached). 127 when the command cannot be started. A test that failed and then passed on a ' +
    'retry in the same reports is flaky, not failed.';
  static override examples = [
    '<%= config.bin %> flaky run --org acme --junit "reports/*.xml" -- npx vitest run --reporter=junit --outputFile=reports/junit.xml',
    '<%= config.bin %> flaky run --junit target/surefire-reports -- mvn test',
  ];
  static override usage = ['<%= command.id %> --junit <path|glob>... [flags] -- <command> [args...]'];
  static override strict = false;
  static override args = {};
  static override flags = {
    ...uploadFlags,
    junit: Flags.string({
      char: 'j',
      description: 'JUnit XML reports the command writes: path, directory or glob (repeatable)',
      multiple: true,
      required: true,
    }),
  };

  async run(): Promise<RunOutcome> {
    const { flags } = await this.parse(Run);
    const dashdash = this.argv.indexOf('--');
    const command = dashdash >= 0 ? this.argv.slice(dashdash + 1) : [];
    if (command.length === 0) throw new ConfigError('give the test command after --, e.g. `railyard flaky run --junit "reports/*.xml" -- npm test`');
    // Settings problems (no token, no org, no SHA) are reported before the tests run.
    const target = await this.uploadTarget(flags);

    const started = Date.now();
    const code = await this.spawnCommand(command);
    if (code === null) this.exit(CANNOT_START);
    const warnings: string[] = [];
    const warn = (text: string) => {
      warnings.push(text);
      this.logToStderr(`railyard: ${text}`);
    };
    const outcome: RunOutcome = {
      command,
      command_exit_code: code,
      exit_code: code,
      reports: [],
      upload: null,
      failed_tests: [],
      quarantined_test_ids: [],
      quarantine_check: 'skipped',
      warnings,
    };

    const { findReports, readReports, uploadReports, formatBytes } = await import('../../upload/reports.js');
    // mtime granularity is 1 s on some file systems: a report written in the start second counts.
    const files = await findReports(flags.junit, { modifiedSinceMs: Math.floor(started / 1000) * 1000, allowEmpty: true });
    outcome.reports = files.map((f) => f.name);
    if (files.length === 0) {
      warn(`the command wrote no JUnit report matching ${flags.junit.map((p) => `"${p}"`).join(', ')}: nothing uploaded`);
      return this.finish(outcome);
    }
    const reports = await readReports(files);

    // Parse locally: the failed tests decide the exit code.
    const { parseJUnit } = await import('../../flaky/junit.js');
    const { foldResults } = await import('../../flaky/results.js');
    const cases: JUnitCase[] = [];
    const parsed: UploadReport[] = [];
    let unreadable = 0;
    for (const report of reports) {
      try {
        cases.push(...parseJUnit(report.content, report.name).cases);
        parsed.push(report);
      } catch (error) {
        unreadable++;
        warn(`${(error as Error).message}: not uploaded`);
      }
    }
    const results = foldResults(target.org, target.meta.repo, target.meta.variant ?? '', cases);
    const failed = results.filter((r) => r.outcome === 'failed');
    outcome.failed_tests = failed.map((r) => ({ id: r.id, name: r.name, file: r.file, classname: r.classname }));

    let serverOk = false;
    if (parsed.length) {
      try {
        const { Progress } = await import('../../cli/progress.js');
        const progress = new Progress(process.stderr, 0);
        try {
          outcome.upload = await uploadReports(target.client, target.meta, parsed, {
            onProgress: (done, total) => {
              if (total > 1 && done < total) progress.update(`upload: request ${done + 1} of ${total}`);
            },
          });
        } finally {
          progress.stop();
        }
        serverOk = true;
        const bytes = parsed.reduce((n, r) => n + Buffer.byteLength(r.content), 0);
        this.logToStderr(`railyard: uploaded ${parsed.length} report(s) (${formatBytes(bytes)}): ${results.length} test(s), ${failed.length} failed`);
      } catch (error) {
        warn(`upload failed, quarantining nothing: ${(error as Error).message}`);
      }
    }

    if (code === 0) return this.finish(outcome);
    if (failed.length === 0) {
      warn(`the command failed (exit ${code}) and its reports hold no failed test: keeping its exit code`);
      return this.finish(outcome);
    }
    if (unreadable) {
      warn(`${unreadable} report(s) could not be read, so other failures may be unknown: quarantining nothing`);
      return this.finish(outcome);
    }
    if (!serverOk) return this.finish(outcome);

    try {
      const quarantined = new Set<string>();
      let enabled = true;
      const ids = failed.map((r) => r.id);
      for (let from = 0; from < ids.length; from += CHECK_BATCH) {
        const check = await target.client.call('checkQuarantine', {
          repo: target.meta.repo,
          org_url_slug: target.org,
          test_ids: ids.slice(from, from + CHECK_BATCH),
        });
        enabled = check.quarantining_enabled;
        for (const id of check.quarantined_test_ids) quarantined.add(id);
      }
      outcome.quarantine_check = 'ok';
      outcome.quarantined_test_ids = failed.filter((r) => quarantined.has(r.id)).map((r) => r.id);
      const label = (r: (typeof failed)[number]) => `${[r.file ?? r.classname, r.name].filter(Boolean).join(' › ')} (${r.id})`;
      const lines: string[] = [];
      if (!enabled) lines.push('Quarantining is off for this repository (`railyard flaky settings --quarantining on`).');
      const rescued = failed.filter((r) => quarantined.has(r.id));
      const blocking = failed.filter((r) => !quarantined.has(r.id));
      if (rescued.length) lines.push(`Quarantined failures (${rescued.length}):`, ...rescued.map((r) => `  ${label(r)}`));
      if (blocking.length) lines.push(`Failures not quarantined (${blocking.length}):`, ...blocking.map((r) => `  ${label(r)}`));
      if (blocking.length === 0) {
        outcome.exit_code = 0;
        lines.push(`Every failed test is quarantined: exit 0 instead of ${code}.`);
      } else lines.push(`Exit ${code}.`);
      this.out(lines.join('\n') + '\n');
    } catch (error) {
      outcome.quarantine_check = 'failed';
      warn(`quarantine check failed, quarantining nothing: ${(error as Error).message}`);
    }
    return this.finish(outcome);
  }

  /** Returns the outcome for --json when it is 0, else prints it and exits with its code. */
  private finish(outcome: RunOutcome): RunOutcome {
    if (outcome.exit_code === 0) return outcome;
    if (this.jsonEnabled()) this.logJson(outcome);
    this.exit(outcome.exit_code);
  }

  /** Runs argv without a shell, with this terminal; resolves to its exit code (128 + signal when killed), null when it cannot start. */
  private async spawnCommand(argv: string[]): Promise<number | null> {
    const { spawn } = await import('node:child_process');
    const { constants } = await import('node:os');
    return new Promise<number | null>((resolve) => {
      let child: ReturnType<typeof spawn>;
      // The child gets Ctrl-C from the terminal itself; railyard waits for it to finish.
      const ignore = () => undefined;
      const forward = (signal: NodeJS.Signals) => () => child?.kill(signal);
      const onTerm = forward('SIGTERM');
      const onHup = forward('SIGHUP');
      const cleanup = () => {
        process.removeListener('SIGINT', ignore);
        process.removeListener('SIGTERM', onTerm);
        process.removeListener('SIGHUP', onHup);
      };
      try {
        child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' });
      } catch (error) {
        this.logToStderr(`Error: cannot start ${argv[0]}: ${(error as Error).message}`);
        resolve(null);
        return;
      }
      process.on('SIGINT', ignore);
      process.on('SIGTERM', onTerm);
      process.on('SIGHUP', onHup);
      child.once('error', (error: NodeJS.ErrnoException) => {
        cleanup();
        const why = error.code === 'ENOENT' ? 'command not found' : error.code === 'EACCES' ? 'permission denied' : error.message;
        this.logToStderr(`Error: cannot start ${argv[0]}: ${why} (exit ${CANNOT_START})`);
        resolve(null);
      });
      child.once('exit', (code, signal) => {
        cleanup();
        if (code !== null) resolve(code);
        else resolve(128 + ((signal && constants.signals[signal]) || 1));
      });
    });
  }
}
