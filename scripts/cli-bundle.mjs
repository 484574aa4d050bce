// Run by `npm run build` after tsc: the CLI's commands (build/commands/**, but not the ones that
// run a server) are rewritten in place as esbuild bundles that share their
// common code through chunks in build/cli-chunks/. Why: a command's start is mostly module loading,
// which Node 20 does one module at a time in every process; `mq status` loaded ~170 ESM modules
// (zod alone 95, ky 15, csv-stringify 8, ~40 of ours) and 118 CommonJS ones (oclif's), now 30 and
// 13. Measured in bench/README.md (2026-11-27, "CLI start-up: the client commands and oclif bundled").
//
// What a command bundle holds is only our own build/ code and the pure-ESM packages in BUNDLED;
// every other package stays an ordinary import of node_modules (CommonJS packages, and oclif
// through `#oclif-core`, below). The commands that run a server (serve, demo, sim) keep tsc's
// output: the server and its workers find files relative to themselves (the dashboard, worker
// threads), and a server's start is not a command's. So does `migrate` (rarely run, not worth the
// risk). The token commands are bundled with the store (kysely and uuid: ~280 more ES modules
// otherwise); the store's one self-relative lookup, better-sqlite3 for the checkpointer thread,
// resolves from build/ as from build/store/. The build fails if a bundled command reaches the
// server, the workers, a forge driver or the webhook deliverer, rather than shipping a command that
// breaks at run time.
//
// @oclif/core itself (~115 CommonJS modules and its dependencies, ~60 CPU-ms to load) is bundled
// first into one CommonJS file, build/oclif-core.cjs, whose ESM wrapper build/oclif-core.js
// package.json's `imports` names `#oclif-core`. Every file of build/ (tsc's output, bundled or
// not) and bin/run.js import that, so a process holds one oclif; only oclif's own plugins (help,
// autocomplete) still load the package when their commands run. Its optional TypeScript loaders (typescript, ts-node, tsx) stay external:
// they serve oclif's development mode, which build/ never uses.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const build = join(root, 'build');
const esbuild = createRequire(import.meta.url)('esbuild');

/** Pure-ESM packages of the commands' paths, bundled (each would otherwise load as many small modules). */
const BUNDLED = new Set(['zod', 'ky', 'csv-stringify', 'kysely', 'uuid']);
/** Commands left as tsc wrote them (relative to build/commands, without `.js`; a folder covers its commands). */
const UNBUNDLED = ['serve', 'demo', 'sim', 'migrate'];
/** build/ folders a bundled command must never reach (they locate files relative to themselves). */
const FORBIDDEN = ['server', 'workers', 'forge', 'webhooks'];

function commandFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...commandFiles(path));
    else if (entry.isFile() && entry.name.endsWith('.js')) found.push(path);
  }
  return found;
}

/** Every .js file under `dir`. */
function jsFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.js'))
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name));
}

// 1. oclif as one file, and tsc's output pointed at it. The bundle is CommonJS (as oclif is), and
// ESM imports it through a small wrapper that require()s it and names its exports: an ESM `import`
// of a CommonJS file makes Node scan its whole source for export names (~65 CPU-ms for this one).
const OCLIF = '#oclif-core';
const bundle = join(build, 'oclif-core.cjs');
await esbuild.build({
  entryPoints: [createRequire(import.meta.url).resolve('@oclif/core')],
  outfile: bundle,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  external: ['typescript', 'ts-node', 'tsx', 'pnpapi'],
  logLevel: 'warning',
});
const names = Object.keys(createRequire(import.meta.url)(bundle)).filter(
  (name) => name !== 'default' && name !== '__esModule',
);
for (const name of names)
  if (!/^[A-Za-z_$][\w$]*$/.test(name)) throw new Error(`cli-bundle: oclif exports an odd name: ${name}`);
writeFileSync(
  join(build, 'oclif-core.js'),
  [
    '// @oclif/core, bundled into ./oclif-core.cjs by scripts/cli-bundle.mjs; imported as `#oclif-core`.',
    "import { createRequire } from 'node:module';",
    "const oclif = createRequire(import.meta.url)('./oclif-core.cjs');",
    `export const { ${names.join(', ')} } = oclif;`,
    'export default oclif;',
    '',
  ].join('\n'),
);
let pointed = 0;
for (const file of jsFiles(build)) {
  const text = readFileSync(file, 'utf8');
  const next = text.replaceAll(/(from |import\()'@oclif\/core'/g, `$1'${OCLIF}'`);
  if (next !== text) {
    writeFileSync(file, next);
    pointed++;
  }
}
if (pointed === 0) throw new Error('cli-bundle: no file of build/ imports @oclif/core: has tsc run?');

// 2. The client commands.
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
        return {
          errors: [
            {
              text: `a bundled CLI command reaches build/${top} (${args.importer}): add it to UNBUNDLED in scripts/cli-bundle.mjs`,
            },
          ],
        };
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
console.log(
  `cli-bundle: oclif in build/oclif-core.cjs (${pointed} files import it), ${entries.length} commands bundled (chunks in build/cli-chunks)`,
);
