/**
 * Whether the bubblewrap tests (`--checks-sandbox bwrap`) can run here. Like PostgreSQL: with CI
 * set, a missing or unusable bwrap fails the run (.ci/run installs Debian's bubblewrap); elsewhere
 * the tests are skipped, saying why.
 */
import { isolationProblem } from '../../src/runner/index.js';

export async function bwrapUnavailable(): Promise<string | null> {
  return isolationProblem({ sandbox: 'bwrap' });
}

export async function skipWithoutBwrap(): Promise<boolean> {
  const why = await bwrapUnavailable();
  if (!why) return false;
  if (process.env.CI) throw new Error(`CI is set but the bubblewrap tests cannot run: ${why}`);
  console.warn(`skipping bubblewrap tests: ${why}`);
  return true;
}

/** Checks run as a uid of their own only when the server runs as root (as on CI). */
export function skipUnlessRoot(): boolean {
  if (process.getuid?.() === 0) return false;
  if (process.env.CI) throw new Error('CI is set but the tests do not run as root: checks cannot be shown to run as a uid of their own');
  console.warn('skipping tests of checks running as their own uid: the tests do not run as root');
  return true;
}
