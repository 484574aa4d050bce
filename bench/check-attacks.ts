/**
 * What a hostile check costs another organisation: the real `railyard serve --git-root` (as root,
 * checks as uids of their own, the default limits but --checks-disk-mib, `DISK_MIB`, 2048) with two
 * organisations pinned by --org-repos. Alpha's benign PR is timed alone (`RUNS` times, median),
 * then while beta's PR runs a fork bomb (setsid), a 3 GiB allocation, and a fill of its own
 * directory. Prints, per attack, alpha's time to land and beta's outcome. `SANDBOX=bwrap` for
 * bubblewrap. The server is the tests' (test/support/check-attacks.ts world: checks as uids of
 * a pool of its own, away from the default 61184 that servers of older builds claim). Run: `npm run build && npx tsx bench/check-attacks.ts`.
 */
import os from 'node:os';
import type { FixtureRepo } from '../test/forge/fixture.js';
import { ACME, ALPHA, BETA, EVIL, land, post, runCleanups, world } from '../test/support/check-attacks.js';
import type { ServeProcess } from '../test/support/serve.js';

const RUNS = Number(process.env.RUNS ?? 3);
const SANDBOX = process.env.SANDBOX ?? 'none';
const DISK_MIB = Number(process.env.DISK_MIB ?? 2048);

const ATTACKS: Record<string, string> = {
  'fork bomb (setsid)': 'setsid sh -c "while :; do sleep 600 & done" & while :; do sleep 600 & done',
  '3 GiB allocation': '/usr/bin/python3 -c "b = b\\"x\\" * (3 << 30); import time; time.sleep(60)"',
  'full disk (own directory)': 'cat /dev/zero > fill; sleep 600',
};

/** Waits until PR `n` of `repo` merged, failed or was cancelled; the last transition's detail too. */
async function settle(
  s: ServeProcess,
  repo: typeof ACME,
  n: number,
  token: string,
): Promise<{ state: string; detail: string }> {
  const q = { repo, targetBranch: 'main', pr: { number: n } };
  for (;;) {
    const got = await post(s, '/getSubmittedPullRequest', token, q);
    if (['merged', 'failed', 'cancelled'].includes(String(got.state))) {
      const h = (await post(s, '/getPullRequestHistory', token, q)) as { transitions: { detail?: string }[] };
      return { state: String(got.state), detail: h.transitions.at(-1)?.detail ?? '' };
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('run as root: checks run as uids of their own, in cgroups');
  // The tests' world (test/support/check-attacks.ts): two organisations pinned by --org-repos, one git root.
  const w = await world('true', ['--checks-sandbox', SANDBOX, '--checks-disk-mib', String(DISK_MIB)], {
    acmeCheck: 'test -f README.md || true; sleep 1',
  });
  try {
    await attacks(w.server, w.acme, w.evil);
  } finally {
    await w.server.stop();
    await runCleanups();
  }
}

async function attacks(server: ServeProcess, acme: FixtureRepo, evil: FixtureRepo): Promise<void> {
  const limits = /^Check limits.*$/m.exec(server.output().stdout)?.[0] ?? '';
  console.log(
    `load: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; sandbox ${SANDBOX}; ${limits}`,
  );
  const QA = { repo: ACME, targetBranch: 'main' };
  const QE = { repo: EVIL, targetBranch: 'main' };
  await post(server, '/createQueue', ALPHA, QA);
  await post(server, '/createQueue', BETA, QE);
  let pr = 0;
  const landAlpha = async (): Promise<number> => {
    pr++;
    acme.openPr(pr, { [`f${pr}.txt`]: `${pr}\n` });
    const t0 = Date.now();
    const r = await land(server, ACME, pr, ALPHA, 300_000);
    if (r.state !== 'merged') throw new Error(`alpha's PR #${pr} ${r.state}: ${r.detail}`);
    return Date.now() - t0;
  };
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const alone: number[] = [];
  for (let i = 0; i < RUNS; i++) alone.push(await landAlpha());
  console.log(
    `alpha's PR alone: median ${(median(alone) / 1000).toFixed(1)} s (${alone.map((t) => (t / 1000).toFixed(1)).join(', ')})`,
  );
  let epr = 0;
  for (const [name, attack] of Object.entries(ATTACKS)) {
    evil.commitOn(
      'main',
      { 'railyard.json': JSON.stringify({ checks: { test: attack } }) + '\n' },
      `attack: ${name}`,
    );
    epr++;
    evil.openPr(epr, { [`x${epr}.txt`]: 'x\n' });
    const t0 = Date.now();
    await post(server, '/submitPullRequest', BETA, { ...QE, pr: { number: epr } });
    await new Promise((r) => setTimeout(r, 1500)); // the attack under way
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) times.push(await landAlpha());
    const beta = await settle(server, EVIL, epr, BETA);
    console.log(
      `${name}: alpha's PR median ${(median(times) / 1000).toFixed(1)} s (${times.map((t) => (t / 1000).toFixed(1)).join(', ')}), ` +
        `+${((median(times) - median(alone)) / 1000).toFixed(1)} s; beta's PR ${beta.state} after ${((Date.now() - t0) / 1000).toFixed(1)} s: ${beta.detail}`,
    );
  }
  const alive = await fetch(`${server.url}/status`);
  console.log(`server pid ${server.child.pid} still answering /v1/status: ${alive.status}`);
}

await main();
