#!/usr/bin/env node
// `npm run bundle`: the Action's bundle in dist/ (ncc), plus dist/.inputs, a record of what it was
// made from: a SHA-256 over every file ncc put into it (the sources its source map lists, from
// src/ and node_modules/, with each package's package.json), the settings that shape it (this
// script, tsconfig.json, the package's module type, ncc's version, Node's version), and a SHA-256
// of the bundle's own files.
//
// `node scripts/bundle.mjs --check` (CI): dist/ is current when both hashes still match the files
// there are now, i.e. dist/ is exactly what this script made from today's sources; then nothing is
// rebundled (ncc costs ~20 CPU-s). Otherwise it bundles into a temporary directory and compares
// that with dist/ file by file, as a rebundle and `git diff` did before; it never writes dist/
// (the Action's tests read it meanwhile). A source that changed always changes the record (its
// content is in the hash), so the fast answer is never "current" for a stale bundle.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const RECORD = '.inputs';
const NCC_ARGS = ['build', 'src/action/index.ts', '--source-map', '--license', 'licenses.txt'];

/** The bundle's files (sorted names relative to `dir`), the record excluded. */
function bundleFiles(dir) {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name !== RECORD)
    .map((e) => e.name)
    .sort();
}

function outputsHash(dir) {
  const hash = createHash('sha256');
  for (const name of bundleFiles(dir))
    hash
      .update(`${name}\0`)
      .update(readFileSync(join(dir, name)))
      .update('\0');
  return hash.digest('hex');
}

/** The repository files ncc read for the bundle in `dir`, from its source map (`.././src/…`, `.././node_modules/…`). */
function sourcesOf(dir) {
  const map = JSON.parse(readFileSync(join(dir, 'index.js.map'), 'utf8'));
  const files = new Set();
  for (const source of map.sources) {
    if (!source.startsWith('.././')) continue; // webpack's runtime and node's built-in modules
    const file = source.slice('.././'.length);
    files.add(file);
    // The package.json of the package the file belongs to (its version, `exports`, `main`).
    const at = file.lastIndexOf('node_modules/');
    if (at >= 0) {
      const parts = file.slice(at + 'node_modules/'.length).split('/');
      const name = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
      files.add(`${file.slice(0, at)}node_modules/${name}/package.json`);
    }
  }
  return [...files].sort();
}

function inputsHash(dir) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const ncc = JSON.parse(readFileSync(join(root, 'node_modules', '@vercel', 'ncc', 'package.json'), 'utf8'));
  const hash = createHash('sha256')
    .update(`node ${process.version}\nncc ${ncc.version}\n${NCC_ARGS.join(' ')}\n`)
    .update(JSON.stringify({ type: pkg.type, imports: pkg.imports, exports: pkg.exports }));
  for (const file of ['scripts/bundle.mjs', 'tsconfig.json', ...sourcesOf(dir)]) {
    const path = join(root, file);
    hash
      .update(`\n${file}\0`)
      .update(existsSync(path) ? readFileSync(path) : '(missing)')
      .update('\0');
  }
  return hash.digest('hex');
}

function record(dir) {
  return `inputs ${inputsHash(dir)}\noutputs ${outputsHash(dir)}\n`;
}

/** Runs ncc into `out`; its exit status (0 when it bundled). */
function ncc(out) {
  const child = spawnSync(join(root, 'node_modules', '.bin', 'ncc'), [...NCC_ARGS, '-o', out], {
    cwd: root,
    stdio: 'inherit',
  });
  return child.status ?? 1;
}

if (!process.argv.includes('--check')) {
  rmSync(join(dist, RECORD), { force: true });
  const status = ncc(dist);
  if (status !== 0) process.exit(status);
  writeFileSync(join(dist, RECORD), record(dist));
  console.log(
    `dist/${RECORD}: the bundle's inputs and outputs recorded (CI checks them instead of bundling again)`,
  );
  process.exit(0);
}

const recorded = existsSync(join(dist, RECORD)) ? readFileSync(join(dist, RECORD), 'utf8') : '';
if (existsSync(join(dist, 'index.js.map')) && recorded === record(dist)) {
  console.log(
    `dist/ is current: bundled from exactly the sources there are now (dist/${RECORD}); not bundled again`,
  );
  process.exit(0);
}
console.log(`dist/${RECORD} does not match the sources or the bundle: bundling again to compare`);
const out = mkdtempSync(join(tmpdir(), 'railyard-bundle-'));
// No process.exit() below: the temporary bundle is removed in `finally` whatever the outcome.
try {
  const status = ncc(out);
  if (status !== 0) throw new Error(`ncc failed (exit ${status}): the bundle could not be checked`);
  const want = bundleFiles(out);
  const have = bundleFiles(dist);
  const differ = [...new Set([...want, ...have])]
    .sort()
    .filter(
      (name) =>
        !want.includes(name) ||
        !have.includes(name) ||
        !readFileSync(join(out, name)).equals(readFileSync(join(dist, name))),
    );
  if (differ.length) {
    console.log(
      `dist/ is stale (${differ.join(', ')} differ${differ.length === 1 ? 's' : ''}): run 'npm run bundle' and commit it`,
    );
    process.exitCode = 1;
  } else {
    console.log(
      `dist/ matches a fresh bundle; only its record is out of date ('npm run bundle' rewrites dist/${RECORD})`,
    );
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
