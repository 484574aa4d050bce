/** The demo's project: the initial repository and the pull requests `railyard demo` lands. */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A pull request of the demo: its edits on top of the initial project, and what it shows. */
export interface DemoPr {
  number: number;
  title: string;
  author: string;
  files: Record<string, string>;
  /** What the demo expects of it (shown at the end). */
  expect: 'merged' | 'fails its check' | 'conflicts' | 'fails only combined';
}

const CART = `exports.total = (items) => items.reduce((sum, item) => sum + item.price * item.qty, 0);
`;
const TAX = `exports.withTax = (amount) => Math.round(amount * 1.2 * 100) / 100;
`;
const CHECK = `// The project's test: run by the queue as the "test" check (see railyard.json).
const assert = require('node:assert');
const fs = require('node:fs');
const cart = require('./lib/cart.js');
const tax = require('./lib/tax.js');
const items = [{ price: 2.5, qty: 2 }, { price: 1, qty: 3 }];
const total = cart.total ?? cart.sum;
assert.strictEqual(total(items), 8, 'cart total');
assert.strictEqual(tax.withTax(10), 12, 'tax');
for (const file of fs.readdirSync('lib')) require('./lib/' + file).selfTest?.();
// Long enough to watch the queue work.
setTimeout(() => console.log('all good'), 1000);
`;

export const INITIAL_FILES: Record<string, string> = {
  'README.md': '# shop\n\nA tiny shop.\n\nPrices are in EUR.\n',
  'lib/cart.js': CART,
  'lib/tax.js': TAX,
  'check.js': CHECK,
  'railyard.json': JSON.stringify({ checks: { test: 'node check.js' } }, null, 2) + '\n',
  'CHANGELOG.md': '# Changelog\n',
};

/**
 * The pull requests, in the order the demo submits them: the first batch of four lands; the
 * second holds the broken, the conflicting and the combination-broken PRs, fails, and is
 * bisected on top of the first.
 */
export const DEMO_PRS: DemoPr[] = [
  {
    number: 1,
    title: 'Add a discount helper',
    author: 'Ada',
    files: { 'lib/discount.js': 'exports.discount = (amount, pct) => amount * (1 - pct / 100);\nexports.selfTest = () => { if (exports.discount(100, 10) !== 90) throw new Error("discount"); };\n' },
    expect: 'merged',
  },
  {
    number: 3,
    title: 'Rename cart.total to cart.sum',
    author: 'Linus',
    files: { 'lib/cart.js': CART.replace('exports.total', 'exports.sum') },
    expect: 'merged',
  },
  {
    number: 4,
    title: 'Docs: prices are in EUR, VAT included',
    author: 'Barbara',
    files: { 'README.md': '# shop\n\nA tiny shop.\n\nPrices are in EUR, VAT included.\n' },
    expect: 'merged',
  },
  {
    number: 7,
    title: 'Add shipping costs',
    author: 'Dennis',
    files: { 'lib/shipping.js': 'exports.shipping = (total) => (total >= 50 ? 0 : 4.9);\n' },
    expect: 'merged',
  },
  {
    number: 2,
    title: 'Round tax to whole cents differently',
    author: 'Grace',
    files: { 'lib/tax.js': 'exports.withTax = (amount) => Math.floor(amount * 1.19);\n' },
    expect: 'fails its check',
  },
  {
    number: 5,
    title: 'Checkout uses cart.total',
    author: 'Ken',
    files: {
      'lib/checkout.js':
        "const { total } = require('./cart.js');\nexports.checkout = (items) => ({ due: total(items) });\nexports.selfTest = () => { if (exports.checkout([{ price: 1, qty: 2 }]).due !== 2) throw new Error('checkout'); };\n",
    },
    expect: 'fails only combined',
  },
  {
    number: 6,
    title: 'Docs: prices are in USD',
    author: 'Margaret',
    files: { 'README.md': '# shop\n\nA tiny shop.\n\nPrices are in USD.\n' },
    expect: 'conflicts',
  },
  {
    number: 8,
    title: 'Changelog for the release',
    author: 'Edsger',
    files: { 'CHANGELOG.md': '# Changelog\n\n- discounts, shipping\n' },
    expect: 'merged',
  },
];

function gitEnv(author: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_TERMINAL_PROMPT: '0' };
  for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE']) delete env[k];
  const email = `${author.toLowerCase()}@shop.example`;
  return { ...env, GIT_AUTHOR_NAME: author, GIT_AUTHOR_EMAIL: email, GIT_COMMITTER_NAME: author, GIT_COMMITTER_EMAIL: email };
}

async function writeFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [file, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await writeFile(join(dir, file), content);
  }
}

/**
 * Creates the demo repository as `serve --git-root` expects it (`<root>/github.com/demo/shop.git`)
 * with the initial project on `main` and every demo PR pushed as `refs/pull/N/head`.
 * Returns the bare repository's path.
 */
export async function createDemoRepository(root: string, work: string): Promise<string> {
  const bare = join(root, 'github.com', 'demo', 'shop.git');
  await mkdir(bare, { recursive: true });
  const git = (cwd: string, args: string[], author = 'Railyard Demo') => run('git', args, { cwd, env: gitEnv(author) });
  await git(bare, ['init', '--bare', '--quiet', '--initial-branch=main']);
  await mkdir(work, { recursive: true });
  await git(work, ['init', '--quiet', '--initial-branch=main']);
  await writeFiles(work, INITIAL_FILES);
  await git(work, ['add', '-A']);
  await git(work, ['commit', '--quiet', '-m', 'Initial shop']);
  await git(work, ['push', '--quiet', bare, 'main']);
  for (const pr of DEMO_PRS) {
    await git(work, ['checkout', '--quiet', '-B', `pr-${pr.number}`, 'main']);
    await writeFiles(work, pr.files);
    await git(work, ['add', '-A']);
    await git(work, ['commit', '--quiet', '-m', pr.title], pr.author);
    await git(work, ['push', '--quiet', bare, `HEAD:refs/pull/${pr.number}/head`]);
  }
  return bare;
}

/** `git log --oneline` of the target branch, oldest last. */
export async function targetLog(bare: string, branch = 'main'): Promise<string[]> {
  const { stdout } = await run('git', ['log', '--format=%h %s (%an)', branch], { cwd: bare });
  return stdout.trim().split('\n');
}
