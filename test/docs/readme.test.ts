// The README and the manuals in docs/ say what the code does: the quick start is what CI runs, the
// CLI reference (docs/cli.md) lists every command of the build, the error table (docs/errors.md)
// every error code, the README stays a front door, and no link between the pages leads nowhere.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/contract/index.js';

const ROOT = resolve(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const README_MAX_LINES = 400;

/** The pages whose links are checked: the README, CONTRIBUTING and every manual in docs/. */
const PAGES = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** A page's lines outside fenced code blocks, with inline code spans blanked. */
function prose(text: string): string[] {
  let fence = false;
  return text.split('\n').flatMap((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fence = !fence;
      return [];
    }
    return fence ? [] : [line.replace(/`[^`]*`/g, (span) => (span.includes('](') ? ' ' : span))];
  });
}

/** GitHub's anchor of a heading (github-slugger): lower case, punctuation dropped, spaces as `-`. */
function slug(heading: string): string {
  return heading
    .replace(/\]\([^)]*\)/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page's headings, numbered as GitHub numbers repeats (`x`, `x-1`, …). */
function anchors(path: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(readFileSync(path, 'utf8'))) {
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1].trim());
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** The relative links of a page: inline `[text](target)` and reference definitions `[id]: target`. */
function links(text: string): string[] {
  const out: string[] = [];
  for (const line of prose(text)) {
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push(m[1]);
    const def = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)/.exec(line);
    if (def) out.push(def[1]);
  }
  return out.filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** What is wrong with one link of a page, or null when it leads somewhere. */
function brokenLink(page: string, target: string): string | null {
  const [pathPart, fragment] = target.split('#', 2) as [string, string | undefined];
  const file = pathPart ? resolve(dirname(join(ROOT, page)), decodeURIComponent(pathPart)) : join(ROOT, page);
  if (!file.startsWith(ROOT)) return `${page}: ${target} leads out of the repository`;
  if (!existsSync(file)) return `${page}: ${target} — no file ${relative(ROOT, file)}`;
  if (fragment && file.endsWith('.md') && !anchors(file).has(fragment.toLowerCase()))
    return `${page}: ${target} — ${relative(ROOT, file)} has no heading #${fragment}`;
  return null;
}

describe('README and docs/ stay true', () => {
  it('the quick start is the demo and the test command CI runs', () => {
    const readme = read('README.md');
    const pkg = JSON.parse(read('package.json'));
    expect(readme).toContain('npm install && npm run demo');
    expect(pkg.scripts.demo).toMatch(/node bin\/run\.js demo$/);
    expect(readme).toMatch(/```sh\nnpm test\n```/);
    expect(read('.ci/run')).toMatch(/^npm test\b/m);
  });

  it('the CLI reference in docs/cli.md lists every command of the build (regenerate with scripts/cli-reference.mjs)', () => {
    execFileSync(process.execPath, [join(ROOT, 'scripts/cli-reference.mjs'), '--check'], { stdio: 'pipe' });
    const manifest = JSON.parse(read('oclif.manifest.json'));
    const reference = read('docs/cli.md');
    for (const id of Object.keys(manifest.commands))
      expect(reference).toContain(`\`railyard ${id.replaceAll(':', ' ')}`);
  });

  it('the error table in docs/errors.md lists every error code with its status', () => {
    const errors = read('docs/errors.md');
    for (const [code, { status }] of Object.entries(ERROR_CODES))
      expect(errors).toContain(`| \`${code}\` | ${status} |`);
  });

  it(`the README is a front door: at most ${README_MAX_LINES} lines, linking every manual in docs/`, () => {
    const readme = read('README.md');
    expect(readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0)).toBeLessThanOrEqual(README_MAX_LINES);
    const linked = new Set(links(readme).map((target) => target.split('#')[0]));
    const unlinked = PAGES.filter((page) => page.startsWith('docs/') && !linked.has(page));
    expect(unlinked).toEqual([]);
  });

  it('every relative link of the README, CONTRIBUTING and docs/ leads to a file and heading that exist', () => {
    const broken = PAGES.flatMap((page) =>
      links(read(page)).flatMap((target) => brokenLink(page, target) ?? []),
    );
    expect(broken).toEqual([]);
  });
});
