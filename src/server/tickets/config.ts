/**
 * The server's ticket settings (`--ticket-api-url`, `--ticket-token-file` / RAILYARD_TICKET_TOKEN)
 * and the checks a repository's `ticket_system` / `ticket_project` pass before they are stored:
 * each bad value gets an answer that names the setting and what would do.
 */
import type { RepositorySettings, TicketSystem } from '../../contract/index.js';
import { badRequest } from '../errors.js';

export interface TicketOptions {
  /** The tracker's API root; default https://api.github.com for github, required for gitlab and jira. */
  apiUrl?: string;
  /** The token Railyard acts with in the tracker. */
  token?: string;
}

export const GITHUB_API = 'https://api.github.com';

/** `url` without its trailing slashes. */
export function withoutTrailingSlashes(url: string): string {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
}

const PROJECT_FORMS: Record<Exclude<TicketSystem, 'off'>, { test: RegExp; form: string }> = {
  github: {
    test: /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/,
    form: 'owner/name, e.g. acme/web',
  },
  gitlab: {
    test: /^[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)+$/,
    form: 'the project path, e.g. acme/platform/web',
  },
  jira: {
    test: /^[A-Z][A-Z0-9_]{1,254}$/,
    form: 'a project key, e.g. WEB (capital letters, digits, _; starting with a letter)',
  },
};

/** The API root tickets of `system` go to on this server, or undefined when it has none. */
export function ticketApiUrl(system: TicketSystem, options: TicketOptions): string | undefined {
  if (options.apiUrl) return options.apiUrl;
  return system === 'github' ? GITHUB_API : undefined;
}

/** Refuses ticket settings this server cannot act on (400 naming the setting). */
export function checkTicketSettings(
  next: RepositorySettings,
  changed: boolean,
  options: TicketOptions,
): void {
  const system = next.ticket_system;
  if (system === 'off' || !changed) return;
  const form = PROJECT_FORMS[system];
  if (!next.ticket_project)
    throw badRequest(`settings.ticket_project: needed with ticket_system ${system} (${form.form})`);
  if (!form.test.test(next.ticket_project))
    throw badRequest(
      `settings.ticket_project: "${next.ticket_project.slice(0, 100)}" is not a ${system} project: give ${form.form}`,
    );
  if (!ticketApiUrl(system, options))
    throw badRequest(
      `settings.ticket_system: ${system} needs the tracker's address: start the server with --ticket-api-url URL`,
    );
  if (!options.token)
    throw badRequest(
      `settings.ticket_system: the server has no ticket token: start it with --ticket-token-file FILE or RAILYARD_TICKET_TOKEN`,
    );
}
