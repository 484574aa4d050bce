/**
 * `/railyard merge [--priority P]`, `/railyard cancel`, `/railyard restart` in a comment (GitHub)
 * or note (GitLab), shared by the remote forges: which queue the PR is in (its target branch),
 * whether the author may (the driver asks its forge: write access on GitHub, Developer or more on
 * GitLab), a priority the API would refuse answered on the PR with the allowed values (nothing is
 * queued), and the command handed to the server with the same checks as the API.
 */
import { PRIORITY_NAMES, PriorityInput, type Repo } from '../../contract/index.js';
import type { DriverHost, DriverQueue, ForgeCommand } from '../types.js';

export const COMMAND_RE = /^\/railyard\s+(merge|cancel|restart)\b(.*)$/m;
/** What `--priority` accepts, for the answer to a command that gave something else. */
export const PRIORITY_HINT = `${Object.keys(PRIORITY_NAMES).join(', ')} or a number from 0 to 255`;

/** What a forge tells the shared command handling. */
export interface CommandForge<U> {
  /** How the forge writes a PR's number: `#12` (GitHub), `!12` (GitLab). */
  ref(n: number): string;
  /** Who wrote the command, for logs and the answer's @-mention. */
  nameOf(user: U): string;
  /** The PR's target branch (null: it does not exist). */
  baseBranch(repo: Repo, n: number, queueBranch: string): Promise<string | null>;
  /** Whether `user` may run commands on `repo`; `denied` names what they lack. */
  allowed(repo: Repo, user: U): Promise<boolean>;
  denied: string;
  /** Writes a comment on the PR. */
  reply(repo: Repo, n: number, text: string): Promise<void>;
}

/** Runs the `/railyard` command in `body` (when there is one) written by `user` on PR `n`. */
export async function runCommand<U>(
  host: DriverHost,
  log: (message: string) => void,
  forge: CommandForge<U>,
  queues: DriverQueue[],
  n: number,
  user: U,
  body: string,
): Promise<void> {
  const m = COMMAND_RE.exec(body);
  if (!m) return;
  const enabled = queues.filter((q) => q.model.config.commandsEnabled);
  if (enabled.length === 0) return;
  const repo = enabled[0]!.repo;
  const base = await forge.baseBranch(repo, n, enabled[0]!.model.branch);
  if (base === null) return;
  const q = enabled.find((x) => x.model.branch === base);
  if (!q) return;
  const who = forge.nameOf(user);
  if (!(await forge.allowed(repo, user))) {
    log(`/railyard ${m[1]} on ${forge.ref(n)} by ${who} ignored: ${forge.denied}`);
    return;
  }
  let command: ForgeCommand;
  if (m[1] === 'merge') {
    const raw = /--priority[=\s]+(\S+)/.exec(m[2] ?? '')?.[1];
    const priority = raw === undefined ? undefined : PriorityInput.safeParse(raw);
    if (priority && !priority.success) {
      // Nothing is queued with a priority the API would refuse: the PR gets the allowed values.
      log(`/railyard merge on ${forge.ref(n)} by ${who} refused: --priority ${raw}`);
      await forge.reply(
        repo,
        n,
        `@${who} \`/railyard merge\`: \`--priority ${raw}\` is not a priority; use ${PRIORITY_HINT}. ${forge.ref(n)} was not submitted.`,
      );
      return;
    }
    command = { type: 'submit', priority: priority?.data };
  } else command = { type: m[1] === 'cancel' ? 'cancel' : 'restart' };
  try {
    await host.command(q, n, command);
  } catch (error) {
    log(`/railyard ${m[1]} on ${forge.ref(n)} by ${who} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
