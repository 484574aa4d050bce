/**
 * The GitLab driver's hook route, `POST /webhooks/gitlab` (declared as data; the server mounts it):
 * `X-Gitlab-Token` compared in constant time, deliveries de-duplicated by `X-Gitlab-Event-UUID` /
 * `Idempotency-Key`, answered at once (GitLab disables hooks that answer slowly or fail) and
 * handled after: Merge Request hooks re-read the MR, Pipeline and Job hooks poke the runs waiting on
 * that commit, Push hooks to a target restart the runs, Note hooks carry `/railyard merge
 * [--priority P]`, `/railyard cancel`, `/railyard restart` from members with Developer access or more.
 */
import { JSON_TOO_DEEP_MESSAGE, jsonTooDeep, PRIORITY_NAMES, PriorityInput } from '../../contract/index.js';
import { findEntry, isTerminal } from '../../engine/index.js';
import type { DriverQueue, DriverRoute, ForgeCommand } from '../types.js';
import type { GitLabCi } from './ci.js';
import { statusOf } from './client.js';
import type { GitLabPolling } from './events.js';
import { projectPath, repoOfProject } from './repo.js';
import { NOTE_MARKER } from './reporter.js';
import { repoKey, type GitLabRuntime } from './runtime.js';
import { readHookHeaders, RecentDeliveries } from './webhook.js';

const COMMAND_RE = /^\/railyard\s+(merge|cancel|restart)\b(.*)$/m;
const PRIORITY_HINT = `${Object.keys(PRIORITY_NAMES).join(', ')} or a number from 0 to 255`;
/** GitLab's Developer access level: the least that may run `/railyard` commands. */
const DEVELOPER = 30;

type Answer = { status: number; text: string };

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
    handle: (request) => this.receive(request.headers, request.body),
  };

  private receive(
    headers: Readonly<Record<string, string | string[] | undefined>>,
    body: string,
  ): Promise<Answer> {
    const secret = this.rt.options.webhookSecret;
    if (secret === null)
      return Promise.resolve({
        status: 404,
        text: 'hooks are off: start the server with --gitlab-webhook-secret-file or RAILYARD_GITLAB_WEBHOOK_SECRET',
      });
    const read = readHookHeaders(headers, secret);
    if (!read.ok) return Promise.resolve({ status: read.status, text: read.text });
    const { delivery } = read;
    if (!this.recent.firstTime(delivery))
      return Promise.resolve({ status: 200, text: `delivery ${delivery.id} was handled already` });
    // Depth first (issue 26): JSON.parse of a signed 20 MiB `[[[[…` holds the only request thread for seconds.
    if (jsonTooDeep(body)) return Promise.resolve({ status: 400, text: JSON_TOO_DEEP_MESSAGE });
    let payload: unknown;
    try {
      payload = JSON.parse(body);
    } catch {
      return Promise.resolve({ status: 400, text: 'body: invalid JSON' });
    }
    void this.rt.track(
      this.onEvent(delivery.event, payload as Record<string, never>).catch((error: unknown) =>
        this.rt.log(`hook ${delivery.event} ${delivery.id ?? ''} failed`, error),
      ),
    );
    return Promise.resolve({ status: 202, text: 'accepted' });
  }

  private queuesOf(project: { path_with_namespace?: string } | undefined): DriverQueue[] {
    const path = project?.path_with_namespace;
    if (typeof path !== 'string') return [];
    const repo = repoOfProject(this.rt.source.host, path);
    if (!repo) return [];
    const key = repoKey(repo);
    return this.rt.queues().filter((q) => this.rt.source.serves(q.repo) && repoKey(q.repo) === key);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  private async onEvent(event: string, p: any): Promise<void> {
    if (this.rt.closed || !this.rt.host) return;
    const queues = this.queuesOf(p.project);
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
        this.ci.changed(p.object_attributes?.sha);
        break;
      case 'Job Hook':
        this.ci.changed(p.sha);
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
        if (body.includes(NOTE_MARKER)) break; // the queue's own note
        await this.command(queues, Number(p.merge_request.iid), p.user, body);
        break;
      }
    }
  }

  /** A `/railyard` command from a member with Developer access or more. */
  private async command(
    queues: DriverQueue[],
    iid: number,
    user: { id?: number; username?: string } | undefined,
    body: string,
  ): Promise<void> {
    const m = COMMAND_RE.exec(body);
    if (!m || !user?.id || !this.rt.host) return;
    const enabled = queues.filter((q) => q.model.config.commandsEnabled);
    if (enabled.length === 0) return;
    const repo = enabled[0]!.repo;
    const facts = await this.rt.source.facts(repo, iid);
    if (!facts) return;
    const q = enabled.find((x) => x.model.branch === facts.baseBranch);
    if (!q) return;
    let level = 0;
    try {
      const member = (await this.rt.client.api.ProjectMembers.show(projectPath(repo), user.id, {
        includeInherited: true,
      })) as unknown as { access_level: number };
      level = member.access_level;
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
    if (level < DEVELOPER) {
      this.rt.log(
        `/railyard ${m[1]} on !${iid} by ${user.username ?? user.id} ignored: not a Developer or more`,
      );
      return;
    }
    let command: ForgeCommand;
    if (m[1] === 'merge') {
      const raw = /--priority[=\s]+(\S+)/.exec(m[2] ?? '')?.[1];
      const priority = raw === undefined ? undefined : PriorityInput.safeParse(raw);
      if (priority && !priority.success) {
        await this.rt.client.api.MergeRequestNotes.create(
          projectPath(repo),
          iid,
          `@${user.username} \`/railyard merge\`: \`--priority ${raw}\` is not a priority; use ${PRIORITY_HINT}. !${iid} was not submitted.`,
        );
        return;
      }
      command = { type: 'submit', priority: priority?.data };
    } else command = { type: m[1] === 'cancel' ? 'cancel' : 'restart' };
    try {
      await this.rt.host.command(q, iid, command);
    } catch (error) {
      this.rt.log(
        `/railyard ${m[1]} on !${iid} by ${user.username ?? user.id} failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
}
