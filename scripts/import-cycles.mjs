#!/usr/bin/env node
/**
 * Lint for the import graph of src/ (run by `npm run lint`): fails when modules import each other in
 * a circle. Type-only imports count too: a circle of types is still two modules that cannot be
 * understood, moved or layered apart. `await import()` is lazy (how commands reach the server) and
 * is left out. Prints each circle once, as the files it joins.
 *
 *   node scripts/import-cycles.mjs [dir]    (default: src)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(process.argv[2] ?? 'src');

function files(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The relative modules `file` imports statically, as absolute .ts paths that exist. */
function staticImports(file, known) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const targets = [];
  for (const node of source.statements) {
    let spec;
    if (ts.isImportDeclaration(node)) spec = node.moduleSpecifier;
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier) spec = node.moduleSpecifier;
    if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue;
    const base = path.resolve(path.dirname(file), spec.text);
    const candidates = [
      base.replace(/\.js$/, '.ts'),
      base.replace(/\.js$/, '.tsx'),
      `${base}.ts`,
      path.join(base, 'index.ts'),
    ];
    const hit = candidates.find((c) => known.has(c));
    if (hit) targets.push(hit);
  }
  return targets;
}

const all = files(root);
const known = new Set(all);
const graph = new Map(all.map((f) => [f, staticImports(f, known)]));

// Tarjan's strongly connected components: every component of more than one file (or a file that
// imports itself) is a circle.
let index = 0;
const stack = [];
const on = new Set();
const idx = new Map();
const low = new Map();
const circles = [];
function visit(v) {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  on.add(v);
  for (const w of graph.get(v)) {
    if (!idx.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const comp = [];
    let w;
    do {
      w = stack.pop();
      on.delete(w);
      comp.push(w);
    } while (w !== v);
    if (comp.length > 1 || graph.get(v).includes(v)) circles.push(comp);
  }
}
for (const v of all) if (!idx.has(v)) visit(v);

if (circles.length === 0) {
  console.log(
    `import-cycles: ${all.length} modules under ${path.relative(process.cwd(), root) || '.'}, no circle`,
  );
} else {
  for (const comp of circles) {
    console.error(
      `import circle: ${comp
        .map((f) => path.relative(root, f))
        .sort()
        .join(' <-> ')}`,
    );
  }
  console.error(
    `import-cycles: ${circles.length} circle(s); a module that two others need belongs below both (docs/architecture.md)`,
  );
  process.exit(1);
}
