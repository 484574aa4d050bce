/** Which organisation owns each repository (`serve --org-repos` pins, first claims recorded). */
import { repoKey, type Repo } from '../../contract/index.js';
import type { Store } from '../../store/index.js';

/**
 * `serve --org-repos ORG=host/owner/name`: repositories pinned to an organisation; `*` matches one
 * segment. An owner may be a GitLab namespace path and covers the subgroups under it.
 */
export interface OrgRepoPin {
  org: string;
  /** host, owner, name: lower case, or `*`; the owner may have several segments (`group/subgroup`). */
  segments: [string, string, string];
}

/** `host/owner/name`, lower case: the key repositories are owned by. */
export function ownerKey(repo: Repo): string {
  return repoKey(repo);
}

/**
 * Parses one `--org-repos` value, `ORG=host/owner/name` with `*` for a whole segment; throws a
 * one-line message. The owner may be a GitLab namespace path of several segments
 * (`gitlab.com/acme/platform/*`); it covers that namespace and its subgroups, and `*` any owner.
 */
export function parseOrgRepoPin(value: string): OrgRepoPin {
  const at = value.indexOf('=');
  const usage = `--org-repos: expected ORG=host/owner/name (each of host, owner, name may be *), got ${JSON.stringify(value.slice(0, 200))}`;
  if (at <= 0) throw new Error(usage);
  const org = value.slice(0, at).trim();
  const parts = value
    .slice(at + 1)
    .trim()
    .toLowerCase()
    .split('/');
  if (!org || parts.length < 3 || parts.some((s) => s === '')) throw new Error(usage);
  for (const s of parts) {
    if (s !== '*' && s.includes('*'))
      throw new Error(
        `--org-repos: "*" stands for a whole segment, not part of one ("${s}" in ${value.slice(0, 200)})`,
      );
  }
  const segments: OrgRepoPin['segments'] = [
    parts[0]!,
    parts.slice(1, -1).join('/'),
    parts[parts.length - 1]!,
  ];
  return { org, segments };
}

const pinText = (p: OrgRepoPin) => `${p.org}=${p.segments.join('/')}`;

/** A message when two pins of different organisations could match the same repository, else null. */
export function conflictingPins(pins: readonly OrgRepoPin[]): string | null {
  for (let i = 0; i < pins.length; i++) {
    for (let j = i + 1; j < pins.length; j++) {
      const [a, b] = [pins[i]!, pins[j]!];
      if (a.org === b.org) continue;
      if (a.segments.every((s, k) => fieldsOverlap(s, b.segments[k]!))) {
        return `--org-repos: ${pinText(a)} and ${pinText(b)} both match the same repositories; give each repository one organisation`;
      }
    }
  }
  return null;
}

/**
 * Whether two pin fields can match the same value: `*` matches anything; owners segment-wise on
 * their common prefix (an owner pin also covers the subgroups under it).
 */
function fieldsOverlap(a: string, b: string): boolean {
  if (a === '*' || b === '*') return true;
  const x = a.split('/');
  const y = b.split('/');
  return x.slice(0, Math.min(x.length, y.length)).every((s, i) => s === '*' || y[i] === '*' || s === y[i]);
}

function fieldMatches(pin: string, value: string): boolean {
  if (pin === '*') return true;
  const p = pin.split('/');
  const v = value.split('/');
  return p.length === v.length && p.every((s, i) => s === '*' || s === v[i]);
}

/** An owner pin covers that namespace and every subgroup under it (`acme` covers `acme/platform`). */
function ownerMatches(pin: string, owner: string): boolean {
  if (pin === '*') return true;
  const p = pin.split('/');
  const v = owner.split('/');
  return v.length >= p.length && p.every((s, i) => s === '*' || s === v[i]);
}

/** Whether a pin covers the repository (exported for its test). */
export function pinMatches(pin: OrgRepoPin, repo: Repo): boolean {
  const [host, owner, name] = [repo.host, repo.owner, repo.name].map((f) => f.trim().toLowerCase()) as [
    string,
    string,
    string,
  ];
  const [h, o, n] = pin.segments;
  return fieldMatches(h, host) && ownerMatches(o, owner) && fieldMatches(n, name);
}

/**
 * Which organisation may drive a repository's merge queues (decisions "Trust"; "Trust, second
 * pass"): the one pinned by `--org-repos`, else the one that first created a queue for it (kept in
 * the store; older databases also hold claims made by test uploads). Flaky-test operations do not
 * consult it: their data is per organisation, and their answers must not show who uses what.
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
    return new RepoOwners(store, pins, await store.accounts.loadRepoOwners());
  }

  /** The owning organisation, or undefined while nobody owns the repository. */
  ownerOf(repo: Repo): string | undefined {
    for (const pin of this.pins) if (pinMatches(pin, repo)) return pin.org;
    return this.claimed.get(ownerKey(repo));
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
    const stored = await this.store.accounts.claimRepo(org, key);
    this.claimed.set(key, stored);
    return stored === org;
  }
}
