import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { JUnitParseError, parseJUnit, parseTimestamp, type JUnitCase } from '../../src/flaky/junit.js';

// Every fixture under test/fixtures/junit was written by the named tool (see its README.md);
// the few inline documents below are synthetic and say so.
const dir = fileURLToPath(new URL('../fixtures/junit/', import.meta.url));
const read = (name: string) => readFileSync(dir + name, 'utf8');
const load = (name: string) => parseJUnit(read(name), name);

/** The single case with this name (and classname, when given). */
function one(cases: JUnitCase[], name: string, classname?: string): JUnitCase {
  const found = cases.filter(
    (c) => c.name === name && (classname === undefined || c.classname === classname),
  );
  expect(found, `${classname ?? ''} ${name}`).toHaveLength(1);
  return found[0];
}
const named = (cases: JUnitCase[], name: string) => cases.filter((c) => c.name === name);
/** Attempts in a compact form: `passed`, `skipped`, `failed:failure`, `failed:error`. */
const attempts = (c: JUnitCase) => c.attempts.map((a) => (a.kind ? `${a.outcome}:${a.kind}` : a.outcome));
const at = (iso: string) => Date.parse(iso);

/**
 * The pass-on-retry signal as the merging module sees it: test identities (file, classname, parent,
 * name) that have both a failed and a passed execution in one upload, whether the runner wrote the
 * failed attempts as children of one <testcase> or as duplicate <testcase> entries.
 */
function passedOnRetry(
  cases: JUnitCase[],
  key = (c: JUnitCase) => [c.file, c.classname, c.parent, c.name].join('\u0000'),
): string[] {
  const seen = new Map<string, { name: string; outcomes: Set<string> }>();
  for (const c of cases) {
    const entry = seen.get(key(c)) ?? { name: c.name, outcomes: new Set<string>() };
    for (const a of c.attempts) entry.outcomes.add(a.outcome);
    seen.set(key(c), entry);
  }
  return [...seen.values()]
    .filter((e) => e.outcomes.has('failed') && e.outcomes.has('passed'))
    .map((e) => e.name);
}

function parseError(xml: string, file: string): JUnitParseError {
  try {
    parseJUnit(xml, file);
  } catch (error) {
    expect(error).toBeInstanceOf(JUnitParseError);
    return error as JUnitParseError;
  }
  throw new Error(`${file} parsed without error`);
}

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

describe('pytest 7.2.1 (Debian)', () => {
  for (const [fixture, family] of [
    ['pytest-xunit2.xml', 'xunit2'],
    ['pytest-xunit1.xml', 'xunit1'],
  ] as const) {
    describe(`${fixture} (junit_family=${family})`, () => {
      const report = load(fixture);
      const { cases } = report;
      const file = family === 'xunit1' ? 'tests/test_orders.py' : null;

      it('reads 8 cases with dotted classnames and parametrised names; file only with xunit1', () => {
        expect(report.suites).toBe(1);
        expect(cases).toHaveLength(8);
        expect(one(cases, 'test_line_price[1-10]')).toMatchObject({
          classname: 'tests.test_orders.TestOrders',
          parent: 'pytest',
          file,
          outcome: 'passed',
        });
        expect(one(cases, 'test_line_price[3-7]').outcome).toBe('passed');
        expect(one(cases, 'test_flaky_network').classname).toBe('tests.test_orders');
        for (const c of cases) expect(c.file).toBe(file);
      });

      it('tells an assertion failure from a setup error', () => {
        const failure = one(cases, 'test_rounding_fails');
        expect(attempts(failure)).toEqual(['failed:failure']);
        expect(failure.attempts[0].message).toBe(
          'AssertionError: rounding drift for order 91823\nassert 2.67 == 2.68\n +  where 2.67 = round(2.675, 2)',
        );
        expect(failure.attempts[0].text).toContain('>       assert round(2.675, 2) == 2.68');
        const error = one(cases, 'test_uses_db');
        expect(attempts(error)).toEqual(['failed:error']);
        expect(error.attempts[0].message).toBe(
          'failed on setup with "ConnectionError: could not connect to server at 10.0.0.12:5432"',
        );
      });

      it('reads skip and xfail as skipped with their reasons', () => {
        expect(one(cases, 'test_refund').attempts).toEqual([
          { outcome: 'skipped', message: 'payment sandbox is down', text: null },
        ]);
        expect(one(cases, 'test_known_bug').attempts[0]).toMatchObject({
          outcome: 'skipped',
          message: 'known bug #77',
        });
      });

      it('reads the naive local timestamp with microseconds (the generating machine ran in UTC)', () => {
        expect(one(cases, 'test_total').timestamp).toBe(
          at(family === 'xunit1' ? '2026-11-22T21:21:34.832Z' : '2026-11-22T21:21:34.316Z'),
        );
        expect(one(cases, 'test_flaky_network').outcome).toBe('failed');
      });
    });
  }

  it('pytest-rerunfailures 10.2 (--reruns 2): the report keeps only the last attempt, so a pass on rerun is not visible', () => {
    const report = load('pytest-reruns.xml');
    const { cases } = report;
    expect(cases).toHaveLength(8);
    // Failed on the first run (see pytest-xunit1.xml, same code), passed on the rerun: one passing entry, no duplicate.
    expect(named(cases, 'test_flaky_network')).toHaveLength(1);
    expect(attempts(one(cases, 'test_flaky_network'))).toEqual(['passed']);
    // Failed all three runs: still one entry with one failure.
    expect(attempts(one(cases, 'test_rounding_fails'))).toEqual(['failed:failure']);
    expect(attempts(one(cases, 'test_uses_db'))).toEqual(['failed:error']);
    expect(one(cases, 'test_total')).toMatchObject({
      file: 'tests/test_orders.py',
      timestamp: at('2026-11-22T21:21:35.362Z'),
    });
    expect(passedOnRetry(cases)).toEqual([]);
  });
});

describe('gotestsum 1.8.2 --rerun-fails (go 1.19.8)', () => {
  const report = load('gotestsum-rerun.xml');
  const { cases } = report;

  it('reads every attempt as its own <testcase>: 11 entries for 6 tests', () => {
    expect(report.suites).toBe(1);
    expect(cases).toHaveLength(11);
    expect(new Set(cases.map((c) => c.name)).size).toBe(6);
    for (const c of cases) {
      // classname and suite are the package import path; gotestsum writes no file.
      expect(c).toMatchObject({
        classname: 'example.com/shop/cart',
        parent: 'example.com/shop/cart',
        file: null,
        durationMs: 0,
      });
      expect(c.timestamp).toBe(at('2026-11-22T21:21:41Z'));
    }
  });

  it('returns a test that failed then passed on rerun as two cases of the same identity: pass-on-retry evidence', () => {
    const flaky = named(cases, 'TestFlakyInventory');
    expect(flaky.map((c) => c.outcome)).toEqual(['failed', 'passed']);
    expect(flaky[0].attempts[0]).toMatchObject({ outcome: 'failed', kind: 'failure', message: 'Failed' });
    expect(flaky[0].attempts[0].text).toContain(
      'cart_test.go:28: inventory service returned 503 after 1500ms',
    );
    expect(passedOnRetry(cases)).toEqual(['TestFlakyInventory']);
  });

  it('keeps a test that failed on every run (and its subtest) as three failed cases', () => {
    expect(named(cases, 'TestDiscounts').map((c) => c.outcome)).toEqual(['failed', 'failed', 'failed']);
    expect(named(cases, 'TestDiscounts/coupon_expired').map((c) => c.outcome)).toEqual([
      'failed',
      'failed',
      'failed',
    ]);
    expect(one(cases, 'TestDiscounts/ten_percent').outcome).toBe('passed');
    expect(one(cases, 'TestTotal').outcome).toBe('passed');
  });

  it('reads t.Skip with the test output as message', () => {
    const c = one(cases, 'TestSkipped');
    expect(c.outcome).toBe('skipped');
    expect(c.attempts[0].message).toContain('cart_test.go:33: needs a warehouse');
  });
});

describe('Maven Surefire rerunFailingTestsCount=2', () => {
  it('Surefire 2.22.3 + JUnit 4.13.2: <flakyFailure> under a passing case is pass-on-retry evidence; rerun* are extra failed attempts', () => {
    const file = 'surefire-2.22-flaky-TEST-com.acme.shop.CheckoutTest.xml';
    const report = load(file);
    const { cases } = report;
    expect(report.suites).toBe(1);
    expect(cases).toHaveLength(5);
    for (const c of cases) {
      // Surefire writes neither a file nor a timestamp; the 50 JVM <properties> are ignored.
      expect(c).toMatchObject({
        classname: 'com.acme.shop.CheckoutTest',
        parent: 'com.acme.shop.CheckoutTest',
        file: null,
        timestamp: null,
      });
    }
    const flaky = one(cases, 'flakyCheckout');
    expect(flaky.outcome).toBe('passed');
    expect(attempts(flaky)).toEqual(['failed:failure', 'passed']);
    expect(flaky.attempts[0].message).toBe('checkout timed out after 3000 ms (attempt 1)');
    expect(flaky.attempts[0].text).toContain(
      'at com.acme.shop.CheckoutTest.flakyCheckout(CheckoutTest.java:12)',
    );

    const failing = one(cases, 'alwaysFails');
    expect(failing).toMatchObject({ outcome: 'failed', durationMs: 11 });
    expect(attempts(failing)).toEqual(['failed:failure', 'failed:failure', 'failed:failure']);
    expect(failing.attempts[2].text).toContain(
      'org.junit.ComparisonFailure: currency of order 5521 expected:<[EUR]> but was:<[USD]>',
    );
    const error = one(cases, 'throwsError');
    expect(attempts(error)).toEqual(['failed:error', 'failed:error', 'failed:error']);
    expect(error.attempts[1]).toMatchObject({ message: 'session 7f3a9c2e expired' });
    expect(error.attempts[1].text).toContain('java.lang.IllegalStateException: session 7f3a9c2e expired');
    expect(one(cases, 'taxes').attempts).toEqual([
      { outcome: 'skipped', message: 'waiting for tax service', text: null },
    ]);
    expect(attempts(one(cases, 'addsItems'))).toEqual(['passed']);
    expect(passedOnRetry(cases)).toEqual(['flakyCheckout']);
  });

  describe('Surefire 3.2.5 + JUnit 5.10.2 with a @Nested class: the reruns land in a second file', () => {
    const outer = load('surefire-rerun-TEST-com.acme.shop.CartTest.xml');
    const nested = load('surefire-rerun-TEST-com.acme.shop.CartTest-Discounts.xml');

    it('the nested class report holds the first run of every test, under the nested suite name', () => {
      expect(nested.cases).toHaveLength(6);
      expect(nested.cases.map((c) => c.parent)).toEqual(Array(6).fill('com.acme.shop.CartTest$Discounts'));
      expect(one(nested.cases, 'tenPercent', 'com.acme.shop.CartTest$Discounts').outcome).toBe('passed');
      const first = one(nested.cases, 'flakyCheckout', 'com.acme.shop.CartTest');
      expect(attempts(first)).toEqual(['failed:failure']);
      expect(first.attempts[0]).toMatchObject({
        message: 'checkout timed out after 3000 ms ==> expected: <true> but was: <false>',
      });
      expect(first.durationMs).toBe(4);
      expect(attempts(one(nested.cases, 'throwsError'))).toEqual(['failed:error']);
      expect(one(nested.cases, 'taxes')).toMatchObject({ outcome: 'skipped', durationMs: 0 });
    });

    it('the outer class report holds the reruns: the flaky test as a plain pass (no <flakyFailure>), the others with rerun*', () => {
      expect(outer.cases).toHaveLength(3);
      expect(attempts(one(outer.cases, 'flakyCheckout'))).toEqual(['passed']);
      expect(attempts(one(outer.cases, 'alwaysFails'))).toEqual(['failed:failure', 'failed:failure']);
      expect(attempts(one(outer.cases, 'throwsError'))).toEqual(['failed:error', 'failed:error']);
      for (const c of outer.cases)
        expect(c).toMatchObject({ classname: 'com.acme.shop.CartTest', parent: 'com.acme.shop.CartTest' });
    });

    it('pass-on-retry shows only when both files of the upload are read and matched on classname + name (the suite names differ)', () => {
      const both = [...outer.cases, ...nested.cases];
      expect(passedOnRetry(both)).toEqual([]);
      expect(passedOnRetry(both, (c) => `${c.classname}#${c.name}`)).toEqual(['flakyCheckout']);
    });
  });
});

describe('hostile and broken reports', () => {
  it('reads durations as written up to a year; garbage, negatives and absurd values (1e300) are 0, not known', () => {
    const times = ['1.5', '1,234.5', '0.0004', '31536000', '31536000.001', '1e300', 'Infinity', '-3', 'abc', ''];
    const xml = `<testsuite name="s">${times.map((t, i) => `<testcase classname="c" name="t${i}" time="${t}"/>`).join('')}</testsuite>`;
    const { cases } = parseJUnit(xml, 'times.xml');
    expect(cases.map((c) => c.durationMs)).toEqual([1500, 1_234_500, 0, 31_536_000_000, 0, 0, 0, 0, 0, 0]);
  });

  it('a truncated report fails with the file name and the line where it ends', () => {
    const error = parseError(read('hostile/truncated.xml'), 'hostile/truncated.xml');
    expect(error.file).toBe('hostile/truncated.xml');
    expect(error.line).toBe(21);
    expect(error.reason).toMatch(/unexpected end of file: <failure> is not closed/);
    expect(error.message).toContain('hostile/truncated.xml: line 21:');
  });

  it('refuses a billion-laughs DOCTYPE before parsing anything', () => {
    const xml = read('hostile/billion-laughs.xml');
    const error = parseError(xml, 'billion-laughs.xml');
    expect(error.line).toBe(2);
    expect(error.reason).toMatch(/DOCTYPE/);
    expect(error.message).not.toContain('lollol');
    // The same bomb 100 times wider would be refused the same way (nothing is expanded).
    const wider = xml.replace(/(&lol\d?;)+/g, (m) => m.repeat(100));
    expect(parseError(wider, 'wider.xml').reason).toMatch(/DOCTYPE/);
  });

  it('refuses an external entity (XXE) without reading it, also behind a BOM and a comment', () => {
    const error = parseError(read('hostile/external-entity.xml'), 'external-entity.xml');
    expect(error.line).toBe(3);
    expect(error.reason).toMatch(/DOCTYPE/);
    expect(error.message).not.toContain('root:');
    const hidden =
      '\uFEFF<?xml version="1.0"?>\n<!-- x -->\n<!doctype testsuite [<!ENTITY x SYSTEM "file:///etc/hostname">]><testsuite><testcase name="&x;"/></testsuite>';
    expect(parseError(hidden, 'hidden.xml').line).toBe(3);
  });

  it('refuses two root elements', () => {
    const error = parseError(read('hostile/two-roots.xml'), 'two-roots.xml');
    expect(error.file).toBe('two-roots.xml');
    expect(error.line).toBe(2);
  });

  it('refuses a root that is not JUnit', () => {
    const error = parseError(read('hostile/not-junit.xml'), 'not-junit.xml');
    expect(error.reason).toBe('root element <html> is not <testsuites>, <testsuite> or <testcase>');
  });

  it('refuses an empty or blank file', () => {
    expect(parseError(read('hostile/empty.xml'), 'empty.xml')).toMatchObject({
      file: 'empty.xml',
      line: 1,
      reason: 'empty report',
    });
    expect(parseError(' \n\t\n', 'blank.xml').reason).toBe('empty report');
  });

  it('refuses an unescaped < or a bare & in an attribute value, with its line', () => {
    const error = parseError(read('hostile/unescaped-attribute.xml'), 'unescaped-attribute.xml');
    expect(error.line).toBe(3);
    expect(error.reason).toMatch(/raw '<'/);
    // Synthetic: the same for a bare ampersand, while references and CDATA stay fine.
    expect(
      parseError('<testsuite>\n<testcase name="R&D" classname="c"/></testsuite>', 'amp.xml'),
    ).toMatchObject({ line: 2 });
    const fine = parseJUnit(
      '<testsuite><testcase name="R&amp;D &#x2713; &lt;b&gt;" classname="c"><failure><![CDATA[a="<" & b]]></failure></testcase></testsuite>',
    );
    expect(fine.cases[0].name).toBe('R&D \u2713 <b>');
    expect(fine.cases[0].attempts[0].text).toBe('a="<" & b');
  });

  it('reads control characters that XML forbids (ANSI colours in test output) as U+FFFD instead of refusing the report', () => {
    const { cases } = parseJUnit(
      '<testsuite>\n<testcase name="paints \x1b[31mred\x1b[0m" classname="c"><failure message="\x1b[1mboom">at x\x07</failure></testcase></testsuite>',
    );
    expect(cases[0].name).toBe('paints \uFFFD[31mred\uFFFD[0m');
    expect(cases[0].attempts[0]).toMatchObject({
      outcome: 'failed',
      message: '\uFFFD[1mboom',
      text: 'at x\uFFFD',
    });
  });

  it("refuses elements nested deeper than 200, with the line, and other malformed markup with the parser's reason", () => {
    const deep = `<testsuite>\n${'<testsuite>'.repeat(250)}${'</testsuite>'.repeat(250)}</testsuite>`;
    expect(parseError(deep, 'deep.xml')).toMatchObject({
      line: 2,
      reason: 'elements nested deeper than 200',
    });
    expect(parseError('<testsuite>\n<testcase name="a"></testsuite>', 'mismatch.xml')).toMatchObject({
      line: 2,
    });
    expect(parseError('<testsuite>\n<testcase name="&nope;"/></testsuite>', 'entity.xml')).toMatchObject({
      line: 2,
      reason: 'undefined entity.',
    });
  });
});

describe('synthetic documents (not produced by a tool)', () => {
  it('nested <testsuite> elements (PHPUnit shape) give the outer-to-inner parent and inherit file and timestamp', () => {
    const { cases, suites } = parseJUnit(
      `<?xml version="1.0"?>
<testsuites>
  <testsuite name="Unit" timestamp="2024-05-01T10:00:00Z">
    <testsuite name="App\\CartTest" file="/repo/tests/CartTest.php">
      <testsuite name="App\\CartTest::testTotal with data set #0">
        <testcase name="testTotal with data set #0" class="App\\CartTest" time="0.5"/>
      </testsuite>
      <testcase name="testEmpty" classname="App.CartTest" file="/repo/tests/CartTest.php" line="12" time="1,234.5" timestamp="20240501T120000+0200"/>
    </testsuite>
  </testsuite>
</testsuites>`,
      'phpunit.xml',
    );
    expect(suites).toBe(3);
    expect(one(cases, 'testTotal with data set #0')).toMatchObject({
      classname: 'App\\CartTest',
      parent: 'Unit › App\\CartTest › App\\CartTest::testTotal with data set #0',
      file: '/repo/tests/CartTest.php',
      timestamp: at('2024-05-01T10:00:00Z'),
      durationMs: 500,
    });
    expect(one(cases, 'testEmpty')).toMatchObject({
      parent: 'Unit › App\\CartTest',
      durationMs: 1_234_500,
      timestamp: at('2024-05-01T10:00:00Z'),
    });
  });

  it('karma-junit-reporter shape: the browser is the suite and the classname prefix; a browser error is a suite-level error', () => {
    const { cases } = parseJUnit(
      `<?xml version="1.0"?>
<testsuites>
  <testsuite name="Chrome Headless 120.0.6099.109 (Linux x86_64)" package="" timestamp="2024-01-10T09:30:12" id="0" hostname="ci" tests="3" errors="0" failures="1" time="0.21">
    <properties><property name="browser.fullName" value="Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/120.0.0.0"/></properties>
    <testcase name="adds two numbers" time="0.004" classname="Chrome Headless 120.0.6099.109 (Linux x86_64).Calculator"/>
    <testcase name="divides by zero" time="0.011" classname="Chrome Headless 120.0.6099.109 (Linux x86_64).Calculator">
      <failure type="">Error: Expected Infinity to be 0.
    at &lt;Jasmine&gt;
    at UserContext.&lt;anonymous&gt; (src/calc.spec.js:14:25)</failure>
    </testcase>
    <testcase name="rounds" time="0" classname="Chrome Headless 120.0.6099.109 (Linux x86_64).Calculator"><skipped/></testcase>
    <system-out><![CDATA[LOG: 'ready'
]]></system-out>
    <system-err/>
  </testsuite>
</testsuites>`,
      'karma.xml',
    );
    expect(cases.map((c) => [c.name, c.outcome])).toEqual([
      ['adds two numbers', 'passed'],
      ['divides by zero', 'failed'],
      ['rounds', 'skipped'],
    ]);
    expect(one(cases, 'divides by zero')).toMatchObject({
      classname: 'Chrome Headless 120.0.6099.109 (Linux x86_64).Calculator',
      parent: 'Chrome Headless 120.0.6099.109 (Linux x86_64)',
      timestamp: at('2024-01-10T09:30:12Z'),
      durationMs: 11,
    });
    expect(one(cases, 'divides by zero').attempts[0].text).toContain(
      'at UserContext.<anonymous> (src/calc.spec.js:14:25)',
    );
  });

  it('JunitXml.TestLogger (.NET) shape: the assembly is the suite, classname the type, an exception is a failure with type and message', () => {
    const { cases } = parseJUnit(
      `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testsuite name="Shop.Tests.dll" tests="3" skipped="1" failures="1" errors="0" time="0.0912" timestamp="2024-03-05T14:02:11" hostname="runner" id="0" package="Shop.Tests.dll">
    <properties />
    <testcase classname="Shop.Tests.CartTests" name="Total_IsSumOfLines" time="0.0021" />
    <testcase classname="Shop.Tests.CartTests" name="Discount_AppliesOnce(code: &quot;SPRING&quot;)" time="0.0410">
      <failure type="Xunit.Sdk.EqualException" message="Assert.Equal() Failure: Values differ&#xD;&#xA;Expected: 90&#xD;&#xA;Actual:   81">   at Shop.Tests.CartTests.Discount_AppliesOnce(String code) in /src/Shop.Tests/CartTests.cs:line 42</failure>
    </testcase>
    <testcase classname="Shop.Tests.CartTests" name="Shipping_Free" time="0.0000">
      <skipped message="waiting for the carrier API" />
    </testcase>
    <system-out>Shop.Tests.CartTests: 3 tests</system-out>
    <system-err></system-err>
  </testsuite>
</testsuites>`,
      'TestResults/results.xml',
    );
    expect(cases.map((c) => [c.name, c.outcome])).toEqual([
      ['Total_IsSumOfLines', 'passed'],
      ['Discount_AppliesOnce(code: "SPRING")', 'failed'],
      ['Shipping_Free', 'skipped'],
    ]);
    const failed = one(cases, 'Discount_AppliesOnce(code: "SPRING")');
    expect(failed).toMatchObject({
      classname: 'Shop.Tests.CartTests',
      parent: 'Shop.Tests.dll',
      durationMs: 41,
    });
    expect(failed.attempts[0]).toMatchObject({
      kind: 'failure',
      message: 'Assert.Equal() Failure: Values differ\r\nExpected: 90\r\nActual:   81',
    });
    expect(failed.attempts[0].text).toContain('CartTests.cs:line 42');
  });

  it('parses the timestamp formats seen in the wild, and placeholders as unknown', () => {
    expect(parseTimestamp('2026-11-22T21:21:35.362233')).toBe(at('2026-11-22T21:21:35.362Z'));
    expect(parseTimestamp('2026-11-22T21:21:35.362233+00:00')).toBe(at('2026-11-22T21:21:35.362Z'));
    expect(parseTimestamp('20171206T181412+0100')).toBe(at('2017-12-06T17:14:12Z'));
    expect(parseTimestamp('Tue, 13 Feb 2024 10:28:58 GMT')).toBe(at('2024-02-13T10:28:58Z'));
    expect(parseTimestamp('1642088240147')).toBe(1642088240147);
    expect(parseTimestamp('1970-01-01T00:00:00')).toBeNull();
    expect(parseTimestamp('0001-01-01T00:00:00Z')).toBeNull();
    expect(parseTimestamp('yesterday')).toBeNull();
  });

  it('a generated report with 5,000 test cases parses completely', () => {
    const suitesXml: string[] = [];
    for (let s = 0; s < 5; s++) {
      const body: string[] = [];
      for (let t = 0; t < 1000; t++) {
        const n = s * 1000 + t;
        const child =
          n % 10 === 0
            ? `<failure message="expected &lt;${n}&gt;">at line ${n}</failure>`
            : n % 10 === 1
              ? '<skipped/>'
              : '';
        body.push(
          `<testcase classname="pkg.Suite${s}" name="test &amp; case ${n}" time="0.00${t % 10}">${child}</testcase>`,
        );
      }
      suitesXml.push(
        `<testsuite name="Suite${s}" tests="1000" timestamp="2026-01-0${s + 1}T00:00:00Z">\n${body.join('\n')}\n</testsuite>`,
      );
    }
    const { cases, suites } = parseJUnit(
      `<?xml version="1.0"?>\n<testsuites>\n${suitesXml.join('\n')}\n</testsuites>`,
      'big.xml',
    );
    expect(suites).toBe(5);
    expect(cases).toHaveLength(5000);
    expect(new Set(cases.map((c) => c.name)).size).toBe(5000);
    expect(cases.filter((c) => c.outcome === 'failed')).toHaveLength(500);
    expect(cases.filter((c) => c.outcome === 'skipped')).toHaveLength(500);
    expect(cases[4990]).toMatchObject({
      name: 'test & case 4990',
      classname: 'pkg.Suite4',
      parent: 'Suite4',
      outcome: 'failed',
      timestamp: at('2026-01-05T00:00:00Z'),
    });
    expect(cases[4990].attempts[0]).toMatchObject({ message: 'expected <4990>', text: 'at line 4990' });
  });
});
