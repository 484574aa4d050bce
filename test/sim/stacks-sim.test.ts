import { describe, expect, it } from 'vitest';
import { simulate } from '../../src/sim/index.js';
import { isolatedEnv, railyard } from '../support/cli.js';

const common = {
  ciMinutes: 30,
  failureRate: 0.05,
  concurrency: 10,
  backlog: 200,
  keepBacklog: true,
  arrivalRate: 0,
  hours: 9,
  warmupHours: 1,
  seed: 2,
};

describe('railyard sim: stacked PRs', () => {
  it('20 % of PRs in stacks of 2-3: no stack lands partly, and throughput holds against the same PRs unlinked', () => {
    const stacked = simulate({ ...common, stackShare: 0.2, stackDepth: [2, 3] });
    const unlinked = simulate({ ...common, stackShare: 0.2, stackDepth: [2, 3], stackUnlinked: true });
    expect(stacked.stacks).toBeGreaterThan(10);
    expect(stacked.prsInStacks! / stacked.submitted).toBeGreaterThan(0.1);
    expect(stacked.stacksLanded).toBeGreaterThan(0);
    expect(stacked.stacksLandedPartly).toBe(0);
    // Unlinked, the same PRs land one by one: their "stacks" land in several merges.
    expect(unlinked.stacksLandedPartly).toBeGreaterThan(0);
    expect(stacked.mergedBroken).toBe(0);
    expect(stacked.mergedPerHour).toBeGreaterThanOrEqual(0.95 * unlinked.mergedPerHour);
  });

  it('the CLI takes --stack-share and --stack-depth, prints the stack figures, and rejects a bad depth', async () => {
    const env = isolatedEnv();
    const json = await railyard(
      [
        'sim',
        '--backlog',
        '60',
        '--arrival-rate',
        '0',
        '--hours',
        '4',
        '--stack-share',
        '0.3',
        '--stack-depth',
        '2-3',
        '--json',
      ],
      env,
    );
    expect(json.code).toBe(0);
    const out = JSON.parse(json.stdout);
    expect(out.options).toMatchObject({ stackShare: 0.3, stackDepth: [2, 3] });
    expect(out.stacks).toBeGreaterThan(0);
    expect(out.stacksLandedPartly).toBe(0);
    const table = await railyard(['sim', '--arrival-rate', '6', '--hours', '6', '--stack-share', '0.2'], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/20 % of PRs in stacks of 2-3/);
    expect(table.stdout).toMatch(/landed partly/);
    const bad = await railyard(
      ['sim', '--arrival-rate', '6', '--stack-share', '0.2', '--stack-depth', '1-3'],
      env,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--stack-depth: "1-3" must be N or MIN-MAX with 2 ≤ MIN ≤ MAX ≤ 20/);
  });
});
