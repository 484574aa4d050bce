import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import regexp from 'eslint-plugin-regexp';

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
      'no-restricted-imports': ['error', { patterns: ['node:*', 'fs', 'child_process', '**/server/**', '**/store/**'] }],
    },
  },
);
