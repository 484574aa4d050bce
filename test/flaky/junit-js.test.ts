// The JUnit parser on the reports of the JavaScript runners, as each tool wrote them (fixtures under
// test/fixtures/junit): jest + jest-junit, vitest, mocha + mocha-junit-reporter and Playwright (its
// projects as variants, its retries).
import { describe, expect, it } from 'vitest';
import { parseJUnit } from '../../src/flaky/junit.js';
import { at, attempts, load, named, one, passedOnRetry, read } from './junit-helpers.js';

describe('jest 29.7.0 + jest-junit 16.0.0 (addFileAttribute, reportTestSuiteErrors)', () => {
  const report = load('jest-junit.xml');
  const { cases } = report;

  it('reads every test case of both files, including the file that failed to load', () => {
    expect(report.suites).toBe(2);
    expect(cases).toHaveLength(7);
    expect(cases.filter((c) => c.file === 'src/math.test.js')).toHaveLength(5);
  });

  it('keeps the jest-junit naming: classname and name are both "describe… title"', () => {
    const c = one(cases, 'math sum adds 1 + 2 to equal 3');
    expect(c).toMatchObject({
      classname: 'math sum adds 1 + 2 to equal 3',
      file: 'src/math.test.js',
      parent: 'math',
      outcome: 'passed',
      durationMs: 2,
    });
    // jest-junit writes the suite start in UTC without a zone.
    expect(c.timestamp).toBe(at('2026-11-22T21:20:52Z'));
  });

  it('keeps the text of a <failure> that has no attributes (jest-junit writes neither message nor type)', () => {
    const c = one(cases, 'math sum fails with a changing number');
    expect(c.outcome).toBe('failed');
    expect(attempts(c)).toEqual(['failed:failure']);
    expect(c.attempts[0].message).toBeNull();
    expect(c.attempts[0].text).toMatch(/^Error: expect\(received\)\.toBe\(expected\)/);
    expect(c.attempts[0].text).toContain('Received: 633.5');
    expect(c.attempts[0].text).toContain('at new Promise (<anonymous>)');
  });

  it('reports a thrown error as a failure (jest-junit does not tell errors apart) and skipped tests as skipped', () => {
    const thrown = one(cases, 'math throws an unexpected error');
    expect(attempts(thrown)).toEqual(['failed:failure']);
    expect(thrown.attempts[0].text).toContain(
      "TypeError: cannot read properties of undefined (reading 'id')",
    );
    expect(attempts(one(cases, 'math sum is skipped for now'))).toEqual(['skipped']);
  });

  it('shows jest.retryTimes only as a final pass: the failed first attempt is not in the report', () => {
    const c = one(cases, 'math sum passes on the second attempt');
    expect(attempts(c)).toEqual(['passed']);
    expect(passedOnRetry(cases)).toEqual([]);
  });

  it('turns "Test suite failed to run" into two failing cases of the same identity, error then failure, with no timestamp', () => {
    const broken = named(cases, 'src/broken.test.js');
    expect(broken).toHaveLength(2);
    for (const c of broken) {
      expect(c).toMatchObject({
        classname: 'Test suite failed to run',
        file: 'src/broken.test.js',
        parent: 'src/broken.test.js',
        outcome: 'failed',
      });
      // The suite says timestamp="1970-01-01T00:00:00": a placeholder, not a time.
      expect(c.timestamp).toBeNull();
    }
    expect(broken.map(attempts)).toEqual([['failed:error'], ['failed:failure']]);
    expect(broken[0].attempts[0].text).toContain(
      "Cannot find module './does-not-exist' from 'src/broken.test.js'",
    );
    expect(broken[1].attempts[0].text).toContain('"code":"MODULE_NOT_FOUND"');
  });
});

describe('vitest 4.1.12 junit reporter', () => {
  for (const [fixture, hasFileAttribute] of [
    ['vitest-junit.xml', false],
    ['vitest-junit-file.xml', true],
  ] as const) {
    describe(fixture, () => {
      const report = load(fixture);
      const { cases } = report;

      it('reads 7 cases named "describe > … > test" with the file path as classname and file', () => {
        expect(report.suites).toBe(1);
        expect(cases).toHaveLength(7);
        expect(cases.map((c) => c.name)).toEqual([
          'calc > multiplies',
          'calc > division > divides by zero into Infinity',
          'calc > division > fails with an id 0xdeadbeef1234',
          'calc > division > passes on retry',
          'calc > division > skipped',
          'calc > division > todo later',
          'top-level throws',
        ]);
        for (const c of cases)
          expect(c).toMatchObject({
            classname: 'vt/calc.test.ts',
            file: 'vt/calc.test.ts',
            parent: 'vt/calc.test.ts',
          });
        // Without addFileAttribute the file comes from the path-like classname; with it, from `file`.
        expect(read(fixture).includes('file="vt/calc.test.ts"')).toBe(hasFileAttribute);
      });

      it('parses the ISO timestamp with milliseconds and the nanosecond-precision durations', () => {
        const c = one(cases, 'calc > division > fails with an id 0xdeadbeef1234');
        expect(c.timestamp).toBe(
          at(hasFileAttribute ? '2026-11-22T21:21:08.792Z' : '2026-11-22T21:21:10.192Z'),
        );
        expect(c.durationMs).toBe(hasFileAttribute ? 13 : 8);
        expect(one(cases, 'calc > division > skipped').durationMs).toBe(0);
      });

      it('writes assertion failures and thrown errors alike as <failure>, with message and type', () => {
        const assertion = one(cases, 'calc > division > fails with an id 0xdeadbeef1234');
        expect(attempts(assertion)).toEqual(['failed:failure']);
        expect(assertion.attempts[0].message).toBe(
          "expected { id: 'a1b2c3d4e5f6', …(1) } to deeply equal { id: 'x' }",
        );
        expect(assertion.attempts[0].text).toContain('-   "id": "x",');
        const thrown = one(cases, 'top-level throws');
        expect(attempts(thrown)).toEqual(['failed:failure']);
        expect(thrown.attempts[0].message).toBe('ECONNREFUSED 127.0.0.1:5432');
        expect(thrown.parent).toBe('vt/calc.test.ts');
      });

      it('reports skip and todo as skipped, and a test that passed on retry only as passed', () => {
        expect(attempts(one(cases, 'calc > division > skipped'))).toEqual(['skipped']);
        expect(attempts(one(cases, 'calc > division > todo later'))).toEqual(['skipped']);
        expect(attempts(one(cases, 'calc > division > passes on retry'))).toEqual(['passed']);
        expect(passedOnRetry(cases)).toEqual([]);
      });
    });
  }
});

describe('mocha 10.8.2 + mocha-junit-reporter 2.2.1', () => {
  const report = load('mocha-junit.xml');
  const { cases } = report;

  it('reads 3 cases from 3 suites (the empty "Root Suite" included); pending tests are not written', () => {
    expect(report.suites).toBe(3);
    expect(cases).toHaveLength(3);
    expect(cases.map((c) => c.name).filter((name) => name.includes('pending'))).toEqual([]);
  });

  it('uses the full title as name, the test title as classname and the suite file (absolute) as file', () => {
    const c = one(cases, 'api client parses a response');
    expect(c).toMatchObject({
      classname: 'parses a response',
      file: '/tmp/jfx/js/mt/api.spec.js',
      parent: 'api client',
      outcome: 'passed',
      durationMs: 1,
    });
    expect(c.timestamp).toBe(at('2026-11-22T21:21:16Z'));
  });

  it('reads a timeout as a failure with message and CDATA stack', () => {
    const c = one(cases, 'api client times out after 20ms');
    expect(c.durationMs).toBe(21);
    expect(attempts(c)).toEqual(['failed:failure']);
    expect(c.attempts[0].message).toMatch(
      /^Timeout of 20ms exceeded\. For async tests and hooks, ensure "done\(\)" is called/,
    );
    expect(c.attempts[0].text).toContain('at listOnTimeout (node:internal/timers:581:17)');
  });

  it('flattens the nested describe into its own suite and hides this.retries(2): only the final pass is written', () => {
    const c = one(cases, 'api client retries passes on third attempt');
    expect(c.parent).toBe('retries');
    expect(attempts(c)).toEqual(['passed']);
    expect(passedOnRetry(cases)).toEqual([]);
  });
});

describe('Playwright junit reporter with projects (chromium, firefox)', () => {
  it('one <testsuite> per project and file: the project in `hostname` is the variant of each case', () => {
    const { cases } = load('playwright-junit-projects.xml');
    expect(cases).toHaveLength(16);
    const byVariant = (v: string) => cases.filter((c) => c.variant === v);
    expect(byVariant('chromium')).toHaveLength(8);
    expect(byVariant('firefox')).toHaveLength(8);
    // The same test in two projects: two cases, alike but for the variant.
    const reload = named(cases, 'cart › keeps items after reload');
    expect(reload.map((c) => [c.variant, c.outcome])).toEqual([
      ['chromium', 'passed'],
      ['firefox', 'failed'],
    ]);
    expect(reload[1]).toMatchObject({
      classname: 'cart.spec.ts',
      file: 'cart.spec.ts',
      parent: 'cart.spec.ts',
    });
    expect(named(cases, 'checkout › pays with card').map((c) => [c.variant, c.outcome])).toEqual([
      ['chromium', 'failed'],
      ['firefox', 'failed'],
    ]);
  });

  it('without projects (`hostname=""`) there is no variant', () => {
    for (const name of ['playwright-junit.xml', 'playwright-junit-retries.xml']) {
      expect(new Set(load(name).cases.map((c) => c.variant)), name).toEqual(new Set([null]));
    }
  });

  it("other tools' `hostname` is the machine, never a variant (vitest, pytest, karma, .NET write one)", () => {
    const fixtures = [
      'vitest-junit.xml',
      'vitest-junit-file.xml',
      'pytest-xunit1.xml',
      'pytest-xunit2.xml',
      'pytest-reruns.xml',
      'jest-junit.xml',
      'mocha-junit.xml',
      'gotestsum-rerun.xml',
      'surefire-rerun-TEST-com.acme.shop.CartTest.xml',
      'surefire-2.22-flaky-TEST-com.acme.shop.CheckoutTest.xml',
    ];
    for (const name of fixtures)
      expect(new Set(load(name).cases.map((c) => c.variant)), name).toEqual(new Set([null]));
    // Karma and the .NET loggers: `hostname` and an `id` on the suite (not on the root).
    const karma = parseJUnit(
      '<testsuites><testsuite name="Chrome Headless 120" id="0" hostname="ci"><testcase name="adds" classname="Calc"/></testsuite></testsuites>',
    );
    expect(karma.cases[0].variant).toBeNull();
    // A <testsuites> root with an id but suites without hostname is not Playwright either.
    const other = parseJUnit(
      '<testsuites id="run-7"><testsuite name="s"><testcase name="t"/></testsuite></testsuites>',
    );
    expect(other.cases[0].variant).toBeNull();
  });
});

describe('Playwright 1.65.1 junit reporter, retries: 1', () => {
  it('default: the flaky test is a plain pass; the failing test is one <failure> whose text holds both attempts', () => {
    const report = load('playwright-junit.xml');
    const { cases } = report;
    expect(report.suites).toBe(1);
    expect(cases.map((c) => c.name)).toEqual([
      'checkout › computes the total',
      'checkout › flaky on first try',
      'checkout › always fails',
      'checkout › skipped',
    ]);
    for (const c of cases) {
      // No `file` attribute: the classname is the file relative to testDir.
      expect(c).toMatchObject({
        classname: 'checkout.spec.ts',
        file: 'checkout.spec.ts',
        parent: 'checkout.spec.ts',
      });
      expect(c.timestamp).toBe(at('2026-11-22T21:21:18.763Z'));
    }
    const flaky = one(cases, 'checkout › flaky on first try');
    expect(attempts(flaky)).toEqual(['passed']);
    expect(flaky.durationMs).toBe(23);
    const failing = one(cases, 'checkout › always fails');
    expect(attempts(failing)).toEqual(['failed:failure']);
    expect(failing.attempts[0].message).toBe('expect(received).toBe(expected) // Object.is equality');
    expect(failing.attempts[0].text).toContain('Retry #1');
    expect(one(cases, 'checkout › skipped')).toMatchObject({ outcome: 'skipped', durationMs: 0 });
    expect(passedOnRetry(cases)).toEqual([]);
  });

  it('includeRetries: <flakyFailure> makes the flaky test pass-on-retry evidence, <rerunFailure> adds a failed attempt', () => {
    const report = load('playwright-junit-retries.xml');
    const { cases } = report;
    expect(cases).toHaveLength(4);
    const flaky = one(cases, 'checkout › flaky on first try');
    expect(flaky.outcome).toBe('passed');
    expect(attempts(flaky)).toEqual(['failed:failure', 'passed']);
    expect(flaky.attempts[0].message).toBe('expect(received).toBeGreaterThan(expected)');
    // The trace of a flaky attempt is in <stackTrace><![CDATA[…]]></stackTrace>.
    expect(flaky.attempts[0].text).toMatch(/^Error: expect\(received\)\.toBeGreaterThan\(expected\)/);
    expect(flaky.attempts[0].text).toContain('Received:   0');

    const failing = one(cases, 'checkout › always fails');
    expect(failing.outcome).toBe('failed');
    expect(attempts(failing)).toEqual(['failed:failure', 'failed:failure']);
    expect(failing.attempts[1].text).toContain('Received: "status 503"');
    expect(failing.timestamp).toBe(at('2026-11-22T21:21:23.511Z'));
    expect(passedOnRetry(cases)).toEqual(['checkout › flaky on first try']);
  });
});
