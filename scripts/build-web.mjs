#!/usr/bin/env node
// Builds the web dashboard into build/web: one hashed JS bundle and one hashed CSS file under
// assets/, and index.html pointing at them. Everything the page loads comes from the server
// (no CDN): the page works offline. Run by `npm run build`; prints the sizes (raw and gzipped).
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'build', 'web');
await rm(out, { recursive: true, force: true });
await mkdir(join(out, 'assets'), { recursive: true });

const result = await build({
  entryPoints: [join(root, 'web', 'src', 'main.tsx')],
  bundle: true,
  format: 'esm',
  target: ['chrome110', 'firefox110', 'safari16'],
  minify: true,
  sourcemap: false,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: join(out, 'assets'),
  entryNames: 'app-[hash]',
  assetNames: 'app-[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
  tsconfig: join(root, 'web', 'tsconfig.json'),
});

const files = Object.keys(result.metafile.outputs).map((f) => join(root, f));
const js = files.find((f) => f.endsWith('.js'));
const css = files.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error(`build-web: expected one .js and one .css output, got ${files.join(', ')}`);
const html = (await readFile(join(root, 'web', 'index.html'), 'utf8'))
  .replace('%JS%', `/assets/${basename(js)}`)
  .replace('%CSS%', `/assets/${basename(css)}`);
await writeFile(join(out, 'index.html'), html);

let raw = 0;
let gz = 0;
for (const f of [join(out, 'index.html'), js, css]) {
  const body = await readFile(f);
  raw += body.length;
  gz += gzipSync(body, { level: 9 }).length;
}
console.log(
  `web dashboard: build/web (${(raw / 1024).toFixed(1)} KiB, ${(gz / 1024).toFixed(1)} KiB gzipped)`,
);
