import type { Repo } from '../contract/index.js';
import type { Store } from '../store/index.js';

/** `serve --org-repos ORG=host/owner/name`: repositories pinned to an organisation; `*` matches one segment. */
export interface OrgRepoPin {
  org: string;
  /** host, owner, name: lower case, or `*`. */
  segments: [string, string, string];
}

/** `host/owner/name`, lower case: the key repositories are owned by. */
export function ownerKey(repo: Repo): string {
  return `${repo.host.trim()}/${repo.owner.trim()}/${repo.name.trim()}`.toLowerCase();
}

/** Parses one `--org-repos` value, `ORG=host/owner/name` with `*` for a whole segment; throws a one-line message. */
export function parseOrgRepoPin(value: string): OrgRepoPin {
  const at = value.indexOf('=');
  const usage = `--org-repos: expected ORG=host/owner/name (each of host, owner, name may be *), got ${JSON.stringify(value.slice(0, 200))}`;
  if (at <= 0) throw new Error(usage);
  const org = value.slice(0, at).trim();
  const segments = value
    .slice(at + 1)
    .trim()
    .toLowerCase()
    .split('/');
  if (!org || segments.length !== 3 || segments.some((s) => s === '')) throw new Error(usage);
  for (const s of segments) {
    if (s !== '*' && s.includes('*'))
      throw new Error(
        `--org-repos: "*" stands for a whole segment, not part of one ("${s}" in ${value.slice(0, 200)})`,
      );
  }
  return { org, segments: segments as OrgRepoPin['segments'] };
}

const pinText = (p: OrgRepoPin) => `${p.org}=${p.segments.join('/')}`;

/** A message when two pins of different organisations could match the same repository, else null. */
export function conflictingPins(pins: readonly OrgRepoPin[]): string | null {
  for (let i = 0; i < pins.length; i++) {
    for (let j = i + 1; j < pins.length; j++) {
      const [a, b] = [pins[i]!, pins[j]!];
      if (a.org === b.org) continue;
      if (a.segments.every((s, k) => s === '*' || b.segments[k] === '*' || s === b.segments[k])) {
        return `--org-repos: ${pinText(a)} and ${pinText(b)} both match the same repositories; give each repository one organisation`;
      }
    }
  }
  return null;
}

function pinMatches(pin: OrgRepoPin, key: string): boolean {
  const parts = key.split('/');
  return pin.segments.every((s, i) => s === '*' || s === parts[i]);
}

/**
 * Which organisation a repository belongs to (decisions "Trust"): the one pinned by `--org-repos`,
 * else the one that first created a queue for it or uploaded tests for it (kept in the store).
 * Another organisation gets 404 for it everywhere; a repository nobody owns yet is free.
 */
export class RepoOwners {
  private constructor(
    private readonly store: Store,
    private readonly pins: readonly OrgRepoPin[],
    private readonly claimed: Map<string, string>,
  ) {}

  static async load(store: Store, pins: readonly OrgRepoPin[] = []): Promise<RepoOwners> {
    const conflict = conflictingPins(pins);
    if (conflict) throw new Error(conflict);
    return new RepoOwners(store, pins, await store.loadRepoOwners());
  }

  /** The owning organisation, or undefined while nobody owns the repository. */
  ownerOf(repo: Repo): string | undefined {
    const key = ownerKey(repo);
    for (const pin of this.pins) if (pinMatches(pin, key)) return pin.org;
    return this.claimed.get(key);
  }

  /** Whether `org` may see the repository: it owns it, or nobody does yet. */
  allows(org: string, repo: Repo): boolean {
    const owner = this.ownerOf(repo);
    return owner === undefined || owner === org;
  }

  /** Makes `org` the owner unless someone already is; whether `org` owns the repository now. */
  async claim(org: string, repo: Repo): Promise<boolean> {
    const owner = this.ownerOf(repo);
    if (owner !== undefined) return owner === org;
    const key = ownerKey(repo);
    const stored = await this.store.claimRepo(org, key);
    this.claimed.set(key, stored);
    return stored === org;
  }
}
