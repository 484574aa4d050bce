/**
 * The GitLab driver's hook route, `POST /webhooks/gitlab` (declared as data; the server mounts it):
 * `X-Gitlab-Token` compared in constant time, deliveries de-duplicated by `X-Gitlab-Event-UUID` /
 * `Idempotency-Key`, answered at once (GitLab disables hooks that answer slowly or fail) and
 * handled after: Merge Request hooks re-read the MR, Pipeline and Job hooks that report more than
 * "still running" poke the runs waiting on
 * that commit (and re-read MRs GitLab holds on that head), Push hooks to a target restart the
 * runs, Note hooks carry `/railyard merge [--priority P]`, `/railyard cancel`, `/railyard restart`
 * from members with Developer access or more (../shared/commands.ts). A hook naming a project by a
 * new path (it was moved) finds its queues by the project's id. Handled deliveries and
 * command notes are recorded in the database (docs/decisions.md): a replayed delivery, or a note
 * brought again, acts once — also after a restart and on another replica.
 */
import { JSON_TOO_DEEP_MESSAGE, jsonTooDeep } from '../../contract/index.js';
import { findEntry, isTerminal } from '../../engine/index.js';
import { COMMAND_RE, runCommand, type CommandForge } from '../shared/commands.js';
import type { DriverQueue, DriverRoute } from '../types.js';
import type { GitLabCi } from './ci.js';
import { statusOf } from './client.js';
import type { GitLabPolling } from './events.js';
import { projectPath, repoOfProject } from './repo.js';
import { NOTE_MARKER } from './reporter.js';
import { repoKey, type GitLabRuntime } from './runtime.js';
import { readHookHeaders, RecentDeliveries } from './deliveries.js';

/** GitLab's Developer access level: the least that may run `/railyard` commands. */
const DEVELOPER = 30;

type Answer = { status: number; text: string };

/**
 * Pipeline and job statuses that decide nothing yet: a verdict waits for every counted job, and a
 * job's finish (success, failed, canceled, skipped) or a manual job waiting has its own hook.
 */
const UNDECIDED: ReadonlySet<unknown> = new Set([
  'created',
  'waiting_for_resource',
  'preparing',
  'pending',
  'running',
]);

export class GitLabWebhooks {
  private readonly recent = new RecentDeliveries();

  constructor(
    private readonly rt: GitLabRuntime,
    private readonly ci: GitLabCi,
    private readonly polling: GitLabPolling,
  ) {}

  readonly route: DriverRoute = {
    method: 'POST',
    path: '/webhooks/gitlab',
    checkHeaders: (headers) => this.checkHeaders(headers),
    handle: (request) => this.receive(request.headers, request.body),
  };

  /** Before the body is read: hooks on, and the configured token in X-Gitlab-Token. */
  private checkHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): Answer | null {
    const secret = this.rt.options.webhookSecret;
    if (secret === null)
      return {
        status: 404,
        text: 'hooks are off: start the server with --gitlab-webhook-secret-file or RAILYARD_GITLAB_WEBHOOK_SECRET',
      };
    const read = readHookHeaders(headers, secret);
    return read.ok ? null : { status: read.status, text: read.text };
  }

  private async receive(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    body: string,
  ): Promise<Answer> {
    const secret = this.rt.options.webhookSecret;
    if (secret === null)
      return {
        status: 404,
        text: 'hooks are off: start the server with --gitlab-webhook-secret-file or RAILYARD_GITLAB_WEBHOOK_SECRET',
      };
    const read = readHookHeaders(headers, secret);
    if (!read.ok) return { status: read.status, text: read.text };
    const { delivery } = read;
    const handled = {
      status: 200,
      text: `delivery ${delivery.id ?? delivery.idempotencyKey} was handled already`,
    };
    if (!this.recent.firstTime(delivery)) return handled;
    // Depth first: JSON.parse of a signed 20 MiB `[[[[…` holds the only request thread for seconds.
    if (jsonTooDeep(body)) return { status: 400, text: JSON_TOO_DEEP_MESSAGE };
    let payload: unknown;
    try {
      payload = JSON.parse(body);
    } catch {
      return { status: 400, text: 'body: invalid JSON' };
    }
    // Recorded in the database (bounded per project): once handled, a delivery never acts again.
    const queues = await this.queuesOf((payload as { project?: never } | null)?.project);
    const keys = [delivery.id, delivery.idempotencyKey].filter((k): k is string => Boolean(k));
    if (queues.length > 0 && this.rt.host && keys.length > 0) {
      const host = this.rt.host;
      const repo = queues[0]!.repo;
      const first = await Promise.all([...new Set(keys)].map((k) => host.remember(repo, 'delivery', k)));
      if (first.includes(false)) return handled;
    }
    void this.rt.track(
      this.onEvent(delivery.event, payload as Record<string, never>).catch((error: unknown) =>
        this.rt.log(`hook ${delivery.event} ${delivery.id ?? ''} failed`, error),
      ),
    );
    return { status: 202, text: 'accepted' };
  }

  /**
   * The queues of the hook's project: by its path, else by its id (a project moved since its queue
   * was made: hooks name the new path, the queue the old one, which GitLab still redirects).
   */
  private async queuesOf(
    project: { id?: unknown; path_with_namespace?: string } | undefined,
  ): Promise<DriverQueue[]> {
    const path = project?.path_with_namespace;
    if (typeof path !== 'string') return [];
    const repo = repoOfProject(this.rt.source.host, path);
    if (!repo) return [];
    const key = repoKey(repo);
    const mine = this.rt.queues().filter((q) => this.rt.source.serves(q.repo));
    const byPath = mine.filter((q) => repoKey(q.repo) === key);
    const id = project?.id;
    if (byPath.length > 0 || typeof id !== 'number') return byPath;
    const found: DriverQueue[] = [];
    for (const q of mine) {
      const qid = await this.rt.source.projectId(q.repo).catch((error: unknown) => {
        this.rt.log(`reading the id of GitLab project ${projectPath(q.repo)} failed`, error);
        return null;
      });
      if (qid === id) found.push(q);
    }
    return found;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private async onEvent(event: string, p: any): Promise<void> {
    if (this.rt.closed || !this.rt.host) return;
    const queues = await this.queuesOf(p.project);
    if (queues.length === 0) return;
    switch (event) {
      case 'Merge Request Hook': {
        const iid = p.object_attributes?.iid;
        this.rt.source.forget(queues[0]!.repo, iid);
        for (const q of queues) {
          const e = findEntry(q.model, iid);
          if (e && !isTerminal(e.state)) await this.polling.refreshMr(q, iid);
        }
        break;
      }
      case 'Pipeline Hook':
        this.shaChanged(p.object_attributes?.sha, UNDECIDED.has(p.object_attributes?.status));
        break;
      case 'Job Hook':
        this.shaChanged(p.sha, UNDECIDED.has(p.build_status));
        break;
      case 'Push Hook': {
        const ref: unknown = p.ref;
        if (typeof ref !== 'string' || !ref.startsWith('refs/heads/')) break;
        const branch = ref.slice('refs/heads/'.length);
        const mine = queues.filter((q) => q.model.branch === branch);
        if (mine.length === 0) break;
        const key = `${repoKey(mine[0]!.repo)} ${branch}`;
        const before = this.rt.targetHeads.get(key);
        const after: string | undefined = p.after;
        if (after && !/^0+$/.test(after)) this.rt.targetHeads.set(key, after);
        if (after && after !== before && !this.rt.own(mine[0]!.repo).has(after))
          for (const q of mine) await this.rt.dispatch(q, { type: 'targetMoved' });
        break;
      }
      case 'Note Hook': {
        const a = p.object_attributes;
        if (a?.noteable_type !== 'MergeRequest' || !p.merge_request) break;
        if (a.action !== undefined && a.action !== 'create') break;
        const body = String(a.note ?? '');
        if (body.includes(NOTE_MARKER) || !COMMAND_RE.test(body)) break; // the queue's own note, or no command
        // A command note acts once, ever: whatever delivery (a new id, none) brings it again.
        const id: unknown = a.id;
        if (
          typeof id !== 'number' ||
          !this.rt.host ||
          !(await this.rt.host.remember(queues[0]!.repo, 'comment', String(id)))
        ) {
          this.rt.log(
            `/railyard command in note ${String(id)} on !${String(p.merge_request.iid)} ignored: it was handled already`,
          );
          break;
        }
        await this.command(queues, Number(p.merge_request.iid), p.user, body);
        break;
      }
    }
  }

  /**
   * A check on `sha` changed: the runs waiting on it look again (not when the hook says it is still
   * `running`: nothing can be decided on it), and so do MRs GitLab holds on that head.
   */
  private shaChanged(sha: string | undefined, running: boolean): void {
    this.ci.changed(sha, running);
    void this.rt.track(this.polling.checksChanged(sha));
  }

  /** `/railyard` commands from members with Developer access or more. */
  private readonly commands: CommandForge<{ id: number; username?: string }> = {
    ref: (n) => `!${n}`,
    nameOf: (user) => user.username ?? String(user.id),
    baseBranch: async (repo, n) => (await this.rt.source.facts(repo, n))?.baseBranch ?? null,
    allowed: async (repo, user) => {
      try {
        const member = (await this.rt.client.api.ProjectMembers.show(projectPath(repo), user.id, {
          includeInherited: true,
        })) as unknown as { access_level: number };
        return member.access_level >= DEVELOPER;
      } catch (error) {
        if (statusOf(error) !== 404) throw error;
        return false;
      }
    },
    denied: 'not a Developer or more',
    reply: async (repo, n, body) => {
      await this.rt.client.api.MergeRequestNotes.create(projectPath(repo), n, body);
    },
  };

  private async command(
    queues: DriverQueue[],
    iid: number,
    user: { id?: number; username?: string } | undefined,
    body: string,
  ): Promise<void> {
    if (!user?.id || !this.rt.host) return;
    await runCommand(
      this.rt.host,
      (m) => this.rt.log(m),
      this.commands,
      queues,
      iid,
      { id: user.id, username: user.username },
      body,
    );
  }
}
