import { parse as parseUuid, v5 as uuidv5 } from 'uuid';
import type { Repo } from '../contract/index.js';

/** Fixed namespace of Railyard test ids (a random UUID chosen once; never change it). */
export const TEST_ID_NAMESPACE = '7c1f3b52-4a8e-5d0b-9e61-2f4c8a9d3e17';
const NAMESPACE_BYTES = parseUuid(TEST_ID_NAMESPACE);

export interface TestIdentity {
  file: string | null;
  classname: string | null;
  parent: string | null;
  name: string;
  variant: string;
}

/** `host/owner/name`, lower case: repositories are case-insensitive on every forge we know. */
export function repoKey(repo: Repo): string {
  return `${repo.host}/${repo.owner}/${repo.name}`.toLowerCase();
}

/**
 * The test id: UUID v5 of (org, repo, file, classname, parent, name, variant). Any byte change
 * in one of them is another test. Uploaders and the server compute it the same way, so
 * `railyard flaky run` can ask about the tests of a report without a round trip per test.
 */
export function testId(org: string, repo: Repo, t: TestIdentity): string {
  const name = JSON.stringify([org, repoKey(repo), t.file ?? '', t.classname ?? '', t.parent ?? '', t.name, t.variant]);
  // The same UUID as uuidv5(name, TEST_ID_NAMESPACE); bytes in, so the namespace is parsed once.
  return uuidv5(Buffer.from(name, 'utf8'), NAMESPACE_BYTES);
}
