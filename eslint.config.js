import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import regexp from 'eslint-plugin-regexp';

/** What no forge module imports (the forge layer's floor). */
const FORGE_FORBIDS = ['**/server/**', '**/store/**', '**/cli/**', '**/commands/**', '**/action/**', 'fastify', '@fastify/*', '@oclif/*', 'kysely'];

/** The forges' SDKs: loaded only with the driver of the forge picked. */
const SDKS = ['@octokit/*', 'octokit', '@gitbeaker/*'];

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'test/fixtures/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // Regexes run over request input: super-linear backtracking (ReDoS) is an error, and so are
    // regexes that cannot match or that silently misbehave.
    plugins: { regexp },
    rules: {
      'regexp/no-super-linear-backtracking': ['error', { report: 'potential' }],
      'regexp/no-super-linear-move': ['error', { report: 'potential' }],
      'regexp/no-misleading-capturing-group': 'error',
      'regexp/no-dupe-disjunctions': ['error', { report: 'all' }],
      'regexp/no-empty-alternative': 'error',
      'regexp/no-invalid-regexp': 'error',
      'regexp/no-useless-backreference': 'error',
      'regexp/no-potentially-useless-backreference': 'error',
      'regexp/optimal-quantifier-concatenation': 'error',
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Layering (docs/architecture.md): the Action bundles only client + rendering code. What it
    // shares with the CLI (the wait loop, the board, report uploads) lives outside src/cli/.
    files: ['src/action/**/*.ts', 'src/watch/**/*.ts', 'src/upload/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            '@oclif/*',
            'fastify',
            '**/server/**',
            '**/store/**',
            '**/commands/**',
            '**/cli/**',
            'better-sqlite3',
            'kysely',
          ],
        },
      ],
    },
  },
  {
    // The engine is a pure core: no I/O, no clock.
    files: ['src/engine/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['node:*', 'fs', 'child_process', '**/server/**', '**/store/**', '**/forge/**', '**/runner/**'] }],
    },
  },
  // The other floors (docs/architecture.md, "Layers"): each may import only the floors below it.
  // Type-only imports of a higher floor are allowed where noted (a type costs nothing at run time).
  layer('The contract is the law: zod only.', ['src/contract/**/*.ts'], ['**/client/**', '**/engine/**', '**/flaky/**', '**/forge/**', '**/runner/**', '**/store/**', '**/server/**', '**/cli/**', '**/commands/**', '**/action/**', 'fastify', '@oclif/*', 'kysely', 'ky']),
  layer('The client speaks the contract over HTTP.', ['src/client/**/*.ts'], ['**/engine/**', '**/forge/**', '**/runner/**', '**/store/**', '**/server/**', '**/cli/**', '**/commands/**', 'fastify', '@oclif/*', 'kysely']),
  layer('Flaky-test domain: pure where possible, never the server or the store.', ['src/flaky/**/*.ts'], ['**/forge/**', '**/runner/**', '**/store/**', '**/server/**', '**/cli/**', '**/commands/**', 'fastify', '@oclif/*', 'kysely']),
  layer('A forge driver gets what it needs through src/forge/types.ts: never Fastify, the queue service or the store.', ['src/forge/**/*.ts'], FORGE_FORBIDS),
  {
    // A forge's description (flags, settings, start-up lines, web pages) is loaded by every
    // `railyard serve` and every server, whichever forge runs: no SDK, and its folder's modules only
    // as types (the driver is imported when the forge is picked).
    files: ['src/forge/*/description.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: FORGE_FORBIDS, message: 'A forge description is part of the forge layer.' },
            { group: ['./*'], allowTypeImports: true, message: "A description imports its folder's modules as types only: the driver is imported lazily." },
            { group: SDKS, message: 'A description imports no SDK: it is loaded whichever forge runs.' },
          ],
        },
      ],
    },
  },
  layer('The runner runs checks; it knows nothing of the server or the forges (git and the checks config lie below both).', ['src/runner/**/*.ts'], ['**/server/**', '**/store/**', '**/forge/**', '**/cli/**', '**/commands/**', 'fastify', '@oclif/*', 'kysely']),
  layer('Below the forges and the runner: git processes (src/git) and the checks a repository asks for (src/checks), with the contract only.', ['src/git/**/*.ts', 'src/checks/**/*.ts'], ['**/engine/**', '**/flaky/**', '**/forge/**', '**/runner/**', '**/store/**', '**/server/**', '**/cli/**', '**/commands/**', '**/client/**', 'fastify', '@oclif/*', 'kysely']),
  layer('All SQL lives in the store, which serves the server without knowing it.', ['src/store/**/*.ts'], ['**/server/**', '**/forge/**', '**/runner/**', '**/cli/**', '**/commands/**', 'fastify', '@oclif/*']),
  layer('The server knows forges only through the modules at the top of src/forge/ (types, registry) and src/forge/shared/; it never imports the CLI.', ['src/server/**/*.ts'], ['**/cli/**', '**/commands/**', '**/action/**', '@oclif/*', '**/forge/*/**', '!**/forge/shared/**', ...SDKS]),
  layer('CLI rendering and configuration: no server, no store.', ['src/cli/**/*.ts'], ['**/server/**', '**/store/**', '**/forge/**', '**/runner/**', 'fastify', 'kysely'], true),
  layer('Commands import the server and the store lazily (await import), never at start-up; of the forges, only the registry (their descriptions).', ['src/commands/**/*.ts'], ['**/server/**', '**/store/**', '**/forge/**', '!**/forge/registry.js', '**/runner/**', 'fastify', 'kysely', 'better-sqlite3', 'pg', ...SDKS], true),
  layer('The simulator drives the engine in virtual time.', ['src/sim/**/*.ts'], ['node:*', '**/server/**', '**/store/**', '**/forge/**', '**/runner/**', '**/cli/**', 'fastify']),
  layer('The dashboard reads the /v1 API through the contract: never server code.', ['web/src/**/*.ts', 'web/src/**/*.tsx'], ['**/server/**', '**/store/**', '**/forge/**', '**/runner/**', '**/engine/**', '**/cli/**', '**/commands/**', 'fastify', 'zod'], true),
);

/** An ESLint block forbidding `patterns` in `files`; `typesAllowed`: `import type` of them is fine. */
function layer(why, files, patterns, typesAllowed = false) {
  return {
    files,
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: patterns, message: why, ...(typesAllowed ? { allowTypeImports: true } : {}) }] }],
    },
  };
}
