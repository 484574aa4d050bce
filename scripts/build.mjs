#!/usr/bin/env node
// `npm run build`: the TypeScript into build/, the client commands bundled (scripts/cli-bundle.mjs), the dashboard (scripts/build-web.mjs), oclif's manifest
// and the help cache (scripts/help-cache.mjs). When build/ was made from exactly the inputs there are
// now (a SHA-256 over every file the build reads, the Node version included, kept in
// build/.inputs), it says so and builds nothing: `npm test` builds first (pretest), and .ci/run has
// already built beside typecheck and lint, so the tests do not wait for the same build twice.
// `--force` (or RAILYARD_BUILD_FORCE=1) always builds. Content, not modification times, decides.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = join(root, 'build', '.inputs');
const outputs = [
  join(root, 'build', 'cli', 'fast-path.js'),
  join(root, 'build', 'help-cache.json'),
  join(root, 'build', 'web', 'index.html'),
  join(root, 'oclif.manifest.json'),
];

/** Every file under `dir` (sorted, relative to the root). */
function filesUnder(dir) {
  const found = [];
  const walk = (at) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) found.push(relative(root, path));
    }
  };
  if (existsSync(dir)) walk(dir);
  return found;
}

function inputsHash() {
  const files = [
    ...filesUnder(join(root, 'src')),
    ...filesUnder(join(root, 'web')),
    ...[
      'package.json',
      'package-lock.json',
      'tsconfig.json',
      'tsconfig.build.json',
      'scripts/build.mjs',
      'scripts/cli-bundle.mjs',
      'scripts/build-web.mjs',
      'scripts/help-cache.mjs',
    ],
  ].sort();
  const hash = createHash('sha256').update(`node ${process.version}\n`);
  for (const file of files) {
    const path = join(root, file);
    hash
      .update(`${file}\0`)
      .update(existsSync(path) ? readFileSync(path) : '(missing)')
      .update('\0');
  }
  return hash.digest('hex');
}

function run(command, args, env = process.env) {
  const child = spawnSync(command, args, { cwd: root, stdio: 'inherit', env });
  if (child.status !== 0) {
    rmSync(stamp, { force: true });
    process.exit(child.status ?? 1);
  }
}

const force = process.argv.includes('--force') || process.env.RAILYARD_BUILD_FORCE === '1';
const hash = inputsHash();
if (
  !force &&
  existsSync(stamp) &&
  readFileSync(stamp, 'utf8').trim() === hash &&
  outputs.every((path) => existsSync(path))
) {
  console.log('build/ is up to date (its inputs have not changed since it was built; --force builds anyway)');
  process.exit(0);
}

rmSync(join(root, 'build'), { recursive: true, force: true });
const bin = (name) => join(root, 'node_modules', '.bin', name);
run(bin('tsc'), ['-p', 'tsconfig.build.json']);
// The client commands as bundles sharing chunks (a command's start is mostly module loading).
run(process.execPath, [join(root, 'scripts', 'cli-bundle.mjs')]);
run(process.execPath, [join(root, 'scripts', 'build-web.mjs')]);
run(bin('oclif'), ['manifest'], { ...process.env, OCLIF_SKIP_NEW_VERSION_CHECK: 'true' });
run(process.execPath, [join(root, 'scripts', 'help-cache.mjs')]);
// Hashed again: a file edited while the build ran must not be taken for built.
if (inputsHash() === hash) writeFileSync(stamp, `${hash}\n`);
