// What the web dashboard tests in Chromium share (dashboard.test.ts and dashboard-git.test.ts):
// where their screenshots go, and a describe that runs only where Chromium is (and fails in CI
// without it).
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { browserMissing } from '../support/browser.js';

// Screenshots of every test go to test/e2e/.screenshots/ (gitignored): look at them after a change
// to the page.
export const SHOTS = join(import.meta.dirname, '.screenshots');

/** `suite` under `name` where Chromium is; without it, a failing test in CI and a skipped one elsewhere. */
export function describeInChromium(name: string, suite: () => void): void {
  const missing = browserMissing();
  if (missing && process.env.CI) {
    describe(name, () => {
      it('has a browser to run in (CI must not skip these tests)', () => {
        throw new Error(`CI is set but ${missing}`);
      });
    });
  } else if (missing) {
    describe.skip(`${name} — skipped: ${missing}`, () => {
      it('needs Chromium', () => {});
    });
    console.warn(`[dashboard] browser tests skipped: ${missing}`);
  } else {
    describe(name, suite);
  }
}
