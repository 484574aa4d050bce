// The package as users install it: scripts/check-pack.sh packs the build that `npm test` made,
// installs the tarball with `npm install -g` into a temporary prefix and runs `railyard` from PATH
// (--version, serve --sandbox, mq commands, autocomplete). Part of the suite so CI builds once.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SCRIPT = fileURLToPath(new URL('../../scripts/check-pack.sh', import.meta.url));

function run(): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('npm pack', () => {
  it('installs from its tarball into a fresh prefix, and the installed railyard runs from PATH', async () => {
    const { code, out } = await run();
    expect(code, out).toBe(0);
    expect(out).toMatch(/installs from its tarball; railyard --version, serve --sandbox, mq and autocomplete run from PATH/);
  }, 240_000);
});
