// Pipelines, jobs and commit statuses of the GitLab emulator. A branch update asks the project's CI
// decider which jobs to run; they start `running` and finish after their delay. External statuses
// (`POST /projects/:id/statuses/:sha`) attach to the newest pipeline of the sha (or a new
// `external` one) and follow GitLab's state machine: posting the current state again is a 400.
import type { Hooks } from './hooks.js';
import { jobPayload, pipelinePayload } from './payloads.js';
import type { CiJob, JobStatus, Pipeline, Project, Status, World } from './world.js';

const FINISHED: JobStatus[] = ['success', 'failed', 'canceled', 'skipped'];
/** GitLab's state-machine event names, for its "Cannot transition status" message. */
const EVENT_OF: Record<string, string> = {
  pending: 'enqueue',
  running: 'run',
  success: 'succeed',
  failed: 'drop',
  canceled: 'cancel',
};

export class TransitionError extends Error {}

export class Ci {
  constructor(
    private readonly w: World,
    private readonly hooks: Hooks,
  ) {}

  /** Runs the project's CI on a branch update (a push pipeline with the decider's jobs). */
  onPush(p: Project, branch: string, before: string | null, sha: string, userId: number): void {
    let jobs: CiJob[];
    try {
      jobs = p.ci({
        project: p.pathWithNamespace,
        branch,
        sha,
        files: (path) => this.w.readFile(p, sha, path),
      });
    } catch {
      jobs = [];
    }
    if (jobs.length === 0) return;
    const pl = this.newPipeline(p, sha, branch, before, 'push', userId);
    for (const j of jobs) {
      // A skipped job never runs; a manual one waits for play (a test's `playJob`) from the start.
      const never = j.status === 'skipped' || j.status === 'manual';
      const s = this.addStatus(p, pl, {
        kind: 'build',
        name: j.name,
        stage: j.stage ?? 'test',
        status: never ? j.status : 'running',
        allowFailure: j.allowFailure ?? false,
        description: null,
        targetUrl: null,
        userId,
      });
      if (never) s.finishedAt = j.status === 'skipped' ? Date.now() : null;
      else this.w.later(j.delayMs ?? 50, () => this.finishJob(p, s, j.status));
    }
    this.refresh(p, pl);
  }

  /** Ends a running job (also: a test's manual retry result on a new job of the same name). */
  finishJob(p: Project, s: Status, status: JobStatus): void {
    s.status = status;
    s.finishedAt = Date.now();
    const pl = this.pipeline(s.pipelineId);
    this.emitJob(p, s, pl);
    this.refresh(p, pl);
  }

  /** A new run of job `name` on `sha` (GitLab's retry): the old one is marked retried. */
  retry(p: Project, sha: string, name: string, status: 'success' | 'failed' | 'canceled', delayMs = 0): void {
    const old = [...this.w.statuses]
      .reverse()
      .find((s) => s.projectId === p.id && s.sha === sha && s.name === name && !s.retried);
    if (!old) throw new Error(`retry: no job ${name} on ${sha}`);
    old.retried = true;
    const pl = this.pipeline(old.pipelineId);
    const s = this.addStatus(p, pl, { ...old, status: 'running' });
    this.refresh(p, pl);
    this.w.later(delayMs, () => this.finishJob(p, s, status));
  }

  /** `POST /projects/:id/statuses/:sha`: throws TransitionError for a state the status already has. */
  postStatus(
    p: Project,
    sha: string,
    o: {
      state: JobStatus;
      name: string;
      ref: string | null;
      description: string | null;
      targetUrl: string | null;
      userId: number;
      pipelineId: number | null;
    },
  ): Status {
    const ofSha = this.w.pipelines.filter((x) => x.projectId === p.id && x.sha === sha);
    let pl =
      (o.pipelineId !== null ? ofSha.find((x) => x.id === o.pipelineId) : undefined) ??
      [...ofSha].reverse().find((x) => o.ref === null || x.ref === o.ref);
    const ref = o.ref ?? pl?.ref ?? [...p.refs].find(([, s]) => s === sha)?.[0] ?? p.defaultBranch;
    if (!pl) pl = this.newPipeline(p, sha, ref, null, 'external', o.userId);
    const current = [...this.w.statuses]
      .reverse()
      .find((s) => s.pipelineId === pl.id && s.name === o.name && !s.retried);
    let s: Status;
    if (current && !FINISHED.includes(current.status)) {
      if (current.status === o.state || (o.state === 'pending' && current.status === 'running'))
        throw new TransitionError(
          `Cannot transition status via :${EVENT_OF[o.state]} from :${current.status} (Reason(s): Status cannot transition via "${EVENT_OF[o.state]}")`,
        );
      s = current;
      s.status = o.state;
      s.description = o.description ?? s.description;
      s.targetUrl = o.targetUrl ?? s.targetUrl;
      if (o.state === 'running' && s.startedAt === null) s.startedAt = Date.now();
      if (FINISHED.includes(o.state)) s.finishedAt = Date.now();
    } else {
      if (current) current.retried = true;
      s = this.addStatus(p, pl, {
        kind: 'external',
        name: o.name,
        stage: 'external',
        status: o.state,
        allowFailure: false,
        description: o.description,
        targetUrl: o.targetUrl,
        userId: o.userId,
      });
      if (FINISHED.includes(o.state)) s.finishedAt = Date.now();
    }
    this.refresh(p, pl);
    return s;
  }

  pipeline(id: number): Pipeline {
    const pl = this.w.pipelines.find((x) => x.id === id);
    if (!pl) throw new Error(`no pipeline ${id}`);
    return pl;
  }

  /** The newest pipeline of a sha (the MR's head pipeline when the sha is an MR head). */
  latest(p: Project, sha: string): Pipeline | null {
    return [...this.w.pipelines].reverse().find((x) => x.projectId === p.id && x.sha === sha) ?? null;
  }

  private newPipeline(
    p: Project,
    sha: string,
    ref: string,
    before: string | null,
    source: Pipeline['source'],
    userId: number,
  ): Pipeline {
    const now = Date.now();
    const pl: Pipeline = {
      id: this.w.id() + 5000,
      iid: p.nextPipelineIid++,
      projectId: p.id,
      sha,
      beforeSha: before ?? '0000000000000000000000000000000000000000',
      ref,
      status: 'created',
      source,
      userId,
      createdAt: now,
      updatedAt: now,
      startedAt: null,
      finishedAt: null,
    };
    this.w.pipelines.push(pl);
    return pl;
  }

  private addStatus(
    p: Project,
    pl: Pipeline,
    o: Pick<
      Status,
      'kind' | 'name' | 'stage' | 'status' | 'allowFailure' | 'description' | 'targetUrl' | 'userId'
    >,
  ): Status {
    const now = Date.now();
    const s: Status = {
      id: this.w.id() + 70_000,
      pipelineId: pl.id,
      projectId: p.id,
      sha: pl.sha,
      ref: pl.ref,
      retried: false,
      createdAt: now,
      startedAt: o.status === 'running' ? now : null,
      finishedAt: null,
      ...o,
      kind: o.kind,
    };
    this.w.statuses.push(s);
    if (s.kind === 'build') this.emitJob(p, s, pl);
    return s;
  }

  /** Recomputes a pipeline's status from its latest statuses; a change is a Pipeline Hook. */
  private refresh(p: Project, pl: Pipeline): void {
    const latest = this.w.statuses.filter((s) => s.pipelineId === pl.id && !s.retried);
    let status: JobStatus;
    if (latest.some((s) => s.status === 'running')) status = 'running';
    else if (latest.some((s) => s.status === 'pending' || s.status === 'created')) status = 'pending';
    else if (latest.some((s) => s.status === 'failed' && !s.allowFailure)) status = 'failed';
    else if (latest.some((s) => s.status === 'canceled')) status = 'canceled';
    // A manual job that may not be skipped (allow_failure: false) blocks the pipeline: `manual`.
    else if (latest.some((s) => s.status === 'manual' && !s.allowFailure)) status = 'manual';
    else if (latest.length === 0) status = 'created';
    // Every job skipped (rules, `[ci skip]`): the pipeline is `skipped`, not passed.
    else if (latest.every((s) => s.status === 'skipped')) status = 'skipped';
    else status = 'success';
    if (status === pl.status) return;
    const now = Date.now();
    pl.status = status;
    pl.updatedAt = now;
    if (status === 'running' && pl.startedAt === null) pl.startedAt = now;
    pl.finishedAt = FINISHED.includes(status) ? now : null;
    if (!this.hooks.active) return;
    const snapshot = { ...pl };
    const jobs = latest.map((s) => ({ ...s }));
    const mr = [...p.mrs.values()].find((m) => m.sha === pl.sha && m.state === 'opened') ?? null;
    this.hooks.emit('Pipeline Hook', pipelinePayload(this.w, p, snapshot, jobs, mr ? { ...mr } : null));
  }

  private emitJob(p: Project, s: Status, pl: Pipeline): void {
    if (!this.hooks.active) return;
    this.hooks.emit('Job Hook', jobPayload(this.w, p, { ...s }, { ...pl }));
  }
}

export function isFinished(s: JobStatus): boolean {
  return FINISHED.includes(s);
}
