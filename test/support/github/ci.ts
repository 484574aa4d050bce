// The emulator's CI: every branch update asks the repository's `setCi` decider which checks to
// report, then check runs (and their suite) or commit statuses go from running to done after
// their delay, each with its webhook.
import { appJson, checkRunJson, iso, nodeId, userJson, type CheckRunFacts } from './json.js';
import { EmulatorState } from './state.js';
import {
  CI_APP,
  CI_USER,
  latestPerName,
  statusState,
  ZERO,
  type CheckConclusion,
  type CiCheck,
  type Repo,
  type SuiteState,
} from './types.js';

export abstract class EmulatorCi extends EmulatorState {
  // --- internals: CI -------------------------------------------------------------------------

  runCi(r: Repo, branch: string, sha: string): void {
    let checks: CiCheck[];
    try {
      checks = r.ci({ branch, sha, files: (path) => this.readFile(r, sha, path) });
    } catch {
      checks = [];
    }
    if (checks.length === 0) return;
    let suite: SuiteState | null = null;
    for (const c of checks) {
      if ((c.kind ?? 'check_run') === 'status') {
        this.addStatus(r, sha, 'pending', c.name, `${c.name} is running`, null, CI_USER);
        this.later(c.delayMs ?? 50, () => {
          this.addStatus(
            r,
            sha,
            statusState(c.conclusion),
            c.name,
            `${c.name}: ${c.conclusion}`,
            `${this.urls.web}/${r.owner}/${r.name}/ci/${sha}`,
            CI_USER,
          );
        });
        continue;
      }
      if (!suite) {
        const now = Date.now();
        suite = { id: this.id(), sha, branch, createdAt: now, updatedAt: now };
        r.suites.set(`${sha}:${suite.id}`, suite);
      }
      const run: CheckRunFacts = {
        id: this.id(),
        name: c.name,
        headSha: sha,
        status: 'in_progress',
        conclusion: null,
        startedAt: Date.now(),
        completedAt: null,
        suiteId: suite.id,
      };
      r.checkRuns.push(run);
      const s = suite;
      this.later(c.delayMs ?? 50, () => this.completeCheckRun(r, s, run, c.conclusion));
    }
  }

  completeCheckRun(r: Repo, suite: SuiteState, run: CheckRunFacts, conclusion: CheckConclusion): void {
    run.status = 'completed';
    run.conclusion = conclusion;
    run.completedAt = Date.now();
    suite.updatedAt = run.completedAt;
    this.emit(r, 'check_run', {
      action: 'completed',
      check_run: this.checkRunEventJson(r, suite, run),
      sender: userJson(this.urls, CI_USER, 'Bot'),
    });
    const runs = latestPerName(r.checkRuns.filter((c) => c.suiteId === suite.id));
    if (runs.every((c) => c.status === 'completed')) {
      const json = this.suiteJson(r, suite, runs);
      this.emit(
        r,
        'check_suite',
        (async () => {
          const c = await this.commitJson(r, suite.sha);
          json.head_commit = {
            id: c.sha,
            tree_id: c.tree,
            message: c.message,
            timestamp: c.cd,
            author: { name: c.an, email: c.ae },
            committer: { name: c.cn, email: c.ce },
          };
          return {
            action: 'completed',
            check_suite: json,
            sender: userJson(this.urls, CI_USER, 'Bot'),
          };
        })(),
      );
    }
  }

  suiteConclusion(runs: CheckRunFacts[]): string | null {
    if (runs.some((c) => c.status !== 'completed')) return null;
    for (const bad of ['failure', 'timed_out', 'cancelled', 'action_required'])
      if (runs.some((c) => c.conclusion === bad)) return bad;
    if (runs.every((c) => c.conclusion === 'skipped')) return 'skipped';
    if (runs.every((c) => c.conclusion === 'neutral' || c.conclusion === 'skipped')) return 'neutral';
    return 'success';
  }

  suiteJson(r: Repo, suite: SuiteState, runs: CheckRunFacts[]) {
    const api = `${this.urls.api}/repos/${r.owner}/${r.name}`;
    const conclusion = this.suiteConclusion(runs);
    return {
      id: suite.id,
      node_id: nodeId('CheckSuite', suite.id),
      head_branch: suite.branch,
      head_sha: suite.sha,
      status: conclusion === null ? 'in_progress' : 'completed',
      conclusion,
      url: `${api}/check-suites/${suite.id}`,
      before: ZERO,
      after: suite.sha,
      pull_requests: [],
      app: appJson(this.urls, CI_APP),
      created_at: iso(suite.createdAt),
      updated_at: iso(suite.updatedAt),
      latest_check_runs_count: runs.length,
      check_runs_url: `${api}/check-suites/${suite.id}/check-runs`,
      rerequestable: true,
      runs_rerequestable: true,
      head_commit: null as unknown,
    };
  }

  checkRunEventJson(r: Repo, suite: SuiteState, run: CheckRunFacts) {
    const base = checkRunJson(this.urls, r, CI_APP, run);
    const runs = latestPerName(r.checkRuns.filter((c) => c.suiteId === suite.id));
    const s = this.suiteJson(r, suite, runs);
    const {
      head_commit: _hc,
      latest_check_runs_count: _l,
      check_runs_url: _u,
      rerequestable: _r,
      runs_rerequestable: _rr,
      ...simple
    } = s;
    return { ...base, check_suite: simple };
  }

  readFile(r: Repo, sha: string, path: string): Promise<string | null> {
    return this.git
      .run(['--git-dir', r.dir, 'cat-file', 'blob', `${sha}:${path}`], { okCodes: [128] })
      .then((res) => (res.code === 0 ? res.stdout : null));
  }
}
