/**
 * The builder of the remote forges (GitHub, GitLab): fetches the target and the PR heads into the
 * repository's bare cache (the runtime knows the forge's ref names), builds the test commit there
 * with the git forge's builder (buildRunCommit, on the basis the engine named), and pushes it as a
 * `railyard-merge/…` branch so the repository's own CI runs on it. A merge conflict is named as
 * the git forge names it (files, and the queued PR it is with).
 */
import { findEntry, type TestBasis, type TestRun } from '../../engine/index.js';
import { ChecksConfigError, MergeConflictError } from '../errors.js';
import { buildRunCommit, describeConflict, filesChangedOnTarget } from '../git/index.js';
import type { Builder, BuiltRun, DriverQueue } from '../types.js';
import type { CiWaiter } from './ci-wait.js';
import type { RemoteGit } from './remote-git.js';
import type { PersistedBase, RemoteRuntime } from './runtime.js';

export class RemoteBuilder implements Builder {
  constructor(
    private readonly rt: RemoteRuntime<PersistedBase>,
    private readonly ci: CiWaiter,
    private readonly pushRefs: RemoteGit['pushRefs'],
  ) {}

  async build(
    queue: DriverQueue,
    run: TestRun,
    basis: TestBasis,
    signal: AbortSignal,
  ): Promise<BuiltRun | null> {
    this.rt.busy.add(run.id);
    let listening = false;
    let published = false;
    try {
      const c = await this.rt.ctx(queue.repo);
      const prs = [...run.basePrNumbers, ...run.prNumbers].filter(
        (pr) => findEntry(queue.model, pr)?.state !== 'merged',
      );
      const head = await this.rt.fetch(c, queue.model.branch, prs);
      if (!head)
        throw new ChecksConfigError(
          'START_TEST_RUN_CONFIG_NOT_FOUND',
          `the target branch ${queue.model.branch} does not exist`,
        );
      const built = await buildRunCommit(c.dir, queue.model, run, basis, head);
      if (signal.aborted) return null;
      // Listen for its CI before pushing: the first results may arrive right after the push.
      this.ci.expect(queue, run, built.sha, Date.now(), false);
      listening = true;
      await c.git((dir, url, token) =>
        this.pushRefs(dir, url, token, [`+${built.sha}:refs/heads/${built.branch}`]),
      );
      this.ci.pushed(run.id, Date.now());
      if (signal.aborted) return null;
      published = true;
      return { branch: built.branch, sha: built.sha };
    } finally {
      if (!published) {
        if (listening) this.ci.forget(run.id);
        this.rt.busy.delete(run.id);
      }
    }
  }

  /**
   * Names a merge conflict as the git forge does (the files, and the queued PR ahead when it is
   * with one): the history detail, the log and `mq status` show it, and the failed PRs' comment
   * quotes it.
   */
  async describeFailure(queue: DriverQueue, run: TestRun, error: unknown): Promise<string | undefined> {
    if (!(error instanceof MergeConflictError)) return undefined;
    const c = await this.rt.ctx(queue.repo);
    const text = await describeConflict(c.dir, queue.model, run, error).catch(() => error.message);
    this.rt.refused(run.id, text);
    return text;
  }

  /** The files the test commit changes on the target, read in the repository's cache. */
  async changedFiles(queue: DriverQueue, _run: TestRun, sha: string): Promise<string[] | null> {
    const c = await this.rt.ctx(queue.repo);
    return filesChangedOnTarget(c.dir, queue.model.branch, sha);
  }
}
