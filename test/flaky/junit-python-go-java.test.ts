// The JUnit parser on the reports of pytest (xunit1, xunit2, pytest-rerunfailures), gotestsum
// --rerun-fails and Maven Surefire's reruns, as each tool wrote them (fixtures under
// test/fixtures/junit): where a pass on retry shows and where the report hides it.
import { describe, expect, it } from 'vitest';
import { at, attempts, load, named, one, passedOnRetry } from './junit-helpers.js';

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
