// The emulator's webhooks: payloads built in event order (some need git reads first), signed with
// the hook's secret and delivered one at a time; every delivery is recorded and can be redelivered.
// Faults for tests: a filter loses, holds (to deliver late or out of order) or duplicates
// deliveries; replay() re-sends a captured delivery with the same id, another id or none.
import { randomUUID } from 'node:crypto';
import { sign as signPayload } from '@octokit/webhooks-methods';
import { commitObjectJson, iso, nodeId, pullJson, repoJson, userJson } from './json.js';
import { EmulatorCi } from './ci.js';
import { ZERO, type Delivery, type DeliveryFilter, type Pr, type Repo } from './types.js';
import type { StatusFacts } from './json.js';

export abstract class EmulatorWebhooks extends EmulatorCi {
  // --- internals: webhooks -------------------------------------------------------------------

  /** Queues a delivery; payloads still being built (git reads) keep their place in the order. */
  emit(
    r: Repo,
    event: string,
    payload: Record<string, unknown> | Promise<Record<string, unknown> | null>,
  ): void {
    const built = Promise.resolve(payload);
    const run = this.emitOrder
      .then(() => built)
      .then((p) => {
        if (p) this.emitNow(r, event, p);
      });
    this.emitOrder = run.catch(() => undefined);
    this.track(run);
  }
  emitOrder: Promise<unknown> = Promise.resolve();

  emitNow(r: Repo, event: string, payload: Record<string, unknown>): void {
    const full: Record<string, unknown> = { ...payload, repository: repoJson(this.urls, r) };
    const inst = [...this.installations.values()].find((i) => i.owner === r.owner && i.repo === r.name);
    if (inst) full.installation = { id: inst.id, node_id: nodeId('Installation', inst.id) };
    if (this.validator) {
      const v = this.validator.webhook(event, full);
      if (v)
        this.schemaViolations.push(
          `webhook ${event}${typeof full.action === 'string' ? `.${full.action}` : ''}: ${v}`,
        );
    }
    if (!this.webhook) return;
    const id = randomUUID();
    const json = JSON.stringify(full);
    // Form-encoded hooks carry the JSON in `payload=`; the signature covers the body as sent.
    const body =
      this.webhook.contentType === 'form' ? new URLSearchParams({ payload: json }).toString() : json;
    const d: Delivery = {
      id,
      event,
      status: 0,
      payload: full,
      ...(typeof payload.action === 'string' ? { action: payload.action } : {}),
    };
    this.bodies.set(id, { event, body, contentType: this.webhook.contentType });
    const fate = this.deliveryFilter?.({ event, action: d.action, payload: full }) ?? 'send';
    if (fate === 'drop') {
      d.lost = true;
      d.sentAt = 0;
      this.deliveries.push(d);
      return;
    }
    if (fate === 'hold') {
      this.held.push(d);
      return;
    }
    const run = this.deliveryChain.then(async () => {
      if (this.closed) return;
      d.sentAt = Date.now();
      d.status = await this.post(id, event, body);
      if (fate === 'duplicate') d.status = await this.post(id, event, body);
      this.deliveries.push(d);
    });
    this.deliveryChain = run.catch(() => undefined);
    this.track(run);
  }
  deliveryFilter: DeliveryFilter | null = null;
  readonly held: Delivery[] = [];

  async post(
    id: string | null,
    event: string,
    body: string,
    contentType = this.bodies.get(id ?? '')?.contentType ?? 'json',
  ): Promise<number> {
    const hook = this.webhook;
    if (!hook || this.closed) return 0;
    try {
      const res = await fetch(hook.url, {
        method: 'POST',
        headers: {
          'content-type': contentType === 'form' ? 'application/x-www-form-urlencoded' : 'application/json',
          'user-agent': 'GitHub-Hookshot/emulator',
          'x-github-event': event,
          ...(id === null ? {} : { 'x-github-delivery': id }),
          'x-github-hook-id': '1',
          'x-github-hook-installation-target-type': 'repository',
          'x-hub-signature-256': await signPayload(hook.secret, body),
        },
        body,
        signal: AbortSignal.any([this.abort.signal, AbortSignal.timeout(10_000)]),
      });
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 0;
    }
  }

  prEvent(r: Repo, p: Pr, action: string, actor: string, extra: Record<string, unknown> = {}): void {
    // Snapshot now: the PR may change before the git read below finishes.
    const snapshot: Pr = { ...p };
    const run = (async () => {
      const baseSha = (await this.resolve(r, `refs/heads/${snapshot.base}`)) ?? snapshot.headSha;
      return {
        action,
        number: snapshot.number,
        ...extra,
        pull_request: pullJson(this.urls, r, this.prFacts(r, snapshot, baseSha, null, 'unknown')),
        sender: userJson(this.urls, actor),
      };
    })();
    this.emit(r, 'pull_request', run);
  }

  async pushPayload(
    r: Repo,
    branch: string,
    before: string | null,
    after: string | null,
    forced: boolean,
    actor: string,
  ): Promise<Record<string, unknown> | null> {
    if (!this.webhook && !this.validator) return null;
    const web = `${this.urls.web}/${r.owner}/${r.name}`;
    const commits: unknown[] = [];
    let head: unknown = null;
    if (after !== null) {
      const range =
        before === null ? [after, '--not', '--branches', '--exclude', branch] : [`${before}..${after}`];
      const list = (await this.git.git(r.dir, ['rev-list', '--reverse', '--max-count=20', ...range]))
        .split('\n')
        .filter(Boolean);
      const toJson = async (sha: string) => {
        const c = await this.commitJson(r, sha);
        const files = await this.git.git(r.dir, [
          'diff-tree',
          '--no-commit-id',
          '--name-status',
          '-r',
          '--root',
          sha,
        ]);
        const added: string[] = [];
        const removed: string[] = [];
        const modified: string[] = [];
        for (const line of files.split('\n').filter(Boolean)) {
          const [st, path] = line.split('\t');
          (st === 'A' ? added : st === 'D' ? removed : modified).push(path);
        }
        return {
          id: c.sha,
          tree_id: c.tree,
          distinct: true,
          message: c.message,
          timestamp: c.cd,
          url: `${web}/commit/${c.sha}`,
          author: { name: c.an, email: c.ae, date: c.ad },
          committer: { name: c.cn, email: c.ce, date: c.cd },
          added,
          removed,
          modified,
        };
      };
      for (const sha of list) commits.push(await toJson(sha));
      head = await toJson(after);
    }
    return {
      ref: `refs/heads/${branch}`,
      before: before ?? ZERO,
      after: after ?? ZERO,
      created: before === null,
      deleted: after === null,
      forced,
      base_ref: null,
      compare: `${web}/compare/${(before ?? ZERO).slice(0, 12)}...${(after ?? ZERO).slice(0, 12)}`,
      commits,
      head_commit: head,
      pusher: { name: actor, email: `${actor.replace(/[^A-Za-z0-9._-]/g, '')}@users.noreply.github.com` },
      sender: userJson(this.urls, actor),
    };
  }

  statusEvent(r: Repo, s: StatusFacts): void {
    if (!this.webhook && !this.validator) return;
    const snapshot = { ...s };
    const run = (async () => {
      const c = await this.commitJson(r, snapshot.sha);
      const api = `${this.urls.api}/repos/${r.owner}/${r.name}`;
      const containing = (
        await this.git.git(r.dir, [
          'for-each-ref',
          '--format=%(refname:lstrip=2)',
          '--points-at',
          snapshot.sha,
          'refs/heads',
        ])
      )
        .split('\n')
        .filter(Boolean);
      return {
        id: snapshot.id,
        sha: snapshot.sha,
        name: `${r.owner}/${r.name}`,
        target_url: snapshot.targetUrl,
        avatar_url: null,
        context: snapshot.context,
        description: snapshot.description,
        state: snapshot.state,
        commit: commitObjectJson(this.urls, r, c),
        branches: containing.map((b) => ({
          name: b,
          commit: { sha: snapshot.sha, url: `${api}/commits/${snapshot.sha}` },
          protected: false,
        })),
        created_at: iso(snapshot.createdAt),
        updated_at: iso(snapshot.createdAt),
        sender: userJson(this.urls, snapshot.creator),
      };
    })();
    this.emit(r, 'status', run);
  }
  // --- webhooks ------------------------------------------------------------------------------

  setWebhook(url: string, secret: string, opts: { contentType?: 'json' | 'form' } = {}): void {
    this.webhook = { url, secret, contentType: opts.contentType ?? 'json' };
  }

  setDeliveryFilter(filter: DeliveryFilter | null): void {
    this.deliveryFilter = filter;
  }

  get heldDeliveries(): number {
    return this.held.length;
  }

  async releaseDeliveries(opts: { newestFirst?: boolean } = {}): Promise<number[]> {
    const list = this.held.splice(0);
    if (opts.newestFirst) list.reverse();
    const statuses: number[] = [];
    for (const d of list) {
      const b = this.bodies.get(d.id)!;
      d.sentAt = Date.now();
      d.status = await this.post(d.id, d.event, b.body);
      this.deliveries.push(d);
      statuses.push(d.status);
    }
    return statuses;
  }

  async replay(id: string, opts: { deliveryId?: string | null } = {}): Promise<number> {
    const b = this.bodies.get(id);
    if (!b) throw new Error(`no delivery ${id}`);
    const as = opts.deliveryId === undefined ? id : opts.deliveryId;
    return this.post(as, b.event, b.body, b.contentType);
  }

  async redeliver(id: string): Promise<number> {
    const b = this.bodies.get(id);
    if (!b) throw new Error(`no delivery ${id}`);
    const d = this.deliveries.find((x) => x.id === id)!;
    const status = await this.post(id, b.event, b.body);
    d.status = status;
    return status;
  }
}
