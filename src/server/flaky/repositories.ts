/** The flaky-test service's repositories: found or created, their settings and CODEOWNERS. */
import { randomUUID } from 'node:crypto';
import type { Repo, RepositorySettings, UpdateRepositorySettingsRequest } from '../../contract/index.js';
import { CodeOwners } from '../../flaky/codeowners.js';
import { DEFAULT_SETTINGS } from '../../flaky/detect.js';
import { repoKey } from '../../flaky/identity.js';
import { quarantineMatches, type QuarantineMatch } from '../../flaky/quarantine.js';
import type { FlakyStore, RepositoryRow } from '../../store/flaky.js';
import { badRequest, notFound, ofTokenOrg } from '../errors.js';
import { repoKeyOf } from '../webhooks/events.js';
import { checkTicketSettings, ticketApiUrl, type TicketOptions } from '../tickets/config.js';

/** A repository with test results, as the service uses it. */
export interface Repository {
  id: string;
  org: string;
  repo: Repo;
  settings: RepositorySettings;
  codeowners: CodeOwners | null;
  /** How its tests are quarantined (the quarantine rule over its settings). */
  quarantine: QuarantineMatch[];
}

/** Stored settings over the defaults, so settings added later get their default. */
export function mergeSettings(
  base: RepositorySettings,
  patch: UpdateRepositorySettingsRequest['settings'] | Partial<RepositorySettings>,
): RepositorySettings {
  return {
    ...base,
    ...patch,
    pass_on_retry: { ...base.pass_on_retry, ...(patch.pass_on_retry ?? {}) },
    failure_rate: { ...base.failure_rate, ...(patch.failure_rate ?? {}) },
  } as RepositorySettings;
}

/** A stored repository as the service uses it. */
export function toRepository(row: RepositoryRow): Repository {
  const settings = mergeSettings(DEFAULT_SETTINGS, JSON.parse(row.settings) as Partial<RepositorySettings>);
  return {
    id: row.id,
    org: row.org,
    repo: row.repo,
    settings,
    codeowners: row.codeowners ? new CodeOwners(row.codeowners) : null,
    quarantine: quarantineMatches(settings),
  };
}

export async function findRepository(store: FlakyStore, org: string, repo: Repo): Promise<Repository | null> {
  const row = await store.repositories.findRepository(org, repoKey(repo));
  return row ? toRepository(row) : null;
}

export async function requireRepository(store: FlakyStore, org: string, repo: Repo): Promise<Repository> {
  const found = await findRepository(store, org, repo);
  if (!found) throw notFound(`repo: no test results for ${repoKey(repo)} ${ofTokenOrg(org)}`);
  return found;
}

/** The repository, created with default settings on first use (inside the caller's transaction). */
export async function ensureRepository(
  store: FlakyStore,
  org: string,
  repo: Repo,
  at: number,
): Promise<Repository> {
  const found = await findRepository(store, org, repo);
  if (found) return found;
  await store.repositories.ensureRepository(org, repoKey(repo), repo, randomUUID(), at);
  return (await findRepository(store, org, repo))!;
}

/**
 * The repository (created on first use), held by the caller's transaction until it ends, shared
 * with the other uploads of it (FlakyIngest.lockRepository).
 */
export async function lockRepository(
  store: FlakyStore,
  org: string,
  repo: Repo,
  at: number,
): Promise<Repository> {
  const found = await store.repositories.findRepository(org, repoKey(repo), true);
  if (found) return toRepository(found);
  const created = await ensureRepository(store, org, repo, at);
  await store.ingest.lockRepository(created.id);
  return created;
}

export async function updateSettings(
  store: FlakyStore,
  org: string,
  input: UpdateRepositorySettingsRequest,
  at: number,
  tickets: TicketOptions = {},
): Promise<RepositorySettings> {
  return store.transaction(async (tx) => {
    const repository = await ensureRepository(tx, org, input.repo, at);
    const next = mergeSettings(repository.settings, input.settings);
    const ticketsChanged =
      input.settings.ticket_system !== undefined || input.settings.ticket_project !== undefined;
    checkTicketSettings(next, ticketsChanged, tickets);
    if (next.ticket_system === 'off' && input.settings.ticket_system !== undefined)
      next.ticket_project = input.settings.ticket_project ?? '';
    const fr = next.failure_rate;
    if (fr.flaky_resolution > fr.flaky_activation) {
      throw badRequest('settings.failure_rate.flaky_resolution: must not be above flaky_activation');
    }
    if (fr.broken_threshold < fr.flaky_activation) {
      throw badRequest('settings.failure_rate.broken_threshold: must not be below flaky_activation');
    }
    await tx.repositories.setRepositorySettings(repository.id, JSON.stringify(next), at);
    if (ticketsChanged) {
      const on = next.ticket_system !== 'off';
      const url = on ? ticketApiUrl(next.ticket_system, tickets)! : (ticketApiUrl('github', tickets) ?? '');
      await tx.tickets.setLine(org, repository.id, repoKeyOf(repository.repo), url, on);
    }
    return next;
  });
}
