#!/usr/bin/env node
// .ci/run's `node-gyp` for better-sqlite3's install script during `npm rebuild`: .ci/run puts a
// two-line `node_modules/better-sqlite3/node_modules/.bin/node-gyp` that runs this file (npm puts a
// package's node_modules/.bin dirs before its own node-gyp on the script's PATH; npm rebuild ignores
// the npm_config_node_gyp setting) and removes it after. For `node-gyp rebuild --release` it takes
// the build that scripts/early-sqlite.mjs made beside `npm ci` (same tarball, checked against the
// lockfile; same command) instead of compiling SQLite again: it waits for that compile to end,
// checks it built this very version, and copies its build/ into the package. In every other case
// (another command, no early build, a failed or mismatched one) it runs npm's own node-gyp
// (npm_config_node_gyp, which npm sets for scripts) with the same arguments, as a plain `npm rebuild`
// would. What it did is appended to $RAILYARD_EARLY_SQLITE/used (npm hides a script's output).
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const args = process.argv.slice(2);

const early = process.env.RAILYARD_EARLY_SQLITE;
const say = (line) => {
  if (early) appendFileSync(join(early, 'used'), `${line}\n`);
};

function npmNodeGyp() {
  const run = spawnSync(process.execPath, [process.env.npm_config_node_gyp, ...args], { stdio: 'inherit' });
  process.exit(run.status ?? 1);
}

const pkg = existsSync('package.json') ? JSON.parse(readFileSync('package.json', 'utf8')) : {};
if (!process.env.npm_config_node_gyp) {
  console.error('early-node-gyp: npm_config_node_gyp is not set (not run by npm?)');
  process.exit(1);
}
if (!early || pkg.name !== 'better-sqlite3' || args.join(' ') !== 'rebuild --release') {
  say(`${pkg.name}: node-gyp ${args.join(' ')} (npm's node-gyp)`);
  npmNodeGyp();
}

// The early compile writes status.json last; it runs as long as its pid file names a live process.
const statusFile = join(early, 'status.json');
const alive = () => {
  try {
    process.kill(Number(readFileSync(join(early, 'pid'), 'utf8')), 0);
    return true;
  } catch {
    return false;
  }
};
while (!existsSync(statusFile) && alive()) await sleep(200);
const status = existsSync(statusFile)
  ? JSON.parse(readFileSync(statusFile, 'utf8'))
  : { ok: false, reason: 'the early compile ended without a status' };
const lockedIntegrity = JSON.parse(
  readFileSync(join(process.env.INIT_CWD ?? '.', 'package-lock.json'), 'utf8'),
).packages?.['node_modules/better-sqlite3']?.integrity;
const built = join(status.dir ?? '', 'build', 'Release', 'better_sqlite3.node');
if (
  !status.ok ||
  status.version !== pkg.version ||
  status.integrity !== lockedIntegrity ||
  !existsSync(built)
) {
  say(
    `better-sqlite3: the early compile is not used (${status.reason ?? 'another version'}): npm's node-gyp ${args.join(' ')}`,
  );
  npmNodeGyp();
}
rmSync('build', { recursive: true, force: true });
cpSync(join(status.dir, 'build'), 'build', { recursive: true });
say(
  `better-sqlite3 ${pkg.version}: its node-gyp rebuild --release ran beside npm ci (scripts/early-sqlite.mjs, ${status.seconds.toFixed(1)} s); that build/ is taken`,
);
