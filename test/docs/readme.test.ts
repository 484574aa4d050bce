import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/contract/index.js';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

describe('README stays true', () => {
  it('the quick start is the demo and the test command CI runs', () => {
    const readme = read('README.md');
    const pkg = JSON.parse(read('package.json'));
    expect(readme).toContain('npm install && npm run demo');
    expect(pkg.scripts.demo).toMatch(/node bin\/run\.js demo$/);
    expect(readme).toMatch(/```sh\nnpm test\n```/);
    expect(read('.ci/run')).toMatch(/^npm test\b/m);
  });

  it('the CLI reference lists every command of the build (regenerate with scripts/cli-reference.mjs)', () => {
    execFileSync(process.execPath, [new URL('scripts/cli-reference.mjs', root).pathname, '--check'], { stdio: 'pipe' });
    const manifest = JSON.parse(read('oclif.manifest.json'));
    for (const id of Object.keys(manifest.commands)) expect(read('README.md')).toContain(`\`railyard ${id.replaceAll(':', ' ')}`);
  });

  it('the error table lists every error code with its status', () => {
    const readme = read('README.md');
    for (const [code, { status }] of Object.entries(ERROR_CODES)) expect(readme).toContain(`| \`${code}\` | ${status} |`);
  });
});
