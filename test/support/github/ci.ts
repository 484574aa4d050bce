// The GitHub emulator's CI and commit statuses: every branch update asks the repository's `setCi`
// decider which checks to report, then check runs (and their suite) or commit statuses go from
// running to done after their delay, each with its webhook; statuses posted by anyone are shown on
// the PRs whose heads they are on; the combined and per-check states rules and mergeability read.
import type { AppFacts, CheckRunFacts, StatusFacts } from './json.js';
import type { Hooks } from './hooks.js';
import { checkRunPayload, checkSuitePayload, statusPayload } from './payloads.js';
import type { CheckConclusion, CiCheck, Repo, SuiteState, World } from './world.js';

/** The App CI's check runs are reported by, and its bot. */
export const CI_APP: AppFacts = {
  id: 15368,
  slug: 'github-actions',
  owner: 'github',
  createdAt: Date.parse('2018-07-30T09:30:17Z'),
};
export const CI_USER = 'github-actions[bot]';

/** The commit-status state a check conclusion counts as. */
export function statusState(c: CheckConclusion): StatusFacts['state'] {
  if (c === 'success' || c === 'neutral' || c === 'skipped') return 'success';
  if (c === 'failure') return 'failure';
  return 'error';
}

/** The newest run of each check name. */
export function latestPerName(runs: CheckRunFacts[]): CheckRunFacts[] {
  const m = new Map<string, CheckRunFacts>();
  for (const c of runs) {
    const prev = m.get(c.name);
    if (!prev || prev.id < c.id) m.set(c.name, c);
  }
  return [...m.values()];
}

export class Ci {
  constructor(
    private readonly w: World,
    private readonly hooks: Hooks,
  ) {}

  /** Runs the repository's CI on a branch update (the decider's checks, each done after its delay). */
  onPush(r: Repo, branch: string, sha: string): void {
    let checks: CiCheck[];
    try {
      checks = r.ci({ branch, sha, files: (path) => this.w.readFile(r, sha, path) });
    } catch {
      checks = [];
    }
    if (checks.length === 0) return;
    let suite: SuiteState | null = null;
    for (const c of checks) {
      if ((c.kind ?? 'check_run') === 'status') {
        this.addStatus(r, sha, 'pending', c.name, `${c.name} is running`, null, CI_USER);
        this.w.later(c.delayMs ?? 50, () => {
          this.addStatus(
            r,
            sha,
            statusState(c.conclusion),
            c.name,
            `${c.name}: ${c.conclusion}`,
            `${this.w.urls.web}/${r.owner}/${r.name}/ci/${sha}`,
            CI_USER,
          );
        });
        continue;
      }
      if (!suite) {
        const now = Date.now();
        suite = { id: this.w.id(), sha, branch, createdAt: now, updatedAt: now };
        r.suites.set(`${sha}:${suite.id}`, suite);
      }
      const run = this.startCheckRun(r, suite, c.name, sha);
      const s = suite;
      this.w.later(c.delayMs ?? 50, () => this.completeCheckRun(r, s, run, c.conclusion));
    }
  }

  /** A new run of check `name` on `sha` ending in `conclusion` at once (a status when it was one). */
  rerun(r: Repo, sha: string, name: string, conclusion: CheckConclusion): void {
    const old = [...r.checkRuns].reverse().find((c) => c.headSha === sha && c.name === name);
    const oldStatus = [...r.statuses].reverse().find((s) => s.sha === sha && s.context === name);
    if (!old && !oldStatus) throw new Error(`rerunCheck: no check ${name} on ${sha}`);
    if (old) {
      const suite = [...r.suites.values()].find((s) => s.id === old.suiteId)!;
      this.completeCheckRun(r, suite, this.startCheckRun(r, suite, name, sha), conclusion);
    } else {
      this.addStatus(r, sha, statusState(conclusion), name, `${name}: ${conclusion}`, null, CI_USER);
    }
  }

  /** A commit status (shown on every PR that had `sha` as a head; `status` webhook). */
  addStatus(
    r: Repo,
    sha: string,
    state: StatusFacts['state'],
    context: string,
    description: string | null,
    targetUrl: string | null,
    creator: string,
  ): StatusFacts {
    const s: StatusFacts = {
      id: this.w.id(),
      sha,
      state,
      context,
      description,
      targetUrl,
      creator,
      createdAt: Date.now(),
    };
    r.statuses.push(s);
    for (const p of r.prs.values())
      if (p.heads.has(sha))
        p.shown.push({ at: s.createdAt, kind: 'status', sha, context, state, description });
    if (this.hooks.active) this.hooks.emit(r, 'status', statusPayload(this.w, r, { ...s }));
    return s;
  }

  /** Statuses and check runs on `sha` together, as GitHub's mergeability reads them. */
  combinedState(r: Repo, sha: string): 'failure' | 'pending' | 'success' {
    const latest = new Map<string, string>();
    for (const s of r.statuses) if (s.sha === sha) latest.set(s.context, s.state);
    for (const c of r.checkRuns)
      if (c.headSha === sha)
        latest.set(
          `check:${c.name}`,
          c.status === 'completed' ? statusState(c.conclusion as CheckConclusion) : 'pending',
        );
    const states = [...latest.values()];
    if (states.some((s) => s === 'failure' || s === 'error')) return 'failure';
    if (states.some((s) => s === 'pending')) return 'pending';
    return 'success';
  }

  /** The latest state of a check (run by name or status by context) on a commit, or null when none reported. */
  checkState(r: Repo, sha: string, name: string): 'success' | 'failure' | 'error' | 'pending' | null {
    let out: 'success' | 'failure' | 'error' | 'pending' | null = null;
    let at = -1;
    for (const s of r.statuses)
      if (s.sha === sha && s.context === name && s.createdAt >= at) [out, at] = [s.state, s.createdAt];
    for (const c of r.checkRuns)
      if (c.headSha === sha && c.name === name && c.startedAt >= at) {
        out = c.status === 'completed' ? statusState(c.conclusion as CheckConclusion) : 'pending';
        at = c.startedAt;
      }
    return out;
  }

  private startCheckRun(r: Repo, suite: SuiteState, name: string, sha: string): CheckRunFacts {
    const run: CheckRunFacts = {
      id: this.w.id(),
      name,
      headSha: sha,
      status: 'in_progress',
      conclusion: null,
      startedAt: Date.now(),
      completedAt: null,
      suiteId: suite.id,
    };
    r.checkRuns.push(run);
    return run;
  }

  private completeCheckRun(
    r: Repo,
    suite: SuiteState,
    run: CheckRunFacts,
    conclusion: CheckConclusion,
  ): void {
    run.status = 'completed';
    run.conclusion = conclusion;
    run.completedAt = Date.now();
    suite.updatedAt = run.completedAt;
    this.hooks.emit(r, 'check_run', checkRunPayload(this.w, r, suite, run));
    const runs = latestPerName(r.checkRuns.filter((c) => c.suiteId === suite.id));
    if (runs.every((c) => c.status === 'completed'))
      this.hooks.emit(r, 'check_suite', checkSuitePayload(this.w, r, suite, runs));
  }
}
