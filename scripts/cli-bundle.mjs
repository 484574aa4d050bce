// Run by `npm run build` after tsc: the CLI's client commands (build/commands/**, but not the ones
// that open a database or run a server) are rewritten in place as esbuild bundles that share their
// common code through chunks in build/cli-chunks/. Why: a command's start is mostly module loading,
// which Node 20 does one module at a time in every process; `mq status` loaded ~170 ESM modules
// (zod alone 95, ky 15, csv-stringify 8, ~40 of ours), now 37 (17 of them chunks). Measured in
// bench/README.md (2026-11-27, "CLI: client commands bundled").
//
// What is bundled is only our own build/ code and the pure-ESM packages in BUNDLED; every other
// package stays an ordinary import of node_modules (oclif, which finds its own files and plugins
// relative to itself, and CommonJS packages). The commands that reach the store, the server, the
// workers or a forge driver (serve, demo, sim, migrate, token *) keep tsc's output: those modules
// find files relative to themselves (migrations, the dashboard, worker threads). The build fails
// if a bundled command reaches one of them, rather than shipping a command that breaks at run time.
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const build = join(root, 'build');
const esbuild = createRequire(import.meta.url)('esbuild');

/** Pure-ESM packages of the CLI's path, bundled (each would otherwise load as many small modules). */
const BUNDLED = new Set(['zod', 'ky', 'csv-stringify']);
/** Commands left as tsc wrote them (relative to build/commands, without `.js`; a folder covers its commands). */
const UNBUNDLED = ['serve', 'demo', 'sim', 'migrate', 'token'];
/** build/ folders a bundled command must never reach (they locate files relative to themselves). */
const FORBIDDEN = ['store', 'server', 'workers', 'forge', 'webhooks'];

function commandFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...commandFiles(path));
    else if (entry.isFile() && entry.name.endsWith('.js')) found.push(path);
  }
  return found;
}

const commandsDir = join(build, 'commands');
const entries = commandFiles(commandsDir)
  .filter((path) => {
    const id = relative(commandsDir, path).replace(/\.js$/, '').split(sep);
    return !UNBUNDLED.some((skip) => id[0] === skip);
  })
  .sort();

/** Bare imports: bundled only when in BUNDLED (by package name), else left to Node at run time. */
const externals = {
  name: 'railyard-cli-externals',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('node:')) return { external: true };
      const parts = args.path.split('/');
      const name = args.path.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
      return BUNDLED.has(name) ? undefined : { path: args.path, external: true };
    });
    b.onResolve({ filter: /^\./ }, (args) => {
      const target = join(args.resolveDir, args.path);
      const top = relative(build, target).split(sep)[0];
      if (FORBIDDEN.includes(top))
        return { errors: [{ text: `a bundled CLI command reaches build/${top} (${args.importer}): add it to UNBUNDLED in scripts/cli-bundle.mjs` }] };
      return undefined;
    });
  },
};

await esbuild.build({
  entryPoints: entries,
  outbase: build,
  outdir: build,
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'cli-chunks/[name]-[hash]',
  sourcemap: 'linked',
  plugins: [externals],
  logLevel: 'warning',
});
console.log(`cli-bundle: ${entries.length} commands bundled (chunks in build/cli-chunks)`);
