#!/usr/bin/env node
// .ci/run: better-sqlite3's native compile (SQLite at -O3, ~50 CPU-s on one core, the longest step
// before the tests) started BEFORE `npm ci`, beside it, instead of after it in `npm rebuild`.
//
// `node scripts/early-sqlite.mjs DIR`: takes the exact better-sqlite3 of package-lock.json (`npm pack
// better-sqlite3@<locked version>`, its sha512 checked against the lockfile's `integrity`), unpacks
// it into DIR/package and runs there what its install script would run when no prebuilt binary can
// be had, `node-gyp rebuild --release`, through npm (`npm run-script build-release`, checked to be
// exactly that), so with npm's environment and nodedir as in `npm rebuild`. Same sources, same
// flags: the SQLite the tests load is the one users get. It writes DIR/status.json last.
//
// The result is only used through scripts/early-node-gyp.mjs: `npm rebuild` still runs every
// install script as `npm ci` would (better-sqlite3's `prebuild-install` first); only when that
// script reaches `node-gyp rebuild --release` for this very package is the build taken from here.
// Anything unexpected (no lockfile entry, another install script, a project .npmrc, a checksum
// mismatch, a failed compile) writes `ok: false` with the reason, and npm's node-gyp runs as usual.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** better-sqlite3's scripts this file stands in for; any other version of them: no early compile. */
const INSTALL_SCRIPT = 'prebuild-install || node-gyp rebuild --release';
const BUILD_RELEASE = 'node-gyp rebuild --release';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = process.argv[2];
if (!dir) {
  console.error('usage: node scripts/early-sqlite.mjs DIR');
  process.exit(2);
}
const started = Date.now();
// scripts/early-node-gyp.mjs waits for status.json as long as this process lives.
writeFileSync(join(dir, 'pid'), String(process.pid));

function finish(status) {
  writeFileSync(
    join(dir, 'status.json'),
    JSON.stringify({ ...status, seconds: (Date.now() - started) / 1000 }),
  );
  console.log(
    `early better-sqlite3 compile: ${status.ok ? 'built' : `not used (${status.reason})`} after ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  process.exit(0);
}

const locked = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')).packages?.[
  'node_modules/better-sqlite3'
];
if (!locked?.version || !locked.integrity?.startsWith('sha512-'))
  finish({ ok: false, reason: 'no better-sqlite3 with a sha512 integrity in package-lock.json' });
// A project .npmrc would apply to `npm rebuild` in the checkout but not to npm run in DIR.
if (existsSync(join(root, '.npmrc'))) finish({ ok: false, reason: 'the project has an .npmrc' });

const pack = spawnSync(
  'npm',
  [
    'pack',
    `better-sqlite3@${locked.version}`,
    '--pack-destination',
    dir,
    '--json',
    '--no-audit',
    '--no-fund',
  ],
  {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  },
);
if (pack.status !== 0)
  finish({ ok: false, reason: `npm pack better-sqlite3@${locked.version} exited ${pack.status}` });
const tarball = join(dir, JSON.parse(pack.stdout)[0].filename);
const sha512 = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
if (sha512 !== locked.integrity)
  finish({ ok: false, reason: `the tarball's ${sha512} is not the lockfile's ${locked.integrity}` });

const untar = spawnSync('tar', ['-xzf', tarball, '-C', dir], { stdio: 'inherit' });
if (untar.status !== 0) finish({ ok: false, reason: `tar exited ${untar.status}` });
const pkgDir = join(dir, 'package');
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
if (pkg.name !== 'better-sqlite3' || pkg.version !== locked.version)
  finish({ ok: false, reason: `the tarball holds ${pkg.name}@${pkg.version}` });
if (pkg.scripts?.install !== INSTALL_SCRIPT || pkg.scripts?.['build-release'] !== BUILD_RELEASE) {
  finish({
    ok: false,
    reason: `better-sqlite3's install or build-release script is not "${INSTALL_SCRIPT}" / "${BUILD_RELEASE}"`,
  });
}

// JOBS=max: node-gyp's make compiles the package's translation units side by side (SQLite's
// amalgamation, ~45 CPU-s, and better-sqlite3's own C++, ~3 CPU-s, one after the other otherwise):
// the same compiler commands and flags, a few seconds off the longest step before the tests.
const build = spawnSync('npm', ['run-script', 'build-release'], {
  cwd: pkgDir,
  stdio: 'inherit',
  env: { ...process.env, JOBS: 'max' },
});
if (build.status !== 0)
  finish({ ok: false, reason: `node-gyp rebuild --release exited ${build.status ?? build.signal}` });
finish({ ok: true, version: locked.version, integrity: locked.integrity, dir: pkgDir });
