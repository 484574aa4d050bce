/** A test's identity: the stable id Railyard gives a test from its name, file, class and variant. */
import { hash } from 'node:crypto';
import { parse as parseUuid } from 'uuid';
import { repoKey, type Repo } from '../contract/index.js';

/** Fixed namespace of Railyard test ids (a random UUID chosen once; never change it). */
export const TEST_ID_NAMESPACE = '7c1f3b52-4a8e-5d0b-9e61-2f4c8a9d3e17';
const NAMESPACE_BYTES = Buffer.from(parseUuid(TEST_ID_NAMESPACE));

export interface TestIdentity {
  file: string | null;
  classname: string | null;
  parent: string | null;
  name: string;
  variant: string;
}

export { repoKey };

/** The namespace, then the name being hashed (grown when a name does not fit). */
let scratch = Buffer.alloc(4096);
NAMESPACE_BYTES.copy(scratch);

/**
 * UUID v5 (RFC 9562 §5.5) of `name` in the test-id namespace: SHA-1 of namespace and name, version
 * and variant bits set. The same as uuid's `v5(name, TEST_ID_NAMESPACE)` (a test holds them
 * equal); done here on the hex digest because an upload computes one per test and the generic
 * byte-array path cost twice as much. One-shot `hash` over a reused buffer: a Hash object per
 * test (createHash, two updates, digest) cost 1.0–1.9 µs, this 0.5–0.6 µs.
 */
function uuidV5(name: string): string {
  const size = NAMESPACE_BYTES.length + Buffer.byteLength(name, 'utf8');
  if (size > scratch.length) {
    scratch = Buffer.alloc(Math.max(size, scratch.length * 2));
    NAMESPACE_BYTES.copy(scratch);
  }
  scratch.write(name, NAMESPACE_BYTES.length, 'utf8');
  const h = hash('sha1', scratch.subarray(0, size), 'hex');
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Test ids of one organisation's repository: UUID v5 of the JSON array (org, repo, file,
 * classname, parent, name, variant). Any byte change in one of them is another test. Uploaders and
 * the server compute it the same way, so `railyard flaky run` can ask about the tests of a report
 * without a round trip per test. The organisation and repository part is encoded once.
 */
export function testIds(org: string, repo: Repo): (t: TestIdentity) => string {
  const head = `[${JSON.stringify(org)},${JSON.stringify(repoKey(repo))},`;
  return (t) =>
    uuidV5(
      `${head}${JSON.stringify(t.file ?? '')},${JSON.stringify(t.classname ?? '')},${JSON.stringify(t.parent ?? '')},` +
        `${JSON.stringify(t.name)},${JSON.stringify(t.variant)}]`,
    );
}

/** The id of one test (see testIds). */
export function testId(org: string, repo: Repo, t: TestIdentity): string {
  return testIds(org, repo)(t);
}
