// The JUnit parser on synthetic documents (not produced by a tool here): PHPUnit's nested suites,
// the karma and .NET logger shapes, the timestamp formats seen in the wild and a 5,000-case report.
import { describe, expect, it } from 'vitest';
import { parseJUnit, parseTimestamp } from '../../src/flaky/junit.js';
import { at, one } from './junit-helpers.js';

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
