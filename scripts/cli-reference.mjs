// Regenerates the "CLI reference" section of docs/cli.md from the oclif manifest (npm run build first):
// one row per command with its arguments, summary and flags. `--check` fails when docs/cli.md is stale.
import { readFileSync, writeFileSync } from 'node:fs';

const START = '<!-- cli-reference -->';
const END = '<!-- cli-reference-end -->';
const GLOBAL = new Set(['json', 'api-url', 'token', 'api-version', 'help']);

const manifest = JSON.parse(readFileSync(new URL('../oclif.manifest.json', import.meta.url), 'utf8'));
const rows = Object.values(manifest.commands)
  .sort((a, b) => a.id.localeCompare(b.id))
  .map((c) => {
    const args = Object.values(c.args ?? {}).map((a) => (a.required ? `<${a.name}>` : `[${a.name}]`));
    const flags = Object.values(c.flags ?? {})
      .filter((f) => !f.hidden && !GLOBAL.has(f.name))
      .map((f) => `\`--${f.name}\``);
    const usage = ['railyard', c.id.replaceAll(':', ' '), ...args].join(' ');
    return `| \`${usage}\` | ${(c.summary ?? c.description ?? '').replaceAll('|', '\\|')} | ${flags.join(' ')} |`;
  });
const section = [
  START,
  '',
  'Every command takes `--help`; commands that talk to a server also take `--api-url`, `--token`, `--api-version` (v1 or v2) and `--json`.',
  '',
  '| command | what it does | flags |',
  '|---|---|---|',
  ...rows,
  '',
  END,
].join('\n');

const pageUrl = new URL('../docs/cli.md', import.meta.url);
const page = readFileSync(pageUrl, 'utf8');
const from = page.indexOf(START);
if (from < 0) throw new Error(`docs/cli.md has no ${START} marker`);
const to = page.indexOf(END);
const next =
  page.slice(0, from) + section + (to >= 0 ? page.slice(to + END.length) : page.slice(from + START.length));
if (process.argv.includes('--check')) {
  if (next !== page) {
    console.error(
      'docs/cli.md CLI reference is stale: run `npm run build && node scripts/cli-reference.mjs`',
    );
    process.exit(1);
  }
} else {
  writeFileSync(pageUrl, next);
  console.log(`CLI reference: ${rows.length} commands`);
}
